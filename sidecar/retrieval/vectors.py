"""One tier's chunk vectors as one contiguous float32 matrix, updated in place.

Cosine top-k is one matrix-vector product and an ``argpartition``: at 100k
chunks that is a few milliseconds on one core, with no approximate index to
build, tune or keep in sync. Rows are unit length, so the dot product is the
cosine. Removal moves the last row into the hole, so the matrix never has gaps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors


_MIN_CAPACITY = 256


class VectorIndex:
    """Thread-safe: the embedding thread updates it while search threads read it."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix: Vectors = np.empty((_MIN_CAPACITY, dim), dtype=np.float32)
        self._ids = np.empty(_MIN_CAPACITY, dtype=np.int64)
        self._n = 0
        self._row: dict[int, int] = {}  # chunk id -> row
        self._key: dict[int, str] = {}  # chunk id -> content hash its row was made from
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    def keys(self) -> dict[int, str]:
        """Chunk id -> content hash, for every row: what the embedder can skip."""
        with self._lock:
            return dict(self._key)

    def upsert(self, ids: Sequence[int], hashes: Sequence[str], vectors: Vectors) -> None:
        if len(ids) != len(vectors) or len(ids) != len(hashes):
            raise ValueError("ids, hashes and vectors differ in length")
        with self._lock:
            self._reserve(self._n + len(ids))
            for chunk_id, key, vector in zip(ids, hashes, vectors, strict=True):
                row = self._row.get(chunk_id)
                if row is None:
                    row = self._n
                    self._n += 1
                    self._row[chunk_id] = row
                    self._ids[row] = chunk_id
                self._matrix[row] = vector
                self._key[chunk_id] = key

    def remove(self, ids: Iterable[int]) -> None:
        with self._lock:
            for chunk_id in ids:
                row = self._row.pop(chunk_id, None)
                if row is None:
                    continue
                del self._key[chunk_id]
                last = self._n - 1
                if row != last:
                    moved = int(self._ids[last])
                    self._matrix[row] = self._matrix[last]
                    self._ids[row] = moved
                    self._row[moved] = row
                self._n = last

    def top_k(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.int64], Vectors, list[str]]:
        """The ``k`` chunk ids most similar to the unit vector ``query``, best first,
        their cosines, and the content hash each row was made from.

        The hashes are read under the same lock as the scores: chunk ids are reused,
        so a caller must check a hit's current text against the text that was scored.
        """
        with self._lock:
            n = self._n
            if n == 0 or k <= 0:
                return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), []
            scores = self._matrix[:n] @ query
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-scores[top], kind="stable")]
            ids = self._ids[top].copy()
            return ids, scores[top], [self._key[int(i)] for i in ids]

    def _reserve(self, size: int) -> None:
        capacity = len(self._matrix)
        if size <= capacity:
            return
        while capacity < size:
            capacity *= 2
        matrix = np.empty((capacity, self.dim), dtype=np.float32)
        matrix[: self._n] = self._matrix[: self._n]
        ids = np.empty(capacity, dtype=np.int64)
        ids[: self._n] = self._ids[: self._n]
        self._matrix, self._ids = matrix, ids
