"""Top-k BM25 without scoring every matching chunk: the threshold algorithm over
impact-ordered postings.

Each posting holds its term's BM25 contribution before the IDF (its *impact*, with
the document length normalised against the namespace's ``impact_avgdl``), and an
index orders a term's postings by it. A search walks every query term's postings from
the highest impact down, a batch at a time; each chunk met for the first time is
scored exactly (all its query terms, today's statistics: the same number the
exhaustive query in ``pg_search`` gives), and the walk stops once the k-th best score
beats the most any unseen chunk could still reach: the sum over terms of IDF times the
next impact. Impacts computed against an older average length are corrected by a
bound: a contribution grows by at most ``avgdl / impact_avgdl`` (when above 1), so the
answer stays exact and only the walk gets longer as the average drifts (``pg_write``
recomputes them past a limit).

Only what impacts were computed for takes this path: an OR of plain words at the
default column weights. Prefixes, phrases, column filters and other weights are
answered exhaustively.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_schema import K1, TS_CONFIG, B

FIRST_BATCH = 64  # postings per term in the first round; doubled each round after
MAX_BATCH = 8192
SLACK = 1 + 1e-5  # impacts are stored as float4: a bound a little above them

LEXEMES = f"""
SELECT t.idx, l.lexeme, coalesce(d.df, 0)
FROM unnest(%(words)s::text[]) WITH ORDINALITY AS t(word, idx)
     LEFT JOIN LATERAL unnest(to_tsvector('{TS_CONFIG}', t.word)) AS l ON true
     LEFT JOIN terms AS d ON d.namespace = %(ns)s AND d.lexeme = l.lexeme COLLATE "C"
"""
STATS = "SELECT chunks, tokens, impact_avgdl FROM namespace_stats WHERE namespace = %s"
# The next batch of each term's postings, by impact (then id) downwards from a cursor.
WALK = """
SELECT t.lexeme, p.chunk_id, p.impact
FROM unnest(%(lexemes)s::text[], %(impact)s::float4[], %(after)s::bigint[], %(n)s::int[])
     AS t(lexeme, impact, after, n)
CROSS JOIN LATERAL (
    SELECT chunk_id, impact FROM postings
    WHERE namespace = %(ns)s AND lexeme = t.lexeme COLLATE "C"
      AND (impact, chunk_id) < (t.impact, t.after)
    ORDER BY impact DESC, chunk_id DESC LIMIT t.n
) AS p
"""
# Every query term's counts in the given chunks (random access by the primary key,
# chunk first).
PROBE = """
SELECT chunk_id, lexeme, tf_heading, tf_body, tf_context, doc_len FROM postings
WHERE namespace = %(ns)s AND chunk_id = ANY(%(ids)s::bigint[])
  AND lexeme = ANY(%(lexemes)s::text[] COLLATE "C")
ORDER BY chunk_id, lexeme  -- each chunk's terms summed in one order: ties stay exact
"""


def plan(conn: Conn, namespace: str, params: dict[str, Any], weights: tuple[float, ...]) -> Any:
    """The query's lexemes with their multiplicity and IDF, and the length statistics;
    None where this path cannot answer (a prefix, other weights, a word that is several
    lexemes, impacts never computed)."""
    if any(params["prefix"]) or any(
        (a, b, c) != weights
        for a, b, c in zip(params["wa"], params["wb"], params["wc"], strict=True)
    ):
        return None
    rows = conn.execute(LEXEMES, {"words": params["words"], "ns": namespace}).fetchall()
    if len({idx for idx, _, _ in rows}) != len(rows):
        return None
    stats = conn.execute(STATS, (namespace,)).fetchone()
    if stats is None or stats[0] == 0:
        return [], {}, 0.0, 1.0
    total, tokens, a0 = stats
    if a0 is None or not a0 > 0:  # never computed (or not a length): impacts unusable
        return None
    mult = Counter(lex for _, lex, df in rows if lex is not None and df > 0)
    dfs = {lex: df for _, lex, df in rows if lex in mult}
    idf = {lex: max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) * mult[lex]
           for lex, n in dfs.items()}  # fmt: skip
    avgdl = tokens / total
    return sorted(idf), idf, avgdl, max(1.0, avgdl / a0)


def search(
    conn: Conn, namespace: str, params: dict[str, Any], weights: tuple[float, ...], k: int
) -> list[tuple[int, float]] | None:
    """The ``k`` best (chunk id, score), best first, ties by id; None where ``plan`` says
    this path cannot answer."""
    planned = plan(conn, namespace, params, weights)
    if planned is None:
        return None
    lexemes, idf, avgdl, grow = planned
    if not lexemes or k <= 0:
        return []
    wa, wb, wc = weights
    norm = K1 * (1 - B)
    slope = K1 * B / max(avgdl, 1e-9)
    cursor = {lex: (math.inf, 2**63 - 1) for lex in lexemes}  # (impact, id) last read
    scores: dict[int, float] = {}
    batch = max(FIRST_BATCH, k)
    while cursor:
        live = list(cursor)
        walked = conn.execute(WALK, {
            "ns": namespace, "lexemes": live, "impact": [cursor[x][0] for x in live],
            "after": [cursor[x][1] for x in live], "n": [batch] * len(live),
        }).fetchall()  # fmt: skip
        read = Counter(lex for lex, _, _ in walked)
        for lex, chunk_id, impact in walked:
            cursor[lex] = (impact, chunk_id)  # rows come in walk order per term
        for lex in live:
            if read[lex] < batch:
                del cursor[lex]  # this term's postings are all read
        fresh = list({c for _, c, _ in walked if c not in scores})
        if fresh:
            for c in fresh:
                scores[c] = 0.0
            probe = {"ns": namespace, "lexemes": lexemes, "ids": fresh}
            for chunk_id, lex, th, tb, tc, dl in conn.execute(PROBE, probe):
                f = wa * th + wb * tb + wc * tc
                if f > 0:
                    scores[chunk_id] += idf[lex] * f * (K1 + 1) / (f + norm + slope * dl)
        if len(scores) >= k and cursor:
            kth = sorted(scores.values(), reverse=True)[k - 1]
            bound = sum(idf[x] * cursor[x][0] for x in cursor) * grow * SLACK
            if kth > bound:
                break
        batch = min(batch * 2, MAX_BATCH)
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(c, s) for c, s in best[:k] if s > 0]
