"""The interface every index store implements (``sidecar.stores``: SQLite, PostgreSQL).

Calls are synchronous and coarse: one call is one transaction. The daemon runs
them on worker threads so the event loop never waits on storage.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sidecar.index.chunking import Chunk


@dataclass(frozen=True, slots=True)
class FileState:
    """What the index knows about a file, to decide whether it changed."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True, slots=True)
class IndexedFile:
    path: str  # relative to the tier root, POSIX separators
    state: FileState
    metadata: dict[str, Any]
    chunks: list[Chunk]


def text_key(text: str) -> str:
    """The content hash vectors are stored under."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def metadata_json(metadata: dict[str, Any]) -> str:
    """Front matter as the index stores it."""
    return json.dumps(metadata, default=str, skipkeys=True)


StoredChunk = tuple[int, str, str, str]  # (row id, heading, body, context)


def diff_chunks(
    rows: Sequence[tuple[int, int, int, str, str, str]], chunks: list[Chunk]
) -> tuple[list[Chunk], list[StoredChunk], list[tuple[int, int, int]]]:
    """How a file's stored rows ``(id, start, end, heading, body, context)`` become its new
    chunks, touching as few rows as possible (an append usually changes the last one or
    two, and every delete costs the store a re-tokenization): (chunks to insert, rows to
    delete, moves as (start, end, id)).

    A row still wanted on the same lines is kept; a row whose text is still wanted on
    other lines (text inserted above it) only moves, since no index holds line numbers.
    """
    wanted: dict[tuple[int, int, str, str, str], list[int]] = {}
    for k, c in enumerate(chunks):
        wanted.setdefault((c.start_line, c.end_line, c.heading, c.text, c.context), []).append(k)
    placed = [False] * len(chunks)
    leftover: list[StoredChunk] = []
    for row_id, start, end, heading, body, context in rows:
        same = wanted.get((start, end, heading, body, context))
        if same:
            placed[same.pop()] = True
        else:
            leftover.append((row_id, heading, body, context))
    by_text: dict[tuple[str, str, str], list[int]] = {}
    if leftover:
        for k in range(len(chunks) - 1, -1, -1):  # popped from the end: file order
            if not placed[k]:
                c = chunks[k]
                by_text.setdefault((c.heading, c.text, c.context), []).append(k)
    moved: list[tuple[int, int, int]] = []
    stale: list[StoredChunk] = []
    for row in leftover:
        same = by_text.get(row[1:])
        if same:
            k = same.pop()
            placed[k] = True
            moved.append((chunks[k].start_line, chunks[k].end_line, row[0]))
        else:
            stale.append(row)
    return [c for k, c in enumerate(chunks) if not placed[k]], stale, moved


# A chunk as a store inserts it: (path, start_line, end_line, heading, text, context, key).
ChunkRow = tuple[str, int, int, str, str, str, str]


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A file a parser worker read, parsed and put in the shape a store inserts: a cold
    build's writer thread sets its pace, so it gets rows it can hand to SQLite as they
    are, not one object per chunk to take apart again."""

    path: str
    state: FileState
    metadata: dict[str, Any]
    metadata_text: str  # metadata_json(metadata)
    rows: list[ChunkRow]  # the chunks that have text, in file order, with their text_key

    @property
    def chunks(self) -> list[Chunk]:
        """The chunks, for a store that inserts them one by one."""
        return [Chunk(s, e, h, t, c) for _, s, e, h, t, c, _ in self.rows]


def chunk_rows(path: str, chunks: Iterable[Chunk]) -> list[ChunkRow]:
    """The rows of the chunks that have text (a file with none keeps its files row only)."""
    return [
        (path, c.start_line, c.end_line, c.heading, c.text, c.context, text_key(c.text))
        for c in chunks
        if c.text
    ]


# What a build inserts: files parsed in the daemon's process, or by a parser worker.
BuildFile = IndexedFile | PreparedFile


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    score: float  # higher is better; only comparable within one result list
    key: str = ""  # content hash of ``text``: what its vectors are stored under


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds") if ts else None


@dataclass(frozen=True, slots=True)
class StoreStats:
    total_files: int
    total_chunks: int
    total_bytes: int
    indexed_at: float | None  # unix time of the last change, None if never indexed

    def to_json(self) -> dict[str, Any]:
        return {
            "total_files": self.total_files,
            "total_chunks": self.total_chunks,
            "indexed_at": iso(self.indexed_at),
            "total_size_kb": round(self.total_bytes / 1024, 1),
        }


class QuerySyntaxError(ValueError):
    """The store could not parse the match expression."""


class IndexStore(Protocol):
    def file_states(self) -> dict[str, FileState]: ...

    def file_state(self, path: str) -> FileState | None: ...

    def file_metadata(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The metadata each file's parse produced (``IndexedFile.metadata``), by path."""
        ...

    def replace_file(
        self, item: IndexedFile, confirm: Callable[[], FileState] | None = None
    ) -> None:
        """Replace one file's chunks in one transaction. With ``confirm``, commit only
        once it returns the file's state on disk; if it raises, change nothing."""
        ...

    def touch_file(self, path: str, state: FileState) -> None: ...

    def remove_files(self, paths: Iterable[str]) -> int: ...

    def replace_all(self, items: Iterable[IndexedFile]) -> None:
        """Swap the whole index in one transaction; readers see the old one until it ends."""
        ...

    def add_files(self, items: Iterable[BuildFile]) -> int:
        """Insert a batch of files in one transaction, leaving alone any path the index
        already holds; returns how many were added. A cold build commits batch by batch
        this way, so searches see its progress and a crash keeps what was committed. A
        build ends with ``optimize``: a store may leave tidying to it."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A small value kept with the index (the cold build's in-progress marker)."""
        ...

    def set_meta(self, key: str, value: str | None) -> None:
        """Set (or, with None, delete) a value kept with the index, in one transaction."""
        ...

    def search(self, match: str, limit: int, context_weight: float | None = None) -> list[Hit]:
        """The best ``limit`` chunks for an FTS5 query, BM25 with the heading, body and
        context columns weighted; ``context_weight`` replaces the store's default weight
        of the context column (sparse ranking wants less of it than the hybrid pool)."""
        ...

    def hits(self, chunk_ids: Iterable[int]) -> dict[int, Hit]:
        """The chunks with these ids that still exist (score 0), for dense results."""
        ...

    def chunk_keys(self) -> dict[int, str]:
        """Every chunk's id and content hash: what the vector index must hold."""
        ...

    def chunk_texts(self, chunk_ids: Iterable[int]) -> list[tuple[int, str, str]]:
        """(id, content hash, body) of the chunks that still exist, to embed them."""
        ...

    def get_vectors(self, model_id: str, keys: Iterable[str]) -> dict[str, bytes]:
        """Stored vector blobs by content hash, for one model."""
        ...

    def put_vectors(self, model_id: str, items: Iterable[tuple[str, bytes]]) -> None: ...

    def prune_vectors(self, model_id: str) -> None:
        """Drop vectors of other models and of text no chunk holds any more."""
        ...

    def stats(self) -> StoreStats: ...

    def total_bytes(self) -> int:
        """Size of every indexed file: cheap enough for each write's tier-cap check."""
        ...

    def optimize(self) -> None:
        """Tidy the index for searches: after every build, and after many edits."""
        ...

    def problem(self, exc: BaseException | None = None) -> str | None:
        """Why this index can no longer be used and must be rebuilt (corrupt, not a
        database, its file gone or replaced), or None. ``exc``: an error one of its
        calls raised; without it, only what can be checked cheaply now."""
        ...

    def intact(self) -> bool:
        """After ``problem`` said the index was unusable: is it usable again as it was?
        True for a server that was only unreachable (its rows survived the outage, and a
        reconcile catches them up); False for damage, which only a rebuild repairs.
        Raises while it cannot tell yet (the server still out of reach): starting
        afresh then would drop an index that may well come back whole."""
        ...

    @property
    def generation(self) -> int:
        """How many times ``reset`` has run."""
        ...

    def reset(self) -> None:
        """Drop everything and start empty, in place: the index is derived, the
        markdown refills it. Callers holding this store keep using it."""
        ...

    def close(self) -> None: ...
