"""What the embedders that call a server over HTTP share, whatever the wire format.

The OpenAI-compatible and Ollama adapters differ in their request, reply shape
and hints, but not in how a URL is checked, how texts go out in batches, how an
error body is quoted, or which rows a reply may hold: one copy of each keeps
the two adapters' guarantees the same.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

import numpy as np

from sidecar.retrieval.embedders.base import EmbedderError, EmbedderRefused, normalize

if TYPE_CHECKING:
    from collections.abc import Callable

    from sidecar.retrieval.embedders.base import Vectors

ERROR_BODY_LIMIT = 300  # characters of an error body worth quoting


def server_url(url: str, what: str) -> SplitResult:
    """``url`` split, or an EmbedderError naming ``what`` it was meant to reach."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderError(f"{what} URL {url!r} is not http(s)://host[:port]")
    return parts


def embed_in_batches(
    texts: list[str],
    batch_size: int,
    dim: int,
    embed_batch: Callable[[list[str]], np.ndarray],
    failure: str,
) -> Vectors:
    """One L2-normalised float32 row per text, in order, ``batch_size`` texts a request.

    The embedder contract lets nothing but EmbedderError escape, so any other
    exception becomes one that starts with ``failure``."""
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    try:
        batches = [
            embed_batch(texts[start : start + batch_size])
            for start in range(0, len(texts), batch_size)
        ]
    except EmbedderError:
        raise
    except Exception as exc:
        raise EmbedderError(f"{failure}: {exc!r}") from exc
    return normalize(np.concatenate(batches))


def quoted_body(body: bytes) -> str:
    """The start of an error body a server sent, fit to quote in a message."""
    return body.decode("utf-8", "replace").strip()[:ERROR_BODY_LIMIT] or "(empty body)"


def scaled_rows(rows: list[Any], where: str) -> np.ndarray:
    """``rows`` as float64, each divided by its largest magnitude.

    A non-number or an all-zero row is refused (about these texts: others may
    embed); the scaling keeps each direction while taming magnitudes that
    would overflow float32 when normalised."""
    if not all(_is_number(x) for row in rows for x in row):
        raise EmbedderRefused(f"{where} returned embeddings holding non-numeric values")
    return scaled(np.array(rows, dtype=np.float64), where)


def scaled(vectors: np.ndarray, where: str) -> np.ndarray:
    """``scaled_rows`` for rows already in an array (decoded from base64): NaN and
    infinities are refused here, as JSON's parser refuses them there."""
    if not np.all(np.isfinite(vectors)):
        raise EmbedderRefused(f"{where} returned embeddings holding NaN or infinite values")
    peaks = np.abs(vectors).max(axis=1, keepdims=True)
    if not np.all(peaks > 0):
        raise EmbedderRefused(f"{where} returned an all-zero embedding")
    return vectors / peaks


def _is_number(x: object) -> bool:
    """A finite JSON number (NaN and Infinity parse in Python's json, and bools are ints)."""
    return type(x) in (int, float) and math.isfinite(x)  # type: ignore[arg-type]
