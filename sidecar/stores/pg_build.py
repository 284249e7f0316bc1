"""The PostgreSQL store's bulk writes: a cold build's batches and a whole rebuild.

Both go through ``pg_write.insert_chunks``, which sends a batch of any size by COPY,
read and packed by the sidecar (``pg_bulk``). Each batch is one transaction of the
build (``add_files``), committed without waiting for the WAL to reach the disk: the
index is derived from the markdown, and a batch a server crash loses is one the next
reconcile finds missing and adds again. A rebuild (``replace_all``) writes every batch
in one transaction, so readers see the old index until it commits, and ends with the
merge of the small blocks the batches left (``pg_write.merge``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sidecar.index.store import BuildFile, FileState, IndexedFile, metadata_json
from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_lexemes import Lexicon
from sidecar.stores.pg_write import insert_chunks, merge, reimpact

BATCH = 20_000  # chunks per COPY in a rebuild
# A bulk transaction's settings: see the module's docstring.
BULK = "SET LOCAL synchronous_commit = off"


def upsert_files(
    conn: Conn,
    namespace: str,
    items: Sequence[BuildFile],
    now: float,
    state: FileState | None = None,
) -> None:
    """Record files' states, all in one statement (a build's batch is thousands)."""
    if not items:
        return
    states = [state or i.state for i in items]
    conn.execute(
        "INSERT INTO files (namespace, path, size, mtime_ns, sha256, metadata, indexed_at) "
        "SELECT %s, * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[], "
        "%s::text[], %s::float8[]) ON CONFLICT (namespace, path) DO UPDATE SET "
        "size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, "
        "metadata = excluded.metadata, indexed_at = excluded.indexed_at",
        (
            namespace,
            [i.path for i in items],
            [st.size for st in states],
            [st.mtime_ns for st in states],
            [st.sha256 for st in states],
            [metadata_json(i.metadata) for i in items],
            [now] * len(items),
        ),
    )


def insert_files(
    conn: Conn, namespace: str, lexicon: Lexicon, items: Sequence[BuildFile], now: float
) -> None:
    upsert_files(conn, namespace, items, now)
    files = [(i.path, [c for c in i.chunks if c.text]) for i in items]
    insert_chunks(conn, namespace, files, lexicon)


def add_files(
    conn: Conn, namespace: str, lexicon: Lexicon, batch: Sequence[BuildFile], now: float
) -> int:
    """Insert the files of ``batch`` the namespace does not hold yet (the first of a
    path given twice); return how many."""
    conn.execute(BULK)
    held = {
        p
        for (p,) in conn.execute(
            "SELECT path FROM files WHERE namespace = %s AND path = ANY(%s)",
            (namespace, [i.path for i in batch]),
        )
    }
    fresh: dict[str, BuildFile] = {}
    for item in batch:
        if item.path not in held:
            fresh.setdefault(item.path, item)
    insert_files(conn, namespace, lexicon, list(fresh.values()), now)
    return len(fresh)


def replace_all(
    conn: Conn, namespace: str, lexicon: Lexicon, items: Iterable[IndexedFile], now: float
) -> None:
    """Every file's chunks in place of the namespace's, in the caller's transaction."""
    conn.execute(BULK)
    empty(conn, namespace)
    pending: list[IndexedFile] = []
    size = 0
    for item in items:
        pending.append(item)
        size += len(item.chunks)
        if size >= BATCH:
            insert_files(conn, namespace, lexicon, pending, now)
            pending, size = [], 0
    insert_files(conn, namespace, lexicon, pending, now)
    reimpact(conn, namespace)
    merge(conn, namespace)


def empty(conn: Conn, namespace: str, *more: str) -> None:
    """Delete the namespace's index rows; the next chunks fix its impact average."""
    for table in ("blocks", "dead", "terms", "chunks", "files", *more):
        conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (namespace,))
    conn.execute(
        "UPDATE namespace_stats SET impact_avgdl = NULL WHERE namespace = %s", (namespace,)
    )
