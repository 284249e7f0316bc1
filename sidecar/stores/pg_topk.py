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
PROBE_BATCH = 64  # chunks probed at once, the most promising first
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
SELECT t.lexeme, p.chunk_id, p.impact, p.tf_heading, p.tf_body, p.tf_context, p.doc_len
FROM unnest(%(lexemes)s::text[], %(impact)s::float4[], %(after)s::bigint[], %(n)s::int[])
     AS t(lexeme, impact, after, n)
CROSS JOIN LATERAL (
    SELECT chunk_id, impact, tf_heading, tf_body, tf_context, doc_len FROM postings
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
    this path cannot answer.

    A walked posting gives its chunk's exact share for that term; a chunk met is only
    probed for its other terms while the most it could score (what is known plus, per
    term not met, IDF times that term's next impact) still reaches the k-th exact
    score, best candidates first: most chunks met are never probed."""
    planned = plan(conn, namespace, params, weights)
    if planned is None:
        return None
    lexemes, idf, avgdl, grow = planned
    if not lexemes or k <= 0:
        return []
    wa, wb, wc = weights
    norm = K1 * (1 - B)
    slope = K1 * B / max(avgdl, 1e-9)

    def share(lex: str, th: int, tb: int, tc: int, dl: int) -> float:
        f = wa * th + wb * tb + wc * tc
        return idf[lex] * f * (K1 + 1) / (f + norm + slope * dl) if f > 0 else 0.0

    cursor = {lex: (math.inf, 2**63 - 1) for lex in lexemes}  # (impact, id) last read
    met: dict[int, dict[str, float]] = {}  # chunks met, not scored: their known shares
    scores: dict[int, float] = {}
    out: set[int] = set()  # chunks that cannot reach the top k, met again later
    batch = max(FIRST_BATCH, k)
    probes = max(PROBE_BATCH, 4 * k)
    walk = True
    while True:
        if walk:
            live = list(cursor)
            walked = conn.execute(WALK, {
                "ns": namespace, "lexemes": live, "impact": [cursor[x][0] for x in live],
                "after": [cursor[x][1] for x in live], "n": [batch] * len(live),
            }).fetchall()  # fmt: skip
            read = Counter(row[0] for row in walked)
            for lex, chunk_id, impact, th, tb, tc, dl in walked:
                cursor[lex] = (impact, chunk_id)  # rows come in walk order per term
                if chunk_id not in scores and chunk_id not in out:
                    met.setdefault(chunk_id, {})[lex] = share(lex, th, tb, tc, dl)
            for lex in live:
                if read[lex] < batch:
                    del cursor[lex]  # this term's postings are all read
            batch = min(batch * 2, MAX_BATCH)
        ahead = {x: idf[x] * cursor[x][0] * grow * SLACK for x in cursor}
        for chunk_id, parts in list(met.items()):
            if not any(x not in parts for x in ahead):  # every term met or exhausted
                scores[chunk_id] = _exact(parts)
                del met[chunk_id]
        kth = _kth(scores, k)
        most = sorted(
            ((sum(p.values()) + sum(a for x, a in ahead.items() if x not in p), c)
             for c, p in met.items()), reverse=True,
        )  # fmt: skip
        for _, chunk_id in (m for m in most if m[0] < kth):
            del met[chunk_id]  # can never reach the top k: kth only rises
            out.add(chunk_id)
        probe = [c for m, c in most if m >= kth][:probes]
        if probe:
            probes = min(probes * 2, MAX_BATCH)  # many close candidates: fewer rounds
            parts_of: dict[int, dict[str, float]] = {c: {} for c in probe}
            rows = conn.execute(PROBE, {"ns": namespace, "lexemes": lexemes, "ids": probe})
            for chunk_id, lex, th, tb, tc, dl in rows:
                parts_of[chunk_id][lex] = share(lex, th, tb, tc, dl)
            for chunk_id, parts in parts_of.items():
                scores[chunk_id] = _exact(parts)
                del met[chunk_id]
            kth = _kth(scores, k)
        bound = sum(ahead.values())
        walk = bool(cursor) and not kth > bound
        if not walk and not met:
            break
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(c, s) for c, s in best[:k] if s > 0]


def _exact(parts: dict[str, float]) -> float:
    """A chunk's score, its terms summed in one order (so equal chunks tie exactly)."""
    return sum(parts[x] for x in sorted(parts))


def _kth(scores: dict[int, float], k: int) -> float:
    return sorted(scores.values(), reverse=True)[k - 1] if len(scores) >= k else 0.0
