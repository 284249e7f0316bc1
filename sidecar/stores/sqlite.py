"""The SQLite FTS5 index store: one ``index.sqlite`` per tier.

The index is derived from the markdown, so nothing here is ever migrated: a
schema version mismatch or a corrupt file means "drop it and rebuild"
(``sidecar.index.sqlite.Database``), and the next reconcile scan refills it from disk.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from sidecar.index.chunking import Chunk
from sidecar.index.sqlite import Database, is_query_error, snapshot
from sidecar.index.store import (
    BuildFile,
    ChunkRow,
    FileState,
    Hit,
    IndexedFile,
    PreparedFile,
    QuerySyntaxError,
    StoreStats,
    chunk_rows,
    diff_chunks,
    metadata_json,
)
from sidecar.stores import fts5_topk, sqlite_health
from sidecar.stores import sqlite_schema as schema

_BATCH = 500  # ids per IN (...) list, well under SQLite's variable limit
_BULK_FILES = 500  # files per executemany round of a rebuild
# Phrase counts kept between commits: an index that is only read would otherwise keep
# every word ever asked about. Past this many the counts start again (each costs one
# count(*) to learn afresh).
MAX_PHRASE_COUNTS = 4096


class SQLiteStore:
    """The tier's index in one SQLite file (``Database``: one writer behind a lock, one
    reader per thread). WAL lets readers keep answering from the last committed snapshot
    while the writer replaces a file or rebuilds the whole index in one transaction.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = Database(path, schema.SCHEMA, schema.SCHEMA_VERSION, schema.PROBE)
        if self.db.found is not None:
            schema.resume_merging(self.db.writer)
        self._identity = sqlite_health.identity(path)
        self._header_fd = self._open_header()

    def _open_header(self) -> int:
        """A descriptor on the database file, held for as long as the store uses that file,
        for ``problem`` to read its header. Closing any descriptor of a file drops every
        POSIX lock the process holds on it, SQLite's included: a check that opened and
        closed the file would let another process (``sidecar status -p``) think it is the
        last user, checkpoint and delete the WAL this daemon is still writing."""
        return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)

    # -- health ------------------------------------------------------------

    def problem(self, exc: BaseException | None = None) -> str | None:
        return sqlite_health.problem(self.path, self._identity, self._header_fd, exc)

    @property
    def generation(self) -> int:
        """Bumped by each reset: what was derived from the old index (vectors) is stale."""
        return self.db.generation

    def intact(self) -> bool:
        return False  # a local file is unusable only when damaged, gone or replaced

    def reset(self) -> None:
        self.db.reset(self._reopened)

    def _reopened(self) -> None:
        """The file was replaced by an empty one: ``problem`` watches the new one."""
        self._identity = sqlite_health.identity(self.path)
        old_fd, self._header_fd = self._header_fd, self._open_header()
        if old_fd >= 0:  # the old file is deleted: its locks guard nothing any more
            os.close(old_fd)

    # -- reads -------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        rows = self.db.reader().execute("SELECT path, size, mtime_ns, sha256 FROM files")
        return {p: FileState(s, m, h) for p, s, m, h in rows}

    def file_state(self, path: str) -> FileState | None:
        row = (
            self.db.reader()
            .execute("SELECT size, mtime_ns, sha256 FROM files WHERE path = ?", (path,))
            .fetchone()
        )
        if row is None:
            return None
        size, mtime_ns, sha256 = row
        return FileState(size, mtime_ns, sha256)

    def file_metadata(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self._select_in("SELECT path, metadata FROM files WHERE path IN (%s)", paths)
        return {p: json.loads(m) for p, m in rows}

    def search(self, match: str, limit: int, context_weight: float | None = None) -> list[Hit]:
        # bm25() with literal weights is measurably faster than the configured
        # ``rank`` column, which FTS5 resolves through an extra function lookup.
        context = float(schema.CONTEXT_WEIGHT if context_weight is None else context_weight)
        weights = f"{schema.HEADING_WEIGHT}, {schema.BODY_WEIGHT}, {context}"
        conn = self.db.reader()
        # One snapshot for ranking and reading the chunks: a commit between them could give
        # a ranked id to another chunk (a new one takes one past the largest).
        with snapshot(conn):
            return self._search(conn, match, limit, weights)

    def _search(self, conn: sqlite3.Connection, match: str, limit: int, weights: str) -> list[Hit]:
        try:
            # A large table ranks an OR of words without scoring every chunk it matches.
            answered = fts5_topk.top(
                conn, "chunks_fts", match, weights, limit, counts=lambda: self._counts(conn)
            )
            if answered is not None:
                ranked = answered[1]
            else:
                ranked = conn.execute(
                    f"SELECT rowid, bm25(chunks_fts, {weights}) AS score FROM chunks_fts "
                    "WHERE chunks_fts MATCH ? ORDER BY score, rowid LIMIT ?",
                    (match, limit),
                ).fetchall()
        except sqlite3.OperationalError as exc:
            if not is_query_error(exc):
                raise
            raise QuerySyntaxError(str(exc)) from exc
        found = self.hits(rowid for rowid, _ in ranked)
        return [replace(found[i], score=-score) for i, score in ranked if i in found]

    def _counts(self, conn: sqlite3.Connection) -> dict[str, int]:
        """How many chunks each phrase matches (filled by the top-k search); asked inside
        the search's read transaction, it speaks of the snapshot the search reads."""
        counts: dict[str, int] = self._until_commit(conn, "phrase_counts", dict)
        if len(counts) > MAX_PHRASE_COUNTS:
            counts.clear()
        return counts

    def _until_commit(self, conn: sqlite3.Connection, name: str, make: Callable[[], Any]) -> Any:
        """``make()``'s value, kept per reader until any commit (``PRAGMA data_version``
        tells, whichever connection made it)."""
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        cached = getattr(self.db.local, name, None)
        if cached is None or cached[0] is not conn or cached[1] != version:
            cached = (conn, version, make())
            setattr(self.db.local, name, cached)
        return cached[2]

    def _select_in(self, sql: str, values: Iterable[Any], *params: Any) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` whose ``IN (%s)`` list is ``values``, asked in batches that stay
        under SQLite's variable limit; ``params`` come before the list."""
        wanted = list(dict.fromkeys(values))
        conn = self.db.reader()
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            rows += conn.execute(sql % ",".join("?" * len(part)), [*params, *part])
        return rows

    def hits(self, chunk_ids: Iterable[int]) -> dict[int, Hit]:
        rows = self._select_in(
            "SELECT id, path, start_line, end_line, heading, body, hash FROM chunks "
            "WHERE id IN (%s)",
            chunk_ids,
        )
        return {i: Hit(p, s, e, h, b, 0.0, k) for i, p, s, e, h, b, k in rows}

    def chunk_keys(self) -> dict[int, str]:
        return dict(self.db.reader().execute("SELECT id, hash FROM chunks"))

    def chunk_texts(self, chunk_ids: Iterable[int]) -> list[tuple[int, str, str]]:
        return self._select_in("SELECT id, hash, body FROM chunks WHERE id IN (%s)", chunk_ids)

    def get_vectors(self, model_id: str, keys: Iterable[str]) -> dict[str, bytes]:
        rows = self._select_in(
            "SELECT hash, vec FROM vectors WHERE model_id = ? AND hash IN (%s)", keys, model_id
        )
        return dict(rows)

    def total_bytes(self) -> int:
        return int(
            self.db.reader().execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()[0]
        )

    def stats(self) -> StoreStats:
        """Counted again only after a commit (``PRAGMA data_version`` tells, whichever
        connection made it): the counts scan both tables, a few milliseconds at 10k
        files, and a client polling status during a build asks many times a second."""
        conn = self.db.reader()

        def count() -> StoreStats:
            files, size, indexed_at = conn.execute(
                "SELECT count(*), coalesce(sum(size), 0), max(indexed_at) FROM files"
            ).fetchone()
            (chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
            return StoreStats(files, chunks, size, indexed_at)

        stats: StoreStats = self._until_commit(conn, "stats", count)
        return stats

    # -- writes ------------------------------------------------------------

    @staticmethod
    def _delete_path(conn: sqlite3.Connection, path: str) -> None:
        # External-content FTS5 needs the old values to delete; the chunks
        # table is indexed by path, so this never scans the FTS index.
        conn.execute(
            "INSERT INTO chunks_fts(chunks_fts, rowid, heading, body, context) "
            "SELECT 'delete', id, heading, body, context FROM chunks WHERE path = ?",
            (path,),
        )
        conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        conn.execute("DELETE FROM files WHERE path = ?", (path,))

    @staticmethod
    def _insert_chunks(conn: sqlite3.Connection, path: str, chunks: Iterable[Chunk]) -> None:
        # Ids are assigned here (as SQLite would: one past the largest) so that both
        # tables can be filled with one executemany each.
        rows = chunk_rows(path, chunks)
        if not rows:
            return
        (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
        ids = range(last + 1, last + 1 + len(rows))
        conn.executemany(
            "INSERT INTO chunks(id, path, start_line, end_line, heading, body, context, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(i, *r) for i, r in zip(ids, rows, strict=True)],
        )
        conn.executemany(
            "INSERT INTO chunks_fts(rowid, heading, body, context) VALUES (?, ?, ?, ?)",
            [
                (i, heading, text, context)
                for i, (_, _, _, heading, text, context, _) in zip(ids, rows, strict=True)
            ],
        )

    @staticmethod
    def _upsert_file(
        conn: sqlite3.Connection, item: IndexedFile, now: float, state: FileState | None = None
    ) -> None:
        st = state or item.state
        conn.execute(
            "INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, metadata, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                item.path,
                st.size,
                st.mtime_ns,
                st.sha256,
                metadata_json(item.metadata),
                now,
            ),
        )

    def replace_file(
        self, item: IndexedFile, confirm: Callable[[], FileState] | None = None
    ) -> None:
        """Rewrite only the chunks that changed: an append usually touches the last one or
        two, and every FTS5 delete has to re-tokenize the old text.

        With ``confirm``, the changes are staged and committed only once ``confirm()``
        returns the file's state; if it raises, they are rolled back. A durable write
        stages its index update this way while its own fsync runs, and the new text
        becomes searchable only after the file itself is in place.

        A row whose (start_line, end_line, heading, body, context) is still wanted is kept as
        is; a row whose heading, body and context are still wanted on other lines (text
        inserted above it) only gets its line range updated, since the FTS index holds no
        line numbers. The rest is deleted, and what is left of the new chunks is inserted.
        """
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT id, start_line, end_line, heading, body, context FROM chunks "
                "WHERE path = ?",
                (item.path,),
            ).fetchall()
            fresh, stale, moved = diff_chunks(rows, [c for c in item.chunks if c.text])
            if stale:
                conn.executemany(
                    "INSERT INTO chunks_fts(chunks_fts, rowid, heading, body, context) "
                    "VALUES ('delete', ?, ?, ?, ?)",
                    stale,
                )
                conn.executemany(
                    "DELETE FROM chunks WHERE id = ?", [(row_id,) for row_id, *_ in stale]
                )
            if moved:
                conn.executemany(
                    "UPDATE chunks SET start_line = ?, end_line = ? WHERE id = ?", moved
                )
            self._insert_chunks(conn, item.path, fresh)
            self._upsert_file(conn, item, time.time(), confirm() if confirm else None)

    def touch_file(self, path: str, state: FileState) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                (state.size, state.mtime_ns, path),
            )

    def remove_files(self, paths: Iterable[str]) -> int:
        removed = 0
        with self.db.transaction() as conn:
            for path in paths:
                self._delete_path(conn, path)
                removed += conn.execute("SELECT changes()").fetchone()[0]
        return removed

    def replace_all(self, items: Iterable[IndexedFile]) -> None:
        now = time.time()
        with self._bulk(), self.db.transaction() as conn:
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
            conn.execute("DELETE FROM chunks")
            conn.execute("DELETE FROM files")
            batch: list[BuildFile] = []
            for item in items:
                batch.append(item)
                if len(batch) >= _BULK_FILES:
                    self._insert_files(conn, batch, now)
                    batch = []
            self._insert_files(conn, batch, now)

    def add_files(self, items: Iterable[BuildFile]) -> int:
        """Insert files the index does not hold yet, in one transaction; a path already
        indexed is left as it is (whoever indexed it read the file later). Returns how
        many were added. A cold build commits its batches this way, so searches see
        its progress and a crash loses at most the batch in flight."""
        batch = list(items)
        if not batch:
            return 0
        with self._bulk(), self.db.transaction() as conn:
            # Merging segments as each batch commits would rewrite most of them again and
            # again before the build's closing optimize merges them all once: a fifth of
            # the writer's time at 10k files. A level that reaches 'crisismerge' segments is
            # still merged at once, blocking the build: at FTS5's 16 that came after about
            # 40k files, 3 s of a 50k build, merging what the optimize merges again anyway.
            # At 64 a build of 100k files never waits on one; searches during it read a few
            # dozen segments (see README, "Cold build").
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 0)")
            conn.execute(
                "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('crisismerge', ?)",
                (schema.BUILD_CRISISMERGE,),
            )
            held: set[str] = set()
            wanted = [i.path for i in batch]
            for start in range(0, len(wanted), _BATCH):
                part = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(part))
                rows = conn.execute(f"SELECT path FROM files WHERE path IN ({marks})", part)
                held.update(p for (p,) in rows)
            seen: set[str] = set()
            fresh = []
            for item in batch:
                if item.path not in held and item.path not in seen:
                    seen.add(item.path)
                    fresh.append(item)
            self._insert_files(conn, fresh, time.time())
        return len(fresh)

    @staticmethod
    def _insert_files(conn: sqlite3.Connection, items: list[BuildFile], now: float) -> None:
        """Many new files with one executemany per table: per-row statements dominate a
        build otherwise. A parser worker's rows go to SQLite as they came, so the writer
        runs no Python per chunk. The paths must not be in the index."""
        if not items:
            return
        (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
        files = []
        rows: list[Iterable[ChunkRow]] = []
        for item in items:
            st = item.state
            if isinstance(item, PreparedFile):
                meta, item_rows = item.metadata_text, item.rows
            else:
                meta, item_rows = metadata_json(item.metadata), chunk_rows(item.path, item.chunks)
            files.append((item.path, st.size, st.mtime_ns, st.sha256, meta, now))
            rows.append(item_rows)
        conn.executemany(
            "INSERT INTO files(path, size, mtime_ns, sha256, metadata, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            files,
        )
        conn.executemany(  # ids follow on from ``last``: the table only ever grows here
            "INSERT INTO chunks(path, start_line, end_line, heading, body, context, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            itertools.chain.from_iterable(rows),
        )
        # One statement tokenizes them all: executemany would take the GIL back after every
        # row, and wait for it whenever another thread (the event loop answering a status
        # poll, say) holds it; this holds it for none of the build's longest step.
        conn.execute(
            "INSERT INTO chunks_fts(rowid, heading, body, context) "
            "SELECT id, heading, body, context FROM chunks WHERE id > ?",
            (last,),
        )

    @contextmanager
    def _bulk(self) -> Iterator[None]:
        """No fsync while a build writes: the index is derived, and a torn one is detected
        and rebuilt; a process crash loses nothing committed either way."""
        with self.db.write_lock:
            self.db.writer.execute("PRAGMA synchronous = OFF")
        try:
            yield
        finally:
            with self.db.write_lock:
                self.db.writer.execute("PRAGMA synchronous = NORMAL")

    def get_meta(self, key: str) -> str | None:
        row = self.db.reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        with self.db.transaction() as conn:
            if value is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def put_vectors(self, model_id: str, items: Iterable[tuple[str, bytes]]) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors(model_id, hash, vec) VALUES (?, ?, ?)",
                [(model_id, key, blob) for key, blob in items],
            )

    def prune_vectors(self, model_id: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM vectors WHERE model_id != ? OR hash NOT IN (SELECT hash FROM chunks)",
                (model_id,),
            )

    def optimize(self) -> None:
        """Merge every segment into one, and merge as writes go again (a build pauses it)."""
        with self.db.transaction() as conn:
            schema.merge_as_usual(conn)
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")

    def close(self) -> None:
        self.db.close()
        if self._header_fd >= 0:  # last: SQLite's own descriptors are closed by now
            os.close(self._header_fd)
            self._header_fd = -1
