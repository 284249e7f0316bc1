"""The interface every embedder implements (in-process ONNX, Ollama), and its errors.

Calls are synchronous and batch-sized: the daemon runs them on its embedding
thread so inference or a slow model server never stalls the event loop. numpy is
imported only where vectors are made, so a sparse-only daemon never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]


# The most texts one request to a lead's /v1/embeddings may hold: here, where no numpy is
# imported, because the lead's crew port checks it in every daemon, sparse-only ones too.
MAX_INPUTS = 256


class EmbedderError(RuntimeError):
    """The embedder could not produce vectors (model missing, server down, bad reply)."""


class EmbedderRefused(EmbedderError):
    """The embedder answered, but with an error or unusable vectors for these texts.

    Unlike a timeout or a lost connection, this may be about the input: if the
    embedder still embeds other text, the caller may set these texts aside.
    """


class EmbedderBusy(EmbedderError):
    """The server is up but asked us to wait (HTTP 429): try again after ``retry_after``
    seconds, searching by words meanwhile, rather than after the usual retry interval."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Embedder(Protocol):
    model_id: str  # names the model *and* anything that changes its vectors
    dim: int

    def embed(self, texts: list[str]) -> Vectors:
        """One L2-normalised float32 row per text, in order; raises EmbedderError."""
        ...

    def close(self) -> None: ...


def normalize(rows: npt.NDArray[np.floating]) -> Vectors:
    """Scale each row to unit length so a dot product is the cosine similarity."""
    import numpy as np

    out = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return out / norms
