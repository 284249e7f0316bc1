"""How the PostgreSQL store writes chunks: a few through arrays, a bulk build by COPY.

A write appends its chunks' postings as rows of ``blocks``, each term's postings
packed by *impact* (``pg_schema.impact_sql``) and bounded by the highest, computed
against the namespace's ``impact_avgdl``: fixed when the namespace's first chunks
arrive (from their own token counts), so blocks written later agree with earlier
ones. Top-k search corrects for the average drifting since (``pg_topk``), and
``reimpact`` recomputes every bound once it has drifted far enough to cost searches
time. A deletion leaves its chunks' postings in their blocks and lists the chunks in
``dead`` (rows are appended, not edited); ``merge``, in the maintenance pass, packs a
term's small blocks together and rewrites the blocks holding dead chunks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sidecar.index.chunking import Chunk
from sidecar.index.store import text_key
from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_schema import BLOCK, BLOCK_COLUMNS, impact_sql, pack_sql
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
    conn.execute("SET LOCAL work_mem = '256MB'")  # a batch's postings sorted in memory
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
    """Recompute the namespace's block bounds against today's average length, if it has
    drifted past ``DRIFT``; return whether it had."""
    row = conn.execute(
        "SELECT impact_avgdl, tokens::float8 / nullif(chunks, 0) FROM namespace_stats "
        "WHERE namespace = %s FOR UPDATE",
        (namespace,),
    ).fetchone()
    if row is None or row[1] is None or not drifted(row[0], row[1]):
        return False
    conn.execute(
        f"UPDATE blocks SET bound = (SELECT max({impact_sql('%(a)s::float8', 'p.')}) FROM "
        "unnest(tf_heading, tf_body, tf_context, doc_len) "
        "AS p(tf_heading, tf_body, tf_context, doc_len)) WHERE namespace = %(ns)s",
        {"a": row[1], "ns": namespace},
    )
    conn.execute(
        "UPDATE namespace_stats SET impact_avgdl = %s WHERE namespace = %s", (row[1], namespace)
    )
    return True


# Chunks deleted: their document frequencies taken back, their postings left in the
# blocks holding them and the chunks listed in ``dead`` with their terms.
DELETE = """
WITH gone AS (
    DELETE FROM chunks WHERE namespace = %(ns)s AND id = ANY(%(ids)s::bigint[])
    RETURNING id, tsv
),
tomb AS (
    INSERT INTO dead (namespace, chunk_id, lexemes)
    SELECT %(ns)s, gone.id, array(SELECT u.lexeme FROM unnest(gone.tsv) AS u)
    FROM gone WHERE length(gone.tsv) > 0
)
UPDATE terms AS t SET df = t.df - d.n
FROM (SELECT u.lexeme, count(*) AS n FROM gone, unnest(gone.tsv) AS u GROUP BY 1) AS d
WHERE t.namespace = %(ns)s AND t.lexeme = d.lexeme COLLATE "C"
"""


def delete_chunks(conn: Conn, namespace: str, ids: list[int]) -> None:
    if ids:
        conn.execute(DELETE, {"ns": namespace, "ids": ids})


# The blocks ``merge`` rewrites: a term's blocks short of ``BLOCK`` where it has more
# than one, and the blocks of a dead chunk's terms that hold a dead chunk.
MERGE = f"""
WITH doomed AS (SELECT coalesce(array_agg(chunk_id), '{{}}') AS ids FROM dead
                WHERE namespace = %(ns)s),
small AS (
    SELECT lexeme FROM blocks WHERE namespace = %(ns)s AND n < {BLOCK}
    GROUP BY lexeme HAVING count(*) > 1
),
old AS (
    DELETE FROM blocks AS b
    WHERE b.namespace = %(ns)s
      AND ((b.n < {BLOCK} AND b.lexeme IN (SELECT lexeme FROM small))
           OR (b.lexeme IN (SELECT DISTINCT unnest(lexemes) FROM dead
                            WHERE namespace = %(ns)s)
               AND b.chunk_ids && (SELECT ids FROM doomed)))
    RETURNING b.lexeme, b.chunk_ids, b.tf_heading, b.tf_body, b.tf_context, b.doc_len
),
live AS (
    SELECT o.lexeme, p.* FROM old AS o
    CROSS JOIN LATERAL unnest(o.chunk_ids, o.tf_heading, o.tf_body, o.tf_context, o.doc_len)
        AS p(chunk_id, tf_heading, tf_body, tf_context, doc_len)
    WHERE NOT EXISTS (SELECT FROM dead WHERE namespace = %(ns)s AND chunk_id = p.chunk_id)
)
INSERT INTO blocks (namespace, {BLOCK_COLUMNS})
SELECT %(ns)s, * FROM ({pack_sql("live", "%(a0)s::float8")}) AS packed ORDER BY 1
"""


def merge(conn: Conn, namespace: str) -> int:
    """Pack each term's small blocks together and drop dead chunks' postings from their
    blocks, then forget the dead; return how many blocks were written."""
    row = conn.execute(
        "SELECT impact_avgdl FROM namespace_stats WHERE namespace = %s", (namespace,)
    ).fetchone()
    if row is None or row[0] is None:
        return 0  # nothing indexed yet
    written = conn.execute(MERGE, {"ns": namespace, "a0": row[0]}).rowcount
    conn.execute("DELETE FROM dead WHERE namespace = %s", (namespace,))
    return written
