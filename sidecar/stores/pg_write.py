"""How the PostgreSQL store writes chunks: a few through arrays, a bulk build by COPY.

Every posting carries its *impact* (``pg_schema.impact_sql``), computed against the
namespace's ``impact_avgdl``: fixed when the namespace's first chunks arrive (from
their own token counts), so postings written later agree with earlier ones. Top-k
search corrects for the average drifting since (``pg_topk``), and ``reimpact``
recomputes every impact once it has drifted far enough to cost searches time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sidecar.index.chunking import Chunk
from sidecar.index.store import text_key
from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_schema import impact_sql
from sidecar.stores.pg_search import (
    COPY_STAGED,
    INSERT_FROM_ARRAYS,
    INSERT_FROM_STAGED,
    STAGE,
    norm,
)

# Above this many chunks a write goes through COPY into a staging table.
COPY_FROM = 200
# Impacts are recomputed once the average chunk length differs by more than this
# factor from the one they were computed against (searches stay exact either way).
DRIFT = 1.25


def _rows(path: str, chunks: Sequence[Chunk]) -> list[tuple[str, ...]]:
    return [
        (
            path,
            c.start_line,
            c.end_line,
            c.heading,
            c.text,
            c.context,
            text_key(c.text),
            norm(c.heading),
            norm(c.text),
            norm(c.context),
        )
        for c in chunks
    ]


def _impact_avgdl(conn: Conn, namespace: str, rows: list[tuple[str, ...]]) -> float:
    """The namespace's impact average, set from these rows' lengths if it has none."""
    guess = sum(len(r[7].split()) + len(r[8].split()) + len(r[9].split()) for r in rows)
    (a0,) = conn.execute(
        "INSERT INTO namespace_stats AS s (namespace, chunks, tokens, impact_avgdl) "
        "VALUES (%s, 0, 0, %s) ON CONFLICT (namespace) DO UPDATE "
        "SET impact_avgdl = coalesce(s.impact_avgdl, excluded.impact_avgdl) "
        "RETURNING impact_avgdl",
        (namespace, max(1.0, guess / max(1, len(rows)))),
    ).fetchone()  # type: ignore[misc]
    return float(a0)


def insert_chunks(conn: Conn, namespace: str, files: Sequence[tuple[str, Sequence[Chunk]]]) -> None:
    """Insert the chunks of several files (in their order) with their postings."""
    rows = [r for path, chunks in files for r in _rows(path, chunks)]
    if not rows:
        return
    a0 = _impact_avgdl(conn, namespace, rows)
    if len(rows) < COPY_FROM:
        cols = [list(col) for col in zip(*rows, strict=True)]
        keys = ("path", "start", "end", "heading", "body", "context", "hash", "hnorm",
                "bnorm", "cnorm")  # fmt: skip
        conn.execute(
            INSERT_FROM_ARRAYS, {"ns": namespace, "a0": a0, **dict(zip(keys, cols, strict=True))}
        )
        return
    conn.execute("SET LOCAL work_mem = '64MB'")  # sorts of a batch stay in memory
    conn.execute(STAGE)
    with conn.cursor() as cur, cur.copy(COPY_STAGED) as copy:
        for k, row in enumerate(rows):
            copy.write_row((k, *row))
    conn.execute(INSERT_FROM_STAGED, {"ns": namespace, "a0": a0})
    conn.execute("TRUNCATE staged")  # the next batch in this transaction starts empty


def drifted(a0: float | None, avgdl: float) -> bool:
    """Whether impacts should be recomputed: drifted past ``DRIFT``, or against no length."""
    if a0 is None or not a0 > 0:
        return avgdl > 0
    return avgdl > 0 and abs(math.log(avgdl / a0)) > math.log(DRIFT)


def reimpact(conn: Conn, namespace: str) -> bool:
    """Recompute the namespace's impacts against today's average length, if it has
    drifted past ``DRIFT``; return whether it had."""
    row = conn.execute(
        "SELECT impact_avgdl, tokens::float8 / nullif(chunks, 0) FROM namespace_stats "
        "WHERE namespace = %s FOR UPDATE",
        (namespace,),
    ).fetchone()
    if row is None or row[1] is None or not drifted(row[0], row[1]):
        return False
    conn.execute(
        f"UPDATE postings SET impact = {impact_sql('%(a)s::float8')} WHERE namespace = %(ns)s",
        {"a": row[1], "ns": namespace},
    )
    conn.execute(
        "UPDATE namespace_stats SET impact_avgdl = %s WHERE namespace = %s", (row[1], namespace)
    )
    return True
