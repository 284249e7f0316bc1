"""A stand-in Ollama server speaking the real ``POST /api/embed`` wire format, and the
OpenAI-compatible ``POST /v1/embeddings`` one (an external embedding server).

It is a real socket server on loopback, so the embedder's HTTP client, timeouts
and error handling are exercised exactly as against Ollama. Vectors come from
hashing words into ``dim`` buckets: deterministic, and texts sharing words
point the same way. They are deliberately not unit length, like nomic's.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MODES = ("ok", "error", "hang", "malformed", "wrong_count", "ragged", "non_numeric", "nan",
         "huge", "shuffled")  # fmt: skip
HANG_CAP = 10.0  # a hung handler gives up on its own so a broken test cannot wedge shutdown


def hashed_vector(text: str, dim: int) -> list[float]:
    """Bag of hashed words with signs; an empty text still gets a non-zero vector."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()) or [""]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dim
        vec[bucket] += 1.5 if digest[4] & 1 else -1.5
    return vec


class OllamaStub:
    """``with OllamaStub() as stub:`` serves on ``stub.url`` until the block ends.

    Set ``mode`` to make ``/api/embed`` misbehave (see ``MODES``); a model not in
    ``models`` gets Ollama's 404. ``requests`` holds each parsed request body.
    """

    def __init__(self, dim: int = 64, models: tuple[str, ...] = ("nomic-embed-text",)) -> None:
        self.dim = dim
        self.models = set(models)
        self.mode = "ok"
        self.error_message = "llama runner process has terminated: exit status 2"
        self.release = threading.Event()  # set it to let a "hang" reply go out
        self.hanging = threading.Event()  # set once a handler has started hanging
        self.requests: list[dict[str, Any]] = []
        # A batch holding this word fails the way Ollama does when a model yields NaN.
        self.refuse_word: str | None = None
        self.api_key: str | None = None  # /v1/embeddings wants this bearer key when set
        self.connections = 0  # TCP connections accepted: kept-alive ones count once
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(  # short poll: shutdown() waits for one poll
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OllamaStub:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def reply(self, body: dict[str, Any]) -> tuple[int, bytes]:
        """Status and body for one well-formed request, honouring ``mode``."""
        model, texts = body["model"], body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        if model not in self.models:
            return _json(404, {"error": f'model "{model}" not found, try pulling it first'})
        if self.mode == "error":
            return _json(500, {"error": self.error_message})
        if self.refuse_word and any(self.refuse_word in t for t in texts):
            return _json(500, {"error": "failed to encode response: json: unsupported value: NaN"})
        if self.mode == "malformed":
            return 200, b'{"model": "' + model.encode() + b'", "embeddings": [[0.1, 0.'
        rows = [hashed_vector(t, self.dim) for t in texts]
        if self.mode == "hang":
            self.hanging.set()
            self.release.wait(HANG_CAP)
        elif self.mode == "wrong_count":
            rows = rows[:-1]
        elif self.mode == "ragged":
            rows[-1] = rows[-1][:-1]
        elif self.mode == "non_numeric":
            rows[0][0] = "0.5"  # type: ignore[call-overload]
        return _json(200, {"model": model, "embeddings": rows, "prompt_eval_count": len(texts)})

    def openai_reply(self, body: dict[str, Any], auth: str | None) -> tuple[int, bytes]:
        """The same vectors in OpenAI's shape (``data`` rows with their ``index``)."""
        if self.api_key and auth != f"Bearer {self.api_key}":
            return _json(401, {"error": {"message": "Incorrect API key provided"}})
        status, payload = self.reply(body)
        if status != 200 or self.mode == "malformed":
            if status == 404 or status == 500:
                message = json.loads(payload)["error"]
                return _json(status, {"error": {"message": message, "type": "server_error"}})
            return status, payload
        rows = json.loads(payload)["embeddings"]
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        if self.mode == "nan":
            data[0]["embedding"][0] = float("nan")  # Python's json writes NaN; JSON has none
        elif self.mode == "huge":
            data[0]["embedding"] = [0.5] * 1_000_000
        elif self.mode == "shuffled":
            data.reverse()
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        return _json(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})


def _json(status: int, obj: dict[str, Any]) -> tuple[int, bytes]:
    return status, json.dumps(obj).encode()


def _handler_for(stub: OllamaStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            with stub._lock:
                stub.connections += 1

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path not in ("/api/embed", "/v1/embeddings"):
                self._send(404, b"404 page not found", "text/plain")
                return
            try:
                body = json.loads(raw)
            except ValueError as exc:
                self._send(*_json(400, {"error": f"invalid JSON: {exc}"}))
                return
            stub.record(body)
            problem = _request_problem(body)
            if problem:
                self._send(*_json(400, {"error": problem}))
                return
            if self.path == "/v1/embeddings":
                self._send(*stub.openai_reply(body, self.headers.get("Authorization")))
            else:
                self._send(*stub.reply(body))

        def _send(self, status: int, payload: bytes, ctype: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (a timeout test); nothing left to tell it

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean

    return Handler


def _request_problem(body: Any) -> str | None:
    """What real Ollama would reject in an embed request, as its error text."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "model is required"
    texts = body.get("input")
    if isinstance(texts, str):
        return None
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return "invalid input type"
    return None
