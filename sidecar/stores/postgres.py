"""PostgreSQL implementation of the index store: many tiers in shared tables.

Memory that outgrows one machine lives in one database: each tier is a
*namespace* (a text key) whose rows lead every primary key and index with it,
so one tier's query never reads another's rows. Calls are synchronous, one
transaction each, on connections from a pool (the daemon runs them on worker
threads, as with SQLite).

Ranking is BM25 computed in SQL from an inverted index (``postings``: one row per
lexeme and chunk with its count in the heading and in the body), with FTS5's
formula and column weights, so a tier scores the same whichever store holds it.
The FTS5 expression the planner produces is parsed by ``fts5``: an OR of words
(what plain-language questions become) is answered from the postings alone;
anything else also has to match the chunk's ``tsvector`` as a ``tsquery``.

The store never fails to open: an unreachable server makes every call raise
``StoreUnavailable`` and ``problem`` say so, which the daemon shows as a degraded
tier and heals (rebuilds from the markdown) once the server answers.
"""

from __future__ import annotations

import array
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from sidecar.index.chunking import Chunk
from sidecar.index.store import (
    BuildFile,
    FileState,
    Hit,
    IndexedFile,
    QuerySyntaxError,
    StoreStats,
    diff_chunks,
    text_key,
)
from sidecar.stores import fts5, sqlite_schema
from sidecar.stores.pg_schema import TS_CONFIG, SchemaTooNew, migrate

log = logging.getLogger(__name__)

# FTS5's bm25() constants.
K1 = 1.2
B = 0.75
_BATCH = 500  # chunks per INSERT statement in a rebuild
FAIL_FAST_S = 1.0  # after a failed connection, calls fail at once for this long
_TOP = chr(0x10FFFF)  # sorts after every lexeme that starts with a given prefix

Conn = psycopg.Connection[tuple[Any, ...]]


# Each column's weight letter in a chunk's tsvector.
_WEIGHT = {"heading": "A", "body": "B", "context": "C"}


class StoreUnavailable(RuntimeError):
    """The PostgreSQL server cannot be reached (or its schema cannot be used)."""


class NotWriter(RuntimeError):
    """Another sidecar holds the namespace's writer lease; this one is its standby.

    Not damage: the index is fine and searches read it. The standby tries the lease
    every second (``take_lease``) and takes it once its holder is gone."""


def _tsquery(node: fts5.Node) -> str | None:
    """The tree as ``to_tsquery`` text; None where it can match nothing."""
    if isinstance(node, fts5.Phrase):
        if not node.words or not node.columns:
            return None
        weight = "" if node.columns == frozenset(fts5.COLUMNS) else "".join(
            _WEIGHT[c] for c in fts5.COLUMNS if c in node.columns
        )  # fmt: skip
        marks = [weight] * len(node.words)
        if node.prefix:
            marks[-1] = "*" + weight
        terms = [f"'{w}'" + (f":{m}" if m else "") for w, m in zip(node.words, marks, strict=True)]
        return "(" + " <-> ".join(terms) + ")"
    if isinstance(node, fts5.Not):
        keep, drop = _tsquery(node.keep), _tsquery(node.drop)
        if keep is None or drop is None:
            return keep
        return f"({keep} & !{drop})"
    parts = [_tsquery(p) for p in node.parts]
    if isinstance(node, fts5.And):
        return None if None in parts else "(" + " & ".join(parts) + ")"  # type: ignore[arg-type]
    kept = [p for p in parts if p is not None]
    return "(" + " | ".join(kept) + ")" if kept else None


def _terms(node: fts5.Node, context_weight: float | None = None) -> dict[str, list[Any]]:
    """The words BM25 scores, each with its prefix flag and column weights (the SQLite
    store's, read when asked: a benchmark may set them)."""
    context = sqlite_schema.CONTEXT_WEIGHT if context_weight is None else context_weight
    weights = {
        "heading": sqlite_schema.HEADING_WEIGHT,
        "body": sqlite_schema.BODY_WEIGHT,
        "context": context,
    }
    out: dict[str, list[Any]] = {"words": [], "prefix": [], "wa": [], "wb": [], "wc": []}
    for phrase in fts5.phrases(node):
        for k, word in enumerate(phrase.words):
            out["words"].append(word)
            out["prefix"].append(phrase.prefix and k == len(phrase.words) - 1)
            for key, column in (("wa", "heading"), ("wb", "body"), ("wc", "context")):
                out[key].append(weights[column] if column in phrase.columns else 0.0)
    return out


# One search: the query's lexemes (stemmed by the same configuration as the text),
# their postings in this namespace, document frequencies, then FTS5's BM25 per chunk.
_SCORE = f"""
WITH q AS (
    SELECT t.idx, l.lexeme COLLATE "C" AS lo,
           (CASE WHEN t.prefix THEN l.lexeme || %(top)s ELSE l.lexeme END) COLLATE "C" AS hi,
           t.wa, t.wb, t.wc
    FROM unnest(%(words)s::text[], %(prefix)s::bool[], %(wa)s::float8[], %(wb)s::float8[],
                %(wc)s::float8[])
         WITH ORDINALITY AS t(word, prefix, wa, wb, wc, idx),
         LATERAL unnest(to_tsvector('{TS_CONFIG}', t.word)) AS l
),
m AS MATERIALIZED (  -- one index range scan per term: never a scan of the table
    SELECT q.idx, p.chunk_id,
           q.wa * p.tf_heading + q.wb * p.tf_body + q.wc * p.tf_context AS f, p.doc_len
    FROM q CROSS JOIN LATERAL (
        SELECT chunk_id, tf_heading, tf_body, tf_context, doc_len FROM postings
        WHERE namespace = %(ns)s AND lexeme >= q.lo AND lexeme <= q.hi
    ) AS p
),
tf AS (  -- n: the term's document frequency, counted over the same groups
    SELECT idx, chunk_id, sum(f) AS f, max(doc_len)::float8 AS dl,
           (count(*) OVER (PARTITION BY idx))::float8 AS n
    FROM m GROUP BY idx, chunk_id
),
st AS (
    SELECT coalesce(max(chunks), 0)::float8 AS total,
           coalesce(max(tokens)::float8 / nullif(max(chunks), 0), 0) AS avgdl
    FROM namespace_stats WHERE namespace = %(ns)s
),
scored AS (
    SELECT tf.chunk_id AS id, sum(
        greatest(ln((st.total - tf.n + 0.5) / (tf.n + 0.5)), 1e-6)
        * tf.f * {K1 + 1} / (tf.f + {K1} * (1 - {B} + {B} * tf.dl / greatest(st.avgdl, 1e-9)))
    ) AS score
    FROM tf CROSS JOIN st
    WHERE tf.f > 0
    GROUP BY tf.chunk_id
)
"""
# An OR of words: the best ids first, then only their rows are read.
_SEARCH_WORDS = (
    _SCORE
    + """
, top AS (SELECT id, score FROM scored ORDER BY score DESC, id LIMIT %(limit)s)
SELECT c.path, c.start_line, c.end_line, c.heading, c.body, s.score, c.hash
FROM top AS s JOIN chunks AS c ON c.namespace = %(ns)s AND c.id = s.id
ORDER BY s.score DESC, c.id
"""
)
# Anything else: candidates must also match the tsquery (phrases, AND, NOT, columns).
_SEARCH_FILTERED = (
    _SCORE
    + f"""
SELECT c.path, c.start_line, c.end_line, c.heading, c.body, s.score, c.hash
FROM scored AS s JOIN chunks AS c ON c.namespace = %(ns)s AND c.id = s.id
WHERE c.tsv @@ to_tsquery('{TS_CONFIG}', %(tsq)s)
ORDER BY s.score DESC, c.id
LIMIT %(limit)s
"""
)

# New chunks, their tsvector and token count, and their postings, in one statement.
_INSERT_CHUNKS = f"""
WITH src AS (
    SELECT s.*,
           setweight(to_tsvector('{TS_CONFIG}', s.hnorm), 'A')
           || setweight(to_tsvector('{TS_CONFIG}', s.bnorm), 'B')
           || setweight(to_tsvector('{TS_CONFIG}', s.cnorm), 'C') AS tsv
    FROM unnest(%(path)s::text[], %(start)s::int[], %(end)s::int[], %(heading)s::text[],
                %(body)s::text[], %(context)s::text[], %(hash)s::text[], %(hnorm)s::text[],
                %(bnorm)s::text[], %(cnorm)s::text[])
         WITH ORDINALITY AS s(path, start_line, end_line, heading, body, context, hash,
                              hnorm, bnorm, cnorm, k)
),
ins AS (
    INSERT INTO chunks (namespace, path, start_line, end_line, heading, body, context, hash,
                        tsv, doc_len)
    SELECT %(ns)s, path, start_line, end_line, heading, body, context, hash, tsv,
           (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(tsv) AS u)
    FROM src ORDER BY k
    RETURNING id, tsv, doc_len
)
INSERT INTO postings (namespace, lexeme, chunk_id, tf_heading, tf_body, tf_context, doc_len)
SELECT %(ns)s, u.lexeme, ins.id,
       cardinality(array_positions(u.weights, 'A')),
       cardinality(array_positions(u.weights, 'B')),
       cardinality(array_positions(u.weights, 'C')),
       ins.doc_len
FROM ins, LATERAL unnest(ins.tsv) AS u
"""


def _norm(text: str) -> str:
    return " ".join(fts5.normalize(text))


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
        self._ready = False
        self._pgvector = False
        self._use_pgvector = use_pgvector
        self._dims: dict[str, int] = {}  # model id -> vector width, once a query told it
        self._hnsw: set[int] = set()  # widths whose HNSW index this process has ensured
        self.last_error: str | None = None
        self._failed_at: float | None = None  # when the last attempt to connect failed
        # With single_writer, only the sidecar holding a session advisory lock on the
        # namespace writes; the lock lives (and dies) with this dedicated connection.
        self._single_writer = single_writer
        # A crew member reads the lead's namespace directly and never writes or migrates.
        self._read_only = read_only
        self._lease: Conn | None = None
        self._spare: Conn | None = None  # a standby's connection, to try the lock again
        self._taken = False  # the lease was taken since take_lease last said so
        self._lease_lock = threading.Lock()
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(connect_timeout))},
            check=ConnectionPool.check_connection,
            timeout=connect_timeout,
            open=False,
            name=f"sidecar-{namespace}",
        )
        self._pool.open(wait=False)
        try:
            self._ensure()
        except StoreUnavailable as exc:
            log.error("PostgreSQL index store unreachable; the tier is degraded until it answers",
                      extra={"namespace": namespace, "error": str(exc)})  # fmt: skip

    # -- connections -------------------------------------------------------

    def _ensure(self) -> None:
        """Connect and migrate, once; until that works, every call says why it cannot."""
        if self._ready:
            return
        self._fail_fast()
        try:
            with self._pool.connection() as conn:
                if self._read_only:
                    conn.execute("SELECT 1")
                else:
                    self._pgvector = migrate(conn) and self._use_pgvector
        except SchemaTooNew as exc:
            self.last_error = str(exc)
            raise StoreUnavailable(str(exc)) from exc
        except (psycopg.Error, PoolTimeout) as exc:
            self._failed(exc)
            raise StoreUnavailable(f"PostgreSQL unreachable: {self.last_error}") from exc
        self._ready = True
        self.last_error = None
        self._failed_at = None

    def _fail_fast(self) -> None:
        """Right after a failed attempt, fail at once instead of waiting out the pool's
        timeout again: a server that is down makes every call wait ``connect_timeout``
        otherwise, start-up included, before the tier can even say it is degraded."""
        failed_at = self._failed_at  # read once: another thread may clear it meanwhile
        if failed_at is not None and time.monotonic() - failed_at < FAIL_FAST_S:
            raise StoreUnavailable(f"PostgreSQL unreachable: {self.last_error}")

    def _failed(self, exc: BaseException) -> None:
        self.last_error = _describe(exc)
        self._failed_at = time.monotonic()

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        """A pooled connection; a failure to get one is StoreUnavailable."""
        self._ensure()
        self._fail_fast()
        try:
            cm = self._pool.connection()
            conn = cm.__enter__()
        except (psycopg.OperationalError, PoolTimeout) as exc:
            self._failed(exc)
            raise StoreUnavailable(f"PostgreSQL unreachable: {self.last_error}") from exc
        self._failed_at = None
        try:
            yield conn
        except BaseException as exc:
            cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        cm.__exit__(None, None, None)

    def _hold_lease(self) -> None:
        """Check this sidecar still holds the namespace's writer lease, or take it now;
        NotWriter while another sidecar holds it."""
        with self._lease_lock:
            if self._lease is not None:
                try:
                    self._lease.execute("SELECT 1")
                    return
                except psycopg.Error:  # the connection, and with it the lock, is gone
                    self._drop_lease()
            # A standby keeps its connection between attempts: trying every second must
            # not cost the server a new backend process each time.
            conn, self._spare = self._spare, None
            try:
                if conn is None or conn.closed:
                    timeout = max(1, round(self.connect_timeout))
                    conn = psycopg.connect(self.url, autocommit=True, connect_timeout=timeout)
                (held,) = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 1))", (self.namespace,)
                ).fetchone()  # type: ignore[misc]
            except psycopg.Error as exc:
                if conn is not None:
                    conn.close()
                raise StoreUnavailable(f"PostgreSQL unreachable: {_describe(exc)}") from exc
            if not held:
                self._spare = conn
                raise NotWriter(
                    f"another sidecar writes namespace {self.namespace!r}; this one is its "
                    "standby and takes over when that one stops"
                )
            self._lease = conn
            self._taken = True
            # Members read this row (replicas too, where pg_locks shows no primary's lock):
            # a namespace no lead ever served is a --namespace typo, not an empty memory.
            with suppress(psycopg.Error):  # tables not created yet: the next write says so
                conn.execute(_MARK_SERVED, (self.namespace,))
            log.warning("writer lease taken", extra={"namespace": self.namespace})

    def _drop_lease(self) -> None:
        for conn in (self._lease, self._spare):
            if conn is not None:
                with suppress(psycopg.Error):
                    conn.close()
        self._lease = self._spare = None

    def take_lease(self) -> bool:
        """Try the writer lease, if this sidecar is a standby: True once after it took
        it (its holder is gone), so the caller catches up on what changed. The
        daemon calls this every second, which makes a takeover a matter of seconds."""
        if self.writer == "standby":
            with suppress(NotWriter, StoreUnavailable):
                self._hold_lease()
        with self._lease_lock:  # taken here, or by a write or health probe since last asked
            taken, self._taken = self._taken, False
        return taken

    @property
    def writer(self) -> str:
        """``lead`` (holds the writer lease), ``standby`` (another sidecar does),
        ``shared`` (no lease: writers of the namespace just take turns), or ``reader``
        (opened read-only: a crew member searching the lead's namespace)."""
        if self._read_only:
            return "reader"
        if not self._single_writer:
            return "shared"
        return "lead" if self._lease is not None else "standby"

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        """One write transaction; writers of this namespace, in any process, take turns."""
        if self._read_only:
            raise NotWriter(f"this sidecar only reads namespace {self.namespace!r}")
        if self._single_writer:
            self._hold_lease()
        with self._write_lock, self._conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self.namespace,))
            yield conn

    def _rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    # -- health ------------------------------------------------------------

    @property
    def vector_backend(self) -> str:
        """Where vectors are kept: ``pgvector`` when the extension is there, else ``bytea``."""
        return "pgvector" if self._pgvector else "bytea"

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
            return f"index store unreachable (PostgreSQL: {_describe(exc)})"
        if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedColumn):
            return f"index tables missing ({_describe(exc)})"
        if exc is not None:
            return None
        try:
            with self._pool.connection(timeout=min(2.0, self.connect_timeout)) as conn:
                conn.execute("SELECT 1 FROM chunks WHERE namespace = %s LIMIT 1", (self.namespace,))
        except (psycopg.Error, PoolTimeout) as err:
            return f"index store unreachable (PostgreSQL: {_describe(err)})"
        if not self._ready:
            return f"index store not ready ({self.last_error})"
        try:
            absent = self._lead_absent() if self._read_only else None
        except (psycopg.Error, PoolTimeout) as err:
            return f"index store unreachable (PostgreSQL: {_describe(err)})"
        if absent:
            return absent
        if self._single_writer:
            # Health probes run every reconcile interval: a standby takes the lease here
            # once its holder is gone, even when no file changes to make it write.
            with suppress(NotWriter, StoreUnavailable):
                self._hold_lease()
        return None

    def _lead_absent(self) -> str | None:
        """What a member reading this namespace should know about its lead: none ever
        served it (the member's --namespace is not the lead's), or none holds its writer
        lease now (``_hold_lease``, a session advisory lock ``pg_locks`` shows; not on a
        read replica, which sees no lock of the primary's)."""
        with self._pool.connection(timeout=min(2.0, self.connect_timeout)) as conn:
            row = conn.execute(_LEAD_STATE, {"ns": self.namespace}).fetchone()
        served, replica, held = row if row else (False, False, False)
        if not served:
            return (
                f"no lead has ever served namespace {self.namespace!r}: this member's "
                "--namespace is not the lead's, or the lead has not started yet; crew "
                "searches find nothing"
            )
        if not held and not replica:
            return (
                f"no lead holds namespace {self.namespace!r}: every lead of the crew is down; "
                "crew searches show what was indexed last"
            )
        return None

    def intact(self) -> bool:
        # StoreUnavailable while still out of reach (from _conn): asked again later
        with self._conn() as conn:
            try:
                conn.execute("SELECT 1 FROM chunks WHERE namespace = %s LIMIT 1", (self.namespace,))
            except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
                return False  # the tables are gone: only a rebuild (which migrates) helps
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {_describe(exc)}") from exc
        return True

    @property
    def generation(self) -> int:
        return self._generation

    def reset(self) -> None:
        """Drop this namespace's rows (and migrate, if the tables are gone)."""
        self._ready = False
        with self._transaction() as conn:
            for table in ("postings", "chunks", "files", "vectors"):
                conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (self.namespace,))
            # that a lead serves the namespace outlives its index (``_lead_absent``)
            conn.execute(
                "DELETE FROM meta WHERE namespace = %s AND key <> 'lead_since'", (self.namespace,)
            )
        self._generation += 1

    # -- reads -------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        rows = self._rows(
            "SELECT path, size, mtime_ns, sha256 FROM files WHERE namespace = %s",
            (self.namespace,),
        )
        return {p: FileState(s, m, h) for p, s, m, h in rows}

    def file_state(self, path: str) -> FileState | None:
        rows = self._rows(
            "SELECT size, mtime_ns, sha256 FROM files WHERE namespace = %s AND path = %s",
            (self.namespace, path),
        )
        return FileState(*rows[0]) if rows else None

    def file_metadata(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self._rows(
            "SELECT path, metadata FROM files WHERE namespace = %s AND path = ANY(%s)",
            (self.namespace, list(paths)),
        )
        return {p: json.loads(m) for p, m in rows}

    def search(self, match: str, limit: int, context_weight: float | None = None) -> list[Hit]:
        tree = fts5.parse(match)
        params: dict[str, Any] = {"ns": self.namespace, "top": _TOP, "limit": limit,
                                  **_terms(tree, context_weight)}  # fmt: skip
        if fts5.is_bag_of_words(tree):
            sql = _SEARCH_WORDS
        else:
            params["tsq"] = _tsquery(tree)
            if params["tsq"] is None:
                return []
            sql = _SEARCH_FILTERED
        if not params["words"]:
            return []
        try:
            rows = self._rows(sql, params)
        except psycopg.errors.SyntaxError as exc:  # a tsquery PostgreSQL still refuses
            raise QuerySyntaxError(str(exc)) from exc
        return [Hit(p, s, e, h, b, float(score), k) for p, s, e, h, b, score, k in rows]

    def hits(self, chunk_ids: Iterable[int]) -> dict[int, Hit]:
        rows = self._rows(
            "SELECT id, path, start_line, end_line, heading, body, hash FROM chunks "
            "WHERE namespace = %s AND id = ANY(%s)",
            (self.namespace, list(chunk_ids)),
        )
        return {i: Hit(p, s, e, h, b, 0.0, k) for i, p, s, e, h, b, k in rows}

    def chunk_keys(self) -> dict[int, str]:
        rows = self._rows("SELECT id, hash FROM chunks WHERE namespace = %s", (self.namespace,))
        return {i: h for i, h in rows}

    def chunk_texts(self, chunk_ids: Iterable[int]) -> list[tuple[int, str, str]]:
        rows = self._rows(
            "SELECT id, hash, body FROM chunks WHERE namespace = %s AND id = ANY(%s) ORDER BY id",
            (self.namespace, list(chunk_ids)),
        )
        return [(i, h, b) for i, h, b in rows]

    def get_vectors(self, model_id: str, keys: Iterable[str]) -> dict[str, bytes]:
        rows = self._rows(
            "SELECT hash, vec FROM vectors WHERE namespace = %s AND model_id = %s "
            "AND hash = ANY(%s)",
            (self.namespace, model_id, list(keys)),
        )
        return {h: bytes(v) for h, v in rows}

    def total_bytes(self) -> int:
        rows = self._rows(
            "SELECT coalesce(sum(size), 0) FROM files WHERE namespace = %s", (self.namespace,)
        )
        return int(rows[0][0])

    def stats(self) -> StoreStats:
        ((files, size, indexed_at, chunks),) = self._rows(
            "SELECT count(*), coalesce(sum(size), 0), max(indexed_at), coalesce("
            " (SELECT chunks FROM namespace_stats WHERE namespace = %(ns)s), 0)"
            " FROM files WHERE namespace = %(ns)s",
            {"ns": self.namespace},
        )
        return StoreStats(int(files), int(chunks), int(size), indexed_at)

    # -- writes ------------------------------------------------------------

    def _insert_chunks(self, conn: Conn, path: str, chunks: Sequence[Chunk]) -> None:
        if not chunks:
            return
        conn.execute(
            _INSERT_CHUNKS,
            {
                "ns": self.namespace,
                "path": [path] * len(chunks),
                "start": [c.start_line for c in chunks],
                "end": [c.end_line for c in chunks],
                "heading": [c.heading for c in chunks],
                "body": [c.text for c in chunks],
                "context": [c.context for c in chunks],
                "hash": [text_key(c.text) for c in chunks],
                "hnorm": [_norm(c.heading) for c in chunks],
                "bnorm": [_norm(c.text) for c in chunks],
                "cnorm": [_norm(c.context) for c in chunks],
            },
        )

    def _delete_chunks(self, conn: Conn, ids: list[int]) -> None:
        if ids:
            conn.execute(
                "DELETE FROM postings WHERE namespace = %s AND chunk_id = ANY(%s)",
                (self.namespace, ids),
            )
            conn.execute(
                "DELETE FROM chunks WHERE namespace = %s AND id = ANY(%s)", (self.namespace, ids)
            )

    def _upsert_file(
        self, conn: Conn, item: BuildFile, now: float, state: FileState | None = None
    ) -> None:
        st = state or item.state
        conn.execute(
            "INSERT INTO files (namespace, path, size, mtime_ns, sha256, metadata, indexed_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, path) DO UPDATE SET "
            "size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, "
            "metadata = excluded.metadata, indexed_at = excluded.indexed_at",
            (
                self.namespace,
                item.path,
                st.size,
                st.mtime_ns,
                st.sha256,
                json.dumps(item.metadata, default=str, skipkeys=True),
                now,
            ),
        )

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
            self._delete_chunks(conn, [row[0] for row in stale])
            if moved:
                with conn.cursor() as cur:
                    cur.executemany(
                        "UPDATE chunks SET start_line = %s, end_line = %s "
                        "WHERE namespace = %s AND id = %s",
                        [(s, e, self.namespace, i) for s, e, i in moved],
                    )
            self._insert_chunks(conn, item.path, fresh)
            self._upsert_file(conn, item, time.time(), confirm() if confirm else None)

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
            self._delete_chunks(conn, ids)
            cur = conn.execute(
                "DELETE FROM files WHERE namespace = %s AND path = ANY(%s)",
                (self.namespace, wanted),
            )
            return cur.rowcount

    def replace_all(self, items: Iterable[IndexedFile]) -> None:
        now = time.time()
        with self._transaction() as conn:
            for table in ("postings", "chunks", "files"):
                conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (self.namespace,))
            for item in items:
                self._upsert_file(conn, item, now)
                chunks = [c for c in item.chunks if c.text]
                for start in range(0, len(chunks), _BATCH):
                    self._insert_chunks(conn, item.path, chunks[start : start + _BATCH])

    def add_files(self, items: Iterable[BuildFile]) -> int:
        """Insert files the index does not hold yet, in one transaction (a cold build's
        batch); a path already indexed is left as it is. Returns how many were added."""
        batch = list(items)
        if not batch:
            return 0
        now = time.time()
        with self._transaction() as conn:
            held = {
                p
                for (p,) in conn.execute(
                    "SELECT path FROM files WHERE namespace = %s AND path = ANY(%s)",
                    (self.namespace, [i.path for i in batch]),
                )
            }
            fresh: dict[str, BuildFile] = {}
            for item in batch:
                if item.path not in held:
                    fresh.setdefault(item.path, item)
            for item in fresh.values():
                self._upsert_file(conn, item, now)
                self._insert_chunks(conn, item.path, [c for c in item.chunks if c.text])
        return len(fresh)

    def get_meta(self, key: str) -> str | None:
        rows = self._rows(
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
        rows = [(self.namespace, model_id, key, blob) for key, blob in items]
        if not rows:
            return
        dims = self._dims.get(model_id) if self._pgvector else None
        with self._transaction() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO vectors (namespace, model_id, hash, vec) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (namespace, model_id, hash) DO UPDATE SET vec = excluded.vec",
                rows,
            )
            if dims is not None:
                self._set_embeddings(cur, model_id, dims, [(k, b) for _, _, k, b in rows])

    def _set_embeddings(
        self, cur: psycopg.Cursor[Any], model_id: str, dims: int, blobs: list[tuple[str, bytes]]
    ) -> None:
        """Each blob's whole-chunk row (its first) as a pgvector value, for the HNSW index."""
        cur.executemany(
            "UPDATE vectors SET dims = %s, embedding = %s::vector "
            "WHERE namespace = %s AND model_id = %s AND hash = %s",
            [(dims, _literal(first_row(b, dims)), self.namespace, model_id, k)
             for k, b in blobs if len(b) >= 4 * dims],
        )  # fmt: skip

    def nearest(self, model_id: str, query: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The ``k`` stored texts whose whole-chunk vector is closest to ``query`` (unit
        length), as (content hash, cosine), best first: by the HNSW index in PostgreSQL
        with pgvector, else scored here from the bytea column."""
        dims = len(query)
        if not self._pgvector:
            return self._nearest_here(model_id, query, k)
        if self._dims.get(model_id) != dims:
            self._prepare_pgvector(model_id, dims)
        sql = (
            f"SELECT hash, 1 - (embedding::vector({dims}) <=> %(q)s::vector({dims})) AS sim "
            "FROM vectors WHERE namespace = %(ns)s AND model_id = %(m)s "
            f"AND dims = {dims} ORDER BY embedding::vector({dims}) <=> %(q)s::vector({dims}) "
            "LIMIT %(k)s"
        )
        params = {"q": _literal(query), "ns": self.namespace, "m": model_id, "k": k}
        with self._conn() as conn, conn.transaction():
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(sql, params).fetchall()
            if len(rows) < k:
                # The index is shared by every namespace and filtered after the scan, which
                # gives up after hnsw.max_scan_tuples of other namespaces' rows: a small
                # namespace beside a big one finds too few. Score its own rows exactly
                # (through the namespace's b-tree index; few rows, or fewer than k).
                conn.execute("SET LOCAL enable_indexscan = off")
                rows = conn.execute(sql, params).fetchall()
        return sorted(((h, float(sim)) for h, sim in rows), key=lambda r: -r[1])

    def _prepare_pgvector(self, model_id: str, dims: int) -> None:
        """Learn the model's width from a query: make sure an HNSW index for that width
        exists, and fill the pgvector column of vectors stored before it was known."""
        if dims not in self._hnsw:
            with self._conn() as conn:
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS vectors_hnsw_{dims} ON vectors "
                    f"USING hnsw ((embedding::vector({dims})) vector_cosine_ops) "
                    f"WHERE dims = {dims}"
                )
            self._hnsw.add(dims)
        self._dims[model_id] = dims
        with self._transaction() as conn, conn.cursor() as cur:
            todo = conn.execute(
                "SELECT hash, vec FROM vectors WHERE namespace = %s AND model_id = %s "
                "AND (dims IS NULL OR dims <> %s)",
                (self.namespace, model_id, dims),
            ).fetchall()
            self._set_embeddings(cur, model_id, dims, [(h, bytes(v)) for h, v in todo])

    def _nearest_here(
        self, model_id: str, query: Sequence[float], k: int
    ) -> list[tuple[str, float]]:
        import numpy as np  # only a store without pgvector scores vectors in process

        rows = self._rows(
            "SELECT hash, vec FROM vectors WHERE namespace = %s AND model_id = %s",
            (self.namespace, model_id),
        )
        dims = len(query)
        rows = [(h, v) for h, v in rows if len(v) >= 4 * dims]
        if not rows:
            return []
        matrix = np.stack([np.frombuffer(bytes(v), np.float32, dims) for _, v in rows])
        sims = matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-sims)[:k]
        return [(rows[i][0], float(sims[i])) for i in order]

    def prune_vectors(self, model_id: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM vectors AS v WHERE v.namespace = %(ns)s AND (v.model_id <> %(m)s "
                "OR NOT EXISTS (SELECT 1 FROM chunks AS c "
                "WHERE c.namespace = %(ns)s AND c.hash = v.hash))",
                {"ns": self.namespace, "m": model_id},
            )

    def optimize(self) -> None:
        """Refresh the planner's statistics and the visibility map (postings grow and shrink
        with every write), so a search's term lookups read the covering index alone."""
        if self._read_only:
            return  # the writer's job
        with self._conn() as conn:
            conn.execute("VACUUM (ANALYZE) postings, chunks")

    def close(self) -> None:
        with self._lease_lock:
            self._drop_lease()
        self._pool.close()


_MARK_SERVED = (
    "INSERT INTO meta (namespace, key, value) VALUES (%s, 'lead_since', now()::text) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value"
)
# (a lead ever served the namespace, this server is a read replica, a lead holds it now);
# a bigint advisory key shows in pg_locks as two halves, with objsubid 1.
_LEAD_STATE = """
    SELECT EXISTS (SELECT 1 FROM meta WHERE namespace = %(ns)s AND key = 'lead_since'),
           pg_is_in_recovery(),
           EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                   AND objsubid = 1 AND database = (SELECT oid FROM pg_database
                                                    WHERE datname = current_database())
                   AND ((classid::bigint << 32) | objid::bigint)
                       = hashtextextended(%(ns)s, 1))
"""


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _literal(vector: Iterable[float]) -> str:
    """A vector in pgvector's text form."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def first_row(blob: bytes, dims: int) -> list[float]:
    """The whole-chunk vector of a stored blob (its first float32 row)."""
    return array.array("f", blob[: 4 * dims]).tolist()
