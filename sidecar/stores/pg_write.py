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

import numpy as np

from sidecar.index.chunking import Chunk
from sidecar.index.store import text_key
from sidecar.stores import pg_bulk
from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_lexemes import Lexicon
from sidecar.stores.pg_pack import COPY_BLOCKS, Postings, decode, encode, pack
from sidecar.stores.pg_schema import BLOCK, impact_sql
from sidecar.stores.pg_search import INSERT_FROM_ARRAYS, norm

# From this many chunks on, a write is read and packed by the sidecar and sent by COPY
# (``pg_bulk``); fewer go in one statement that PostgreSQL reads and packs itself.
COPY_FROM = 200
# Impacts are recomputed once the average chunk length differs by more than this
# factor from the one they were computed against (searches stay exact either way).
DRIFT = 1.25


def insert_chunks(
    conn: Conn, namespace: str, files: Sequence[tuple[str, Sequence[Chunk]]], lexicon: Lexicon
) -> None:
    """Insert the chunks of several files (in their order) with their postings."""
    count = sum(len(chunks) for _, chunks in files)
    if count >= COPY_FROM:
        pg_bulk.insert(conn, namespace, lexicon, files)
        return
    if not count:
        return
    rows = [
        (path, c.start_line, c.end_line, c.heading, c.text, c.context, text_key(c.text),
         norm(c.heading), norm(c.text), norm(c.context))
        for path, chunks in files for c in chunks
    ]  # fmt: skip
    guess = sum(len(r[7].split()) + len(r[8].split()) + len(r[9].split()) for r in rows)
    a0 = pg_bulk.impact_avgdl(conn, namespace, guess / len(rows))
    cols = [list(col) for col in zip(*rows, strict=True)]
    keys = ("path", "start", "end", "heading", "body", "context", "hash", "hnorm", "bnorm",
            "cnorm")  # fmt: skip
    conn.execute(
        INSERT_FROM_ARRAYS, {"ns": namespace, "a0": a0, **dict(zip(keys, cols, strict=True))}
    )


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
        "sidecar_postings(postings) AS p) WHERE namespace = %(ns)s",
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


# The blocks ``merge`` rewrites, taken out: a term's blocks short of ``BLOCK`` where it
# has more than one, and the blocks of a dead chunk's terms that hold a dead chunk.
TAKE = f"""
WITH doomed AS (SELECT coalesce(array_agg(chunk_id), '{{}}') AS ids FROM dead
                WHERE namespace = %(ns)s),
small AS (
    SELECT lexeme FROM blocks WHERE namespace = %(ns)s AND n < {BLOCK}
    GROUP BY lexeme HAVING count(*) > 1
)
DELETE FROM blocks AS b
WHERE b.namespace = %(ns)s
  AND ((b.n < {BLOCK} AND b.lexeme IN (SELECT lexeme FROM small))
       OR (b.lexeme IN (SELECT DISTINCT unnest(lexemes) FROM dead WHERE namespace = %(ns)s)
           AND EXISTS (SELECT FROM doomed, sidecar_postings(b.postings) AS p
                       WHERE p.chunk_id = ANY(doomed.ids))))
RETURNING b.lexeme, b.n, b.postings
"""


def merge(conn: Conn, namespace: str) -> int:
    """Pack each term's small blocks together and drop dead chunks' postings from their
    blocks, then forget the dead; return how many blocks were written. The blocks are
    taken out by PostgreSQL and repacked by the sidecar (``pg_pack``)."""
    row = conn.execute(
        "SELECT impact_avgdl FROM namespace_stats WHERE namespace = %s", (namespace,)
    ).fetchone()
    if row is None or row[0] is None:
        return 0  # nothing indexed yet
    taken = conn.execute(TAKE, {"ns": namespace}, binary=True).fetchall()
    dead = [i for (i,) in conn.execute("DELETE FROM dead WHERE namespace = %s RETURNING "
                                       "chunk_id", (namespace,))]  # fmt: skip
    if not taken:
        return 0
    terms: dict[str, int] = {}
    of_row = [terms.setdefault(r[0], len(terms)) for r in taken]
    names = [t.encode() for t in terms]
    term = np.repeat(np.array(of_row, np.int64), [r[1] for r in taken])
    got = decode([r[2] for r in taken])
    ids, doc_len = got["id"].astype(np.int64), got["dl"].astype(np.int64)
    tf = np.array([got[k].astype(np.int64) for k in ("th", "tb", "tc")])
    live = ~np.isin(ids, np.array(dead, np.int64))
    blocks = pack(Postings(names, term[live], ids[live], tf[:, live], doc_len[live]), row[0])
    with conn.cursor() as cur, cur.copy(COPY_BLOCKS) as copy:
        copy.write(encode(namespace, blocks))
    return len(blocks.bound)
