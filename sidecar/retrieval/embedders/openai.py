"""An embedder speaking the OpenAI-compatible ``POST /v1/embeddings`` wire format.

One protocol serves two uses: an external embedding server shared by a whole
machine (``--embedder openai``), and a crew member borrowing its lead's model
over the crew port (``--embedder lead``), which is why a member needs no model
of its own. Stdlib and synchronous like the Ollama adapter: it runs on the
daemon's embedding threads, each with a kept-alive connection of its own, and
every failure becomes an ``EmbedderError`` that says what to do.
"""

from __future__ import annotations

import base64
import binascii
import functools
import http.client
import json
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from sidecar.retrieval.embedders.base import (
    MAX_INPUTS,
    EmbedderBusy,
    EmbedderError,
    EmbedderRefused,
)
from sidecar.retrieval.embedders.remote import (
    embed_in_batches,
    quoted_body,
    scaled,
    scaled_rows,
    server_url,
)

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors

BATCH_TIMEOUT = 30.0  # an indexing batch: a busy server may take a while
QUERY_TIMEOUT = 0.5  # one text (a search's query, a probe): a search waits for it
DEFAULT_BATCH_SIZE = 64  # texts per request; the lead accepts up to MAX_INPUTS
MAX_DIM = 8192  # wider vectors than any embedding model makes mean a broken reply
_REPLY_BYTES_PER_TEXT = 32 * MAX_DIM  # JSON numbers of the widest vector, generously
# Asked for by default: a float32 in base64 is 5.3 characters where JSON's decimal is about
# 20, and decoding bytes costs a fraction of parsing numbers. A server that ignores it and
# sends numbers is read as well; ``encoding="float"`` asks for numbers.
DEFAULT_ENCODING = "base64"
BUSY_RETRY_S = 1.0  # a 429 without a usable Retry-After


class OpenAIEmbedder:
    """Embeds texts with the model behind an OpenAI-compatible endpoint.

    ``dim`` and, for a lead, the model id are learned from the first reply
    (``probe``). ``lead``: the server is a crew lead, whose reply names its own
    model id; a member's vectors carry that id, so they are the lead's vectors
    and a change of the lead's model re-embeds as any model change does.
    """

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str = "",
        *,
        lead: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = BATCH_TIMEOUT,
        query_timeout: float = QUERY_TIMEOUT,
        encoding: str = DEFAULT_ENCODING,
    ) -> None:
        parts = server_url(url, "embedding server")
        if not 1 <= batch_size <= MAX_INPUTS:
            raise EmbedderError(f"batch_size must be 1 to {MAX_INPUTS}, not {batch_size}")
        self.url = url.rstrip("/")
        self.model = model
        self.lead = lead
        self.dim = 0
        self.served_model = ""  # the model id the server named in its last reply
        self.batch_size = batch_size
        self.timeout = timeout
        self.query_timeout = query_timeout
        self.encoding = encoding
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        path = parts.path.rstrip("/")
        # ``.../v1`` or the bare server address both name the endpoint.
        self._path = path + ("/embeddings" if path.endswith("/v1") else "/v1/embeddings")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()  # one kept-alive connection per calling thread
        self._where = f"the crew lead at {self.url}" if lead else f"the embedding server at {url}"

    @property
    def model_id(self) -> str:
        """A lead's own model id (its vectors and ours are one kind); else the name and
        width, so vectors stored under another width never match."""
        if self.lead:
            return self.served_model
        return f"openai:{self.model}:{self.dim}"

    def probe(self) -> int:
        """Embed one word to prove the server answers; learns ``dim`` (and the lead's id)."""
        self.embed(["probe"])
        return self.dim

    def embed(self, texts: list[str]) -> Vectors:
        """One L2-normalised float32 row per text, in order; raises EmbedderError only.

        A single text is a query or a probe and gets the short timeout: a slow server
        then costs a search little, and the search answers by its words alone."""
        timeout = self.query_timeout if len(texts) == 1 else self.timeout
        return embed_in_batches(
            texts,
            self.batch_size,
            self.dim,
            functools.partial(self._embed_batch, timeout=timeout),
            f"embedding through {self._where} failed",
        )

    def close(self) -> None:
        """Close the calling thread's connection; other threads' close with their thread."""
        self._drop()

    def _embed_batch(self, texts: list[str], timeout: float) -> np.ndarray:
        limit = _REPLY_BYTES_PER_TEXT * len(texts) + 4096
        payload = {"model": self.model, "input": texts, "encoding_format": self.encoding}
        status, body, retry_after = self._post(payload, timeout, limit)
        if status == 429:
            raise EmbedderBusy(f"{self._where} is busy (HTTP 429: {quoted_body(body)}); "
                               f"asked again in {retry_after:g} s", retry_after)  # fmt: skip
        if not 200 <= status < 300:
            raise self._http_error(status, body)
        return self._parse(body, len(texts))

    def _post(
        self, payload: dict[str, Any], timeout: float, limit: int
    ) -> tuple[int, bytes, float]:
        """One request on this thread's kept-alive connection (a query then costs no new
        handshake); a connection the server closed meanwhile is replaced once."""
        data = json.dumps(payload).encode()
        for attempt in (1, 2):
            conn, fresh = self._connection(timeout)
            try:
                conn.request("POST", self._path, data, self._headers)
                resp = conn.getresponse()
                body = resp.read(limit + 1)
            except TimeoutError as exc:
                self._drop()
                raise EmbedderError(f"{self._where} did not answer within {timeout:g}s") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if attempt == 1 and not fresh:
                    continue  # the server closed an idle kept-alive connection
                raise EmbedderError(
                    f"cannot reach {self._where} ({exc.__class__.__name__}: {exc}); is it running?"
                ) from exc
            if len(body) > limit or resp.will_close:
                self._drop()  # unread bytes would corrupt the next answer on it
            if len(body) > limit:
                raise EmbedderError(
                    f"{self._where} sent more than {limit} bytes for {len(payload['input'])} "
                    "texts; is that URL an embedding server?"
                )
            return resp.status, body, _seconds(resp.getheader("Retry-After"))
        raise AssertionError("unreachable")

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, its timeout set for this call; and whether it is new."""
        conn = getattr(self._local, "conn", None)
        fresh = conn is None
        if conn is None:
            conn_type = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = self._local.conn = conn_type(self._host, self._port, timeout=timeout)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, fresh

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _http_error(self, status: int, body: bytes) -> EmbedderError:
        try:
            reply = json.loads(body)
        except ValueError:
            reply = None
        detail = quoted_body(body)
        if isinstance(reply, dict):  # ours: {"error", "detail"}; OpenAI's: {"error": {...}}
            error = reply.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                detail = error["message"]
            elif isinstance(reply.get("detail"), str):
                detail = f"{error}: {reply['detail']}"
        message = f"{self._where} answered HTTP {status}: {detail}"
        if status in (401, 403):
            key = "SIDECAR_CREW_TOKEN" if self.lead else "--embed-api-key-env's variable"
            return EmbedderError(f"{message}; check the key ({key})")
        if status == 400 or status == 422:  # about these texts: others may embed
            return EmbedderRefused(message)
        return EmbedderError(message)

    def _parse(self, body: bytes, count: int) -> np.ndarray:
        where = self._where
        try:
            reply = json.loads(body)
        except ValueError as exc:
            raise EmbedderError(f"{where} sent a reply that is not JSON ({exc})") from exc
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise EmbedderError(f"{where} sent no 'data' list of embeddings")
        if len(data) != count:
            raise EmbedderError(f"{where} returned {len(data)} embeddings for {count} texts")
        # The protocol allows any order: ``index`` says which text each row is for.
        by_index = {d.get("index"): d.get("embedding") for d in data}
        if set(by_index) != set(range(count)):
            raise EmbedderError(f"{where} returned embeddings without indexes 0 to {count - 1}")
        rows = [by_index[i] for i in range(count)]
        if all(isinstance(row, str) for row in rows):  # base64, as asked
            rows = [_floats(row, where) for row in rows]
        dims = {len(row) // 4 if isinstance(row, bytes) else len(row) if isinstance(row, list)
                else -1 for row in rows}  # fmt: skip
        if len(dims) != 1 or not 1 <= min(dims) <= MAX_DIM:
            raise EmbedderError(f"{where} returned embeddings of mixed, empty or huge lengths")
        (dim,) = dims
        served = reply.get("model") if self.lead else self.model
        if self.lead and (not isinstance(served, str) or not served):
            raise EmbedderError(f"{where} did not name its model in the reply")
        if self.dim and (dim != self.dim or served != self.served_model):
            raise EmbedderError(
                f"{where} now embeds with {served} ({dim} dimensions), not "
                f"{self.served_model} ({self.dim}); restart this sidecar to re-embed with it"
            )
        if isinstance(rows[0], bytes):
            vectors = scaled(np.frombuffer(b"".join(rows), "<f4").reshape(count, dim), where)
        else:
            vectors = scaled_rows(rows, where)
        self.dim, self.served_model = dim, served
        return vectors


def _floats(row: str, where: str) -> bytes:
    """One base64 embedding's float32 bytes; ``len`` of the result is then its width once
    divided by 4, which the caller checks by comparing the widths of all rows."""
    try:
        raw = base64.b64decode(row, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EmbedderError(f"{where} sent an embedding that is not base64 ({exc})") from exc
    if len(raw) % 4:
        raise EmbedderError(f"{where} sent a base64 embedding of {len(raw)} bytes, not float32s")
    return raw


def _seconds(header: str | None) -> float:
    """A Retry-After of seconds (the HTTP-date form is not worth a parser here), kept
    between a tenth of a second (never a tight loop of refusals) and five minutes."""
    try:
        return min(max(float(header or ""), 0.1), 300.0)
    except ValueError:
        return BUSY_RETRY_S
