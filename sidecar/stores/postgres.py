"""PostgreSQL implementation of the index store: many tiers in shared tables.

Memory that outgrows one machine lives in one database: each tier is a
*namespace* (a text key) whose rows lead every primary key and index with it,
so one tier's query never reads another's rows. Calls are synchronous, one
transaction each, on connections from a pool (``pg_connect``; the daemon runs them
on worker threads, as with SQLite). Searches are BM25 in SQL (``pg_search``),
vectors live beside the chunks (``pg_vectors``), and of the sidecars sharing a
namespace, one may be made its only writer (``pg_lease``).

The store never fails to open: an unreachable server makes every call raise
``StoreUnavailable`` and ``problem`` say so, which the daemon shows as a degraded
tier and heals (rebuilds from the markdown) once the server answers.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from sidecar.index.store import (
    BuildFile,
    FileState,
    Hit,
    IndexedFile,
    QuerySyntaxError,
    StoreStats,
    diff_chunks,
)
from sidecar.stores import pg_build, pg_topk
from sidecar.stores.pg_connect import Conn, Connections, StoreUnavailable, describe
from sidecar.stores.pg_lease import NotWriter, WriterLease, lead_absent
from sidecar.stores.pg_lexemes import Lexicon
from sidecar.stores.pg_search import search_sql
from sidecar.stores.pg_vectors import Vectors
from sidecar.stores.pg_write import delete_chunks, insert_chunks, merge, reimpact
from sidecar.stores.sqlite_schema import BODY_WEIGHT, CONTEXT_WEIGHT, HEADING_WEIGHT

__all__ = ["NotWriter", "PostgresStore", "StoreUnavailable"]

DEFAULT_WEIGHTS = (HEADING_WEIGHT, BODY_WEIGHT, CONTEXT_WEIGHT)

log = logging.getLogger(__name__)


class PostgresStore:
    """One namespace of the shared tables, through a small connection pool."""

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        connect_timeout: float = 5.0,
        max_connections: int = 4,
        use_pgvector: bool = True,
        single_writer: bool = False,
        read_only: bool = False,
    ) -> None:
        if not namespace:
            raise ValueError("a PostgreSQL store needs a namespace")
        self.url = url
        self.namespace = namespace
        self.connect_timeout = connect_timeout
        self._write_lock = threading.Lock()
        self._generation = 0
        # A crew member reads the lead's namespace directly and never writes or migrates.
        self._read_only = read_only
        self._lease = WriterLease(url, namespace, connect_timeout) if single_writer else None
        self._db = Connections(
            url, namespace, connect_timeout, max_connections, use_pgvector, read_only
        )
        self._vectors = Vectors(self._db, namespace, self._transaction)
        self._lexicon = Lexicon()  # what PostgreSQL makes of each word, for bulk writes
        try:
            self._db.ensure()
        except StoreUnavailable as exc:
            log.error("PostgreSQL index store unreachable; the tier is degraded until it answers",
                      extra={"namespace": namespace, "error": str(exc)})  # fmt: skip

    @property
    def last_error(self) -> str | None:
        return self._db.last_error

    def take_lease(self) -> bool:
        """Try the writer lease, if this sidecar is a standby: True once after it took
        it (its holder is gone), so the caller catches up on what changed. The
        daemon calls this every second, which makes a takeover a matter of seconds."""
        if self._lease is None or self._read_only:
            return False
        return self._lease.take()

    @property
    def writer(self) -> str:
        """``lead`` (holds the writer lease), ``standby`` (another sidecar does),
        ``shared`` (no lease: writers of the namespace just take turns), or ``reader``
        (opened read-only: a crew member searching the lead's namespace)."""
        if self._read_only:
            return "reader"
        if self._lease is None:
            return "shared"
        return "lead" if self._lease.held else "standby"

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        """One write transaction; writers of this namespace, in any process, take turns."""
        if self._read_only:
            raise NotWriter(f"this sidecar only reads namespace {self.namespace!r}")
        if self._lease is not None:
            self._lease.hold()
        with self._write_lock, self._db.conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self.namespace,))
            yield conn

    # -- health ------------------------------------------------------------

    @property
    def vector_backend(self) -> str:
        """Where vectors are kept: ``pgvector`` when the extension is there, else ``bytea``."""
        return "pgvector" if self._db.pgvector else "bytea"

    def info(self) -> dict[str, Any]:
        """What the health endpoint shows about this store (never the password)."""
        info = psycopg.conninfo.conninfo_to_dict(self.url)
        where = f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"
        return {
            "kind": "postgresql",
            "location": where,
            "namespace": self.namespace,
            "vectors": self.vector_backend,
            "writer": self.writer,
        }

    def problem(self, exc: BaseException | None = None) -> str | None:
        if isinstance(exc, StoreUnavailable):
            return f"index store unreachable ({exc})"
        if isinstance(exc, psycopg.OperationalError | PoolTimeout):
            return f"index store unreachable (PostgreSQL: {describe(exc)})"
        if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedColumn):
            return f"index tables missing ({describe(exc)})"
        if exc is not None:
            return None
        try:
            with self._db.probe() as conn:
                conn.execute("SELECT 1 FROM chunks WHERE namespace = %s LIMIT 1", (self.namespace,))
        except (psycopg.Error, PoolTimeout) as err:
            return f"index store unreachable (PostgreSQL: {describe(err)})"
        if not self._db.ready:
            return f"index store not ready ({self._db.last_error})"
        if self._read_only:
            try:
                with self._db.probe() as conn:
                    absent = lead_absent(conn, self.namespace)
            except (psycopg.Error, PoolTimeout) as err:
                return f"index store unreachable (PostgreSQL: {describe(err)})"
            if absent:
                return absent
        if self._lease is not None:
            # Health probes run every reconcile interval: a standby takes the lease here
            # once its holder is gone, even when no file changes to make it write.
            self._lease.try_hold()
        return None

    def intact(self) -> bool:
        # StoreUnavailable while still out of reach (from conn): asked again later
        with self._db.conn() as conn:
            try:
                conn.execute("SELECT 1 FROM chunks WHERE namespace = %s LIMIT 1", (self.namespace,))
            except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
                return False  # the tables are gone: only a rebuild (which migrates) helps
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {describe(exc)}") from exc
        return True

    @property
    def generation(self) -> int:
        return self._generation

    def reset(self) -> None:
        """Drop this namespace's rows (and migrate, if the tables are gone)."""
        self._db.ready = False
        with self._transaction() as conn:
            pg_build.empty(conn, self.namespace, "vectors")
            # that a lead serves the namespace outlives its index (``lead_absent``)
            conn.execute(
                "DELETE FROM meta WHERE namespace = %s AND key <> 'lead_since'", (self.namespace,)
            )
        self._generation += 1

    # -- reads -------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        rows = self._db.rows(
            "SELECT path, size, mtime_ns, sha256 FROM files WHERE namespace = %s",
            (self.namespace,),
        )
        return {p: FileState(s, m, h) for p, s, m, h in rows}

    def file_state(self, path: str) -> FileState | None:
        rows = self._db.rows(
            "SELECT size, mtime_ns, sha256 FROM files WHERE namespace = %s AND path = %s",
            (self.namespace, path),
        )
        if not rows:
            return None
        ((size, mtime_ns, sha256),) = rows
        return FileState(size, mtime_ns, sha256)

    def file_metadata(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self._db.rows(
            "SELECT path, metadata FROM files WHERE namespace = %s AND path = ANY(%s)",
            (self.namespace, list(paths)),
        )
        return {p: json.loads(m) for p, m in rows}

    def search(self, match: str, limit: int, context_weight: float | None = None) -> list[Hit]:
        query = search_sql(match, self.namespace, limit, context_weight)
        if query is None:
            return []
        sql, params = query
        with self._db.conn() as conn, conn.transaction():
            # top-k reads in several statements: all of them see one snapshot
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            if "tsq" not in params:  # an OR of words: top-k, where impacts allow it
                best = pg_topk.search(conn, self.namespace, params, DEFAULT_WEIGHTS, limit)
                if best is not None:
                    return self._ranked(conn, best)
            try:
                rows = conn.execute(sql, params).fetchall()
            except psycopg.errors.SyntaxError as exc:  # a tsquery PostgreSQL still refuses
                raise QuerySyntaxError(str(exc)) from exc
        return [Hit(p, s, e, h, b, float(score), k) for p, s, e, h, b, score, k in rows]

    def _ranked(self, conn: Conn, best: list[tuple[int, float]]) -> list[Hit]:
        rows = conn.execute(
            "SELECT id, path, start_line, end_line, heading, body, hash FROM chunks "
            "WHERE namespace = %s AND id = ANY(%s)",
            (self.namespace, [c for c, _ in best]),
        ).fetchall()
        by_id = {r[0]: r[1:] for r in rows}
        return [Hit(*by_id[c][:5], score, by_id[c][5]) for c, score in best if c in by_id]

    def hits(self, chunk_ids: Iterable[int]) -> dict[int, Hit]:
        rows = self._db.rows(
            "SELECT id, path, start_line, end_line, heading, body, hash FROM chunks "
            "WHERE namespace = %s AND id = ANY(%s)",
            (self.namespace, list(chunk_ids)),
        )
        return {i: Hit(p, s, e, h, b, 0.0, k) for i, p, s, e, h, b, k in rows}

    def chunk_keys(self) -> dict[int, str]:
        rows = self._db.rows("SELECT id, hash FROM chunks WHERE namespace = %s", (self.namespace,))
        return {i: h for i, h in rows}

    def chunk_texts(self, chunk_ids: Iterable[int]) -> list[tuple[int, str, str]]:
        rows = self._db.rows(
            "SELECT id, hash, body FROM chunks WHERE namespace = %s AND id = ANY(%s) ORDER BY id",
            (self.namespace, list(chunk_ids)),
        )
        return [(i, h, b) for i, h, b in rows]

    def get_vectors(self, model_id: str, keys: Iterable[str]) -> dict[str, bytes]:
        return self._vectors.get(model_id, keys)

    def total_bytes(self) -> int:
        rows = self._db.rows(
            "SELECT coalesce(sum(size), 0) FROM files WHERE namespace = %s", (self.namespace,)
        )
        return int(rows[0][0])

    def stats(self) -> StoreStats:
        ((files, size, indexed_at, chunks),) = self._db.rows(
            "SELECT count(*), coalesce(sum(size), 0), max(indexed_at), coalesce("
            " (SELECT chunks FROM namespace_stats WHERE namespace = %(ns)s), 0)"
            " FROM files WHERE namespace = %(ns)s",
            {"ns": self.namespace},
        )
        return StoreStats(int(files), int(chunks), int(size), indexed_at)

    # -- writes ------------------------------------------------------------

    def replace_file(
        self, item: IndexedFile, confirm: Callable[[], FileState] | None = None
    ) -> None:
        """Rewrite only the chunks that changed, as the SQLite store does: unchanged rows
        keep their ids (and so their place in the vector index)."""
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT id, start_line, end_line, heading, body, context FROM chunks "
                "WHERE namespace = %s AND path = %s ORDER BY id",
                (self.namespace, item.path),
            ).fetchall()
            fresh, stale, moved = diff_chunks(rows, [c for c in item.chunks if c.text])
            delete_chunks(conn, self.namespace, [row_id for row_id, *_ in stale])
            if moved:
                with conn.cursor() as cur:
                    cur.executemany(
                        "UPDATE chunks SET start_line = %s, end_line = %s "
                        "WHERE namespace = %s AND id = %s",
                        [(s, e, self.namespace, i) for s, e, i in moved],
                    )
            insert_chunks(conn, self.namespace, [(item.path, fresh)], self._lexicon)
            state = confirm() if confirm else None
            pg_build.upsert_files(conn, self.namespace, [item], time.time(), state)

    def touch_file(self, path: str, state: FileState) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE files SET size = %s, mtime_ns = %s WHERE namespace = %s AND path = %s",
                (state.size, state.mtime_ns, self.namespace, path),
            )

    def remove_files(self, paths: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return 0
        with self._transaction() as conn:
            ids = [
                i
                for (i,) in conn.execute(
                    "SELECT id FROM chunks WHERE namespace = %s AND path = ANY(%s)",
                    (self.namespace, wanted),
                )
            ]
            delete_chunks(conn, self.namespace, ids)
            cur = conn.execute(
                "DELETE FROM files WHERE namespace = %s AND path = ANY(%s)",
                (self.namespace, wanted),
            )
            return cur.rowcount

    def replace_all(self, items: Iterable[IndexedFile]) -> None:
        with self._transaction() as conn:
            pg_build.replace_all(conn, self.namespace, self._lexicon, items, time.time())

    def add_files(self, items: Iterable[BuildFile]) -> int:
        """Insert files the index does not hold yet, in one transaction (a cold build's
        batch); a path already indexed is left as it is. Returns how many were added."""
        batch = list(items)
        if not batch:
            return 0
        with self._transaction() as conn:
            return pg_build.add_files(conn, self.namespace, self._lexicon, batch, time.time())

    def get_meta(self, key: str) -> str | None:
        rows = self._db.rows(
            "SELECT value FROM meta WHERE namespace = %s AND key = %s", (self.namespace, key)
        )
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str | None) -> None:
        with self._transaction() as conn:
            if value is None:
                conn.execute(
                    "DELETE FROM meta WHERE namespace = %s AND key = %s", (self.namespace, key)
                )
            else:
                conn.execute(
                    "INSERT INTO meta (namespace, key, value) VALUES (%s, %s, %s) "
                    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
                    (self.namespace, key, value),
                )

    def put_vectors(self, model_id: str, items: Iterable[tuple[str, bytes]]) -> None:
        self._vectors.put(model_id, items)

    def nearest(self, model_id: str, query: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The ``k`` stored texts whose whole-chunk vector is closest to ``query``, as
        (content hash, cosine), best first (``Vectors.nearest``)."""
        return self._vectors.nearest(model_id, query, k)

    def prune_vectors(self, model_id: str) -> None:
        self._vectors.prune(model_id)

    def optimize(self) -> None:
        """Pack the blocks writes appended and drop deleted chunks' postings (``merge``),
        recompute bounds past the drift limit, and refresh the planner's statistics."""
        if self._read_only:
            return  # the writer's job
        with self._transaction() as conn:
            reimpact(conn, self.namespace)
            merge(conn, self.namespace)
        with self._db.conn() as conn:
            conn.execute("VACUUM (ANALYZE) blocks, dead, chunks, terms")

    def close(self) -> None:
        if self._lease is not None:
            self._lease.close()
        self._db.close()
