"""How the PostgreSQL store searches: an FTS5 expression (parsed by ``fts5``) as SQL.

Ranking is BM25 computed in SQL from an inverted index (``blocks``: each lexeme's
chunks with their counts in the heading, body and context, packed in a ``bytea`` that
``sidecar_postings`` reads; chunks deleted since the last merge listed in ``dead``), with
FTS5's formula and column weights, so a tier scores the same whichever store holds it.
An OR of words (what plain-language questions become) is answered from the postings
alone; anything else also has to match the chunk's ``tsvector`` as a ``tsquery``.
The queries here score every matching chunk: an OR of plain words is answered by
``pg_topk`` instead where impacts allow, with these as its fallback and its reference.
"""

from __future__ import annotations

from typing import Any

from sidecar.stores import fts5, sqlite_schema
from sidecar.stores.pg_schema import BLOCK_COLUMNS, K1, TS_CONFIG, B, pack_sql

TOP = chr(0x10FFFF)  # sorts after every lexeme that starts with a given prefix
# Each column's weight letter in a chunk's tsvector.
WEIGHT_LETTER = {"heading": "A", "body": "B", "context": "C"}


def tsquery(node: fts5.Node) -> str | None:
    """The tree as ``to_tsquery`` text; None where it can match nothing."""
    if isinstance(node, fts5.Phrase):
        if not node.words or not node.columns:
            return None
        weight = "" if node.columns == frozenset(fts5.COLUMNS) else "".join(
            WEIGHT_LETTER[c] for c in fts5.COLUMNS if c in node.columns
        )  # fmt: skip
        marks = [weight] * len(node.words)
        if node.prefix:
            marks[-1] = "*" + weight
        quoted = [f"'{w}'" + (f":{m}" if m else "") for w, m in zip(node.words, marks, strict=True)]
        return "(" + " <-> ".join(quoted) + ")"
    if isinstance(node, fts5.Not):
        keep, drop = tsquery(node.keep), tsquery(node.drop)
        if keep is None or drop is None:
            return keep
        return f"({keep} & !{drop})"
    parts = [tsquery(p) for p in node.parts]
    if isinstance(node, fts5.And):
        return None if None in parts else "(" + " & ".join(parts) + ")"  # type: ignore[arg-type]
    kept = [p for p in parts if p is not None]
    return "(" + " | ".join(kept) + ")" if kept else None


def terms(node: fts5.Node, context_weight: float | None = None) -> dict[str, list[Any]]:
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
SCORE = f"""
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
        SELECT postings FROM blocks
        WHERE namespace = %(ns)s AND lexeme >= q.lo AND lexeme <= q.hi
    ) AS b
    CROSS JOIN LATERAL sidecar_postings(b.postings) AS p
    WHERE NOT EXISTS (SELECT FROM dead WHERE namespace = %(ns)s AND chunk_id = p.chunk_id)
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
SEARCH_WORDS = (
    SCORE
    + """
, top AS (SELECT id, score FROM scored ORDER BY score DESC, id LIMIT %(limit)s)
SELECT c.path, c.start_line, c.end_line, c.heading, c.body, s.score, c.hash
FROM top AS s JOIN chunks AS c ON c.namespace = %(ns)s AND c.id = s.id
ORDER BY s.score DESC, c.id
"""
)
# Anything else: candidates must also match the tsquery (phrases, AND, NOT, columns).
SEARCH_FILTERED = (
    SCORE
    + f"""
SELECT c.path, c.start_line, c.end_line, c.heading, c.body, s.score, c.hash
FROM scored AS s JOIN chunks AS c ON c.namespace = %(ns)s AND c.id = s.id
WHERE c.tsv @@ to_tsquery('{TS_CONFIG}', %(tsq)s)
ORDER BY s.score DESC, c.id
LIMIT %(limit)s
"""
)

# New chunks, their tsvector and token count, their postings packed in blocks (bounded by
# impacts against the namespace's ``impact_avgdl``, passed as ``a0``) and the terms'
# document frequencies, in one statement, from arrays: a few chunks (a bulk write is
# read and packed by the sidecar instead, ``pg_bulk``).
_STAGED_COLUMNS = "path, start_line, end_line, heading, body, context, hash, hnorm, bnorm, cnorm"
FROM_ARRAYS = f"""unnest(%(path)s::text[], %(start)s::int[], %(end)s::int[], %(heading)s::text[],
                %(body)s::text[], %(context)s::text[], %(hash)s::text[], %(hnorm)s::text[],
                %(bnorm)s::text[], %(cnorm)s::text[])
         WITH ORDINALITY AS s({_STAGED_COLUMNS}, k)"""
# Ids are drawn in the rows' order before the insert, so a chunk's postings (and from
# them its token count: every position carries one of the weights A, B, C) come from
# one reading of its tsvector, not a second pass over it per chunk.
INSERT_CHUNKS = f"""
WITH src AS MATERIALIZED (
    SELECT nextval(pg_get_serial_sequence('chunks', 'id')) AS id, s.*
    FROM (SELECT s.*,
                 setweight(to_tsvector('{TS_CONFIG}', s.hnorm), 'A')
                 || setweight(to_tsvector('{TS_CONFIG}', s.bnorm), 'B')
                 || setweight(to_tsvector('{TS_CONFIG}', s.cnorm), 'C') AS tsv
          FROM {{source}} ORDER BY s.k) AS s
),
tf AS MATERIALIZED (
    SELECT u.lexeme, src.id AS chunk_id,
           cardinality(array_positions(u.weights, 'A')) AS tf_heading,
           cardinality(array_positions(u.weights, 'B')) AS tf_body,
           cardinality(array_positions(u.weights, 'C')) AS tf_context
    FROM src, LATERAL unnest(src.tsv) AS u
),
dl AS (
    SELECT chunk_id, sum(tf_heading + tf_body + tf_context)::int AS doc_len
    FROM tf GROUP BY chunk_id
),
ins AS (
    INSERT INTO chunks (namespace, id, path, start_line, end_line, heading, body, context,
                        hash, tsv, doc_len) OVERRIDING SYSTEM VALUE
    SELECT %(ns)s, src.id, path, start_line, end_line, heading, body, context, hash, tsv,
           coalesce(dl.doc_len, 0)
    FROM src LEFT JOIN dl ON dl.chunk_id = src.id ORDER BY src.id
),
posting AS (
    SELECT tf.*, dl.doc_len FROM tf JOIN dl USING (chunk_id)
),
packed AS ({pack_sql("posting", "%(a0)s::float8")}),
blk AS (
    INSERT INTO blocks (namespace, {BLOCK_COLUMNS})
    SELECT %(ns)s, * FROM packed ORDER BY 1  -- the term index's pages met in order
)
INSERT INTO terms AS t (namespace, lexeme, df)
SELECT %(ns)s, lexeme, sum(n) FROM packed GROUP BY lexeme ORDER BY lexeme
ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df
"""
INSERT_FROM_ARRAYS = INSERT_CHUNKS.replace("{source}", FROM_ARRAYS)


def norm(text: str) -> str:
    return " ".join(fts5.normalize(text))


def search_sql(
    match: str, namespace: str, limit: int, context_weight: float | None
) -> tuple[str, dict[str, Any]] | None:
    """The query answering an FTS5 expression and its parameters; None if it can match
    nothing. Raises ``QuerySyntaxError`` for an expression FTS5 would refuse."""
    tree = fts5.parse(match)
    params: dict[str, Any] = {"ns": namespace, "top": TOP, "limit": limit,
                              **terms(tree, context_weight)}  # fmt: skip
    if fts5.is_bag_of_words(tree):
        sql = SEARCH_WORDS
    else:
        params["tsq"] = tsquery(tree)
        if params["tsq"] is None:
            return None
        sql = SEARCH_FILTERED
    if not params["words"]:
        return None
    return sql, params
