"""An embedder backed by a local Ollama server's ``POST /api/embed``.

Synchronous and stdlib-only on purpose: the daemon calls it from its embedding
thread, so blocking I/O is fine there and an HTTP client library would be one
more dependency for a single POST. Every way the server can fail (down, slow,
model not pulled, odd reply) becomes an ``EmbedderError`` that says what to do,
because the caller treats embedding as optional and only logs the message.
"""

from __future__ import annotations

import http.client
import json
from typing import TYPE_CHECKING, Any

from sidecar.retrieval.embedders.base import EmbedderError, EmbedderRefused
from sidecar.retrieval.embedders.remote import (
    embed_in_batches,
    quoted_body,
    scaled_rows,
    server_url,
)

if TYPE_CHECKING:
    import numpy as np

    from sidecar.retrieval.embedders.base import Vectors

DEFAULT_URL = "http://127.0.0.1:11434"
DEFAULT_MODEL = "nomic-embed-text"
DEFAULT_TIMEOUT = 10.0  # per batch request: connect, then each socket read
DEFAULT_BATCH_SIZE = 32


class OllamaEmbedder:
    """Embeds texts with an Ollama model; ``dim`` is 0 until a reply reveals it.

    A new connection per batch keeps the object safe to share between threads
    and immune to a server restart between calls; on loopback the handshake
    costs nothing next to the model's inference.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        model: str = DEFAULT_MODEL,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        parts = server_url(url, "Ollama")
        if batch_size < 1:
            raise EmbedderError(f"batch_size must be at least 1, not {batch_size}")
        self.url = url.rstrip("/")
        self.model = model
        self.dim = 0
        self.timeout = timeout
        self.batch_size = batch_size
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = parts.path.rstrip("/") + "/api/embed"

    @property
    def model_id(self) -> str:
        """The model's name and width: vectors stored under another width never match."""
        return f"ollama:{self.model}:{self.dim}"

    def probe(self) -> int:
        """Embed one word to prove the server and model work; returns the learned ``dim``."""
        self.embed(["probe"])
        return self.dim

    def embed(self, texts: list[str]) -> Vectors:
        """One L2-normalised float32 row per text, in order; raises EmbedderError only."""
        return embed_in_batches(
            texts,
            self.batch_size,
            self.dim,
            self._embed_batch,
            "Ollama embedding failed unexpectedly",
        )

    def close(self) -> None:
        """Nothing to release: connections live only for one request."""

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        status, body = self._post({"model": self.model, "input": texts, "truncate": True})
        if not 200 <= status < 300:
            raise EmbedderRefused(self._http_error(status, body))
        return self._parse(body, len(texts))

    def _post(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        conn_type = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = conn_type(self._host, self._port, timeout=self.timeout)
        try:
            conn.request(
                "POST",
                self._path,
                body=json.dumps(payload).encode(),
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            )
            resp = conn.getresponse()
            return resp.status, resp.read()
        except TimeoutError as exc:
            raise EmbedderError(
                f"Ollama at {self.url} did not answer within {self.timeout:g}s "
                f"(model {self.model!r} may still be loading: check `ollama ps`)"
            ) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise EmbedderError(
                f"cannot reach Ollama at {self.url} ({exc.__class__.__name__}: {exc}); "
                f"is Ollama running there? Start it with `ollama serve`, "
                f"then `ollama pull {self.model}`"
            ) from exc
        finally:
            conn.close()

    def _http_error(self, status: int, body: bytes) -> str:
        try:
            reply = json.loads(body)
        except ValueError:
            reply = None
        if isinstance(reply, dict) and isinstance(reply.get("error"), str):
            detail = reply["error"]
        else:
            detail = quoted_body(body)
        if status == 404 and "not found" in detail:
            hint = f"pull the model with `ollama pull {self.model}`"
        elif status == 404:
            hint = f"is {self.url} an Ollama server new enough to have /api/embed?"
        else:
            hint = "check the Ollama server log"
        return (
            f"Ollama at {self.url} answered HTTP {status} for model {self.model!r}: "
            f"{detail}; {hint}"
        )

    def _parse(self, body: bytes, count: int) -> np.ndarray:
        where = f"Ollama at {self.url} (model {self.model!r})"
        try:
            reply = json.loads(body)
        except ValueError as exc:
            raise EmbedderError(
                f"{where} sent a reply that is not JSON ({exc}); is that URL an Ollama server?"
            ) from exc
        rows = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(rows, list):
            raise EmbedderError(f"{where} sent no 'embeddings' list; is the server up to date?")
        if len(rows) != count:
            raise EmbedderError(f"{where} returned {len(rows)} embeddings for {count} texts")
        dims = {len(row) if isinstance(row, list) else -1 for row in rows}
        if len(dims) != 1 or min(dims) < 1:
            raise EmbedderError(f"{where} returned embeddings of mixed or empty lengths")
        (dim,) = dims
        if self.dim and dim != self.dim:
            raise EmbedderError(
                f"{where} returned {dim}-dimensional vectors, earlier ones had {self.dim}; "
                "did the model behind that name change? Reindex after switching models"
            )
        vectors = scaled_rows(rows, where)
        self.dim = dim
        return vectors
