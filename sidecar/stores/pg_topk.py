"""Top-k BM25 without scoring every matching chunk: the threshold algorithm over
block postings.

A term's postings are packed in ``blocks`` rows of up to ``BLOCK``, each bounded by
its highest *impact* (a posting's BM25 contribution before the IDF, with the document
length normalised against the namespace's ``impact_avgdl``); an index orders a term's
blocks by bound. A search reads every query term's blocks from the highest bound down,
a batch of rows at a time, each row a block of exact shares; a chunk met is scored
exactly (its other terms probed from its tsvector, today's statistics: the same number
the exhaustive query in ``pg_search`` gives), and the walk stops once the k-th best
score beats the most any unseen chunk could still reach: the sum over terms of IDF
times the bound of the last block read. Bounds computed against an older average length
are corrected: a contribution grows by at most ``avgdl / impact_avgdl`` (when above 1),
so the answer stays exact and only the walk gets longer as the average drifts
(``pg_write`` recomputes them past a limit). Chunks deleted since the last merge
(``dead``) are skipped.

Only what impacts were computed for takes this path: an OR of plain words at the
default column weights. Prefixes, phrases, column filters and other weights are
answered exhaustively.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from typing import Any

from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_schema import BLOCK, K1, TS_CONFIG, B

FIRST_BATCH = 1  # blocks per term in the first round; doubled each round after
MAX_BATCH = 64
PROBE_BATCH = 64  # chunks probed at once, the most promising first
MAX_PROBES = 8192
SLACK = 1 + 1e-5  # bounds are stored as float4: a bound a little above them

LEXEMES = f"""
SELECT t.idx, l.lexeme, coalesce(d.df, 0)
FROM unnest(%(words)s::text[]) WITH ORDINALITY AS t(word, idx)
     LEFT JOIN LATERAL unnest(to_tsvector('{TS_CONFIG}', t.word)) AS l ON true
     LEFT JOIN terms AS d ON d.namespace = %(ns)s AND d.lexeme = l.lexeme COLLATE "C"
"""
# The length statistics, and the chunks deleted whose postings blocks still hold.
STATS = """
SELECT chunks, tokens, impact_avgdl,
       (SELECT array_agg(chunk_id) FROM dead WHERE namespace = %(ns)s)
FROM namespace_stats WHERE namespace = %(ns)s
"""
# The next blocks of each term, by bound (then id) downwards from a cursor.
WALK = """
SELECT t.lexeme, b.bound, b.id, b.chunk_ids, b.tf_heading, b.tf_body, b.tf_context, b.doc_len
FROM unnest(%(lexemes)s::text[], %(bound)s::float4[], %(after)s::bigint[], %(n)s::int[])
     AS t(lexeme, bound, after, n)
CROSS JOIN LATERAL (
    SELECT bound, id, chunk_ids, tf_heading, tf_body, tf_context, doc_len FROM blocks
    WHERE namespace = %(ns)s AND lexeme = t.lexeme COLLATE "C"
      AND (bound, id) < (t.bound, t.after)
    ORDER BY bound DESC, id DESC LIMIT t.n
) AS b
"""
# Every query term's counts in the given chunks, from their tsvectors (a chunk's row by
# its primary key: the forward index).
PROBE = """
SELECT c.id, u.lexeme, cardinality(array_positions(u.weights, 'A')),
       cardinality(array_positions(u.weights, 'B')),
       cardinality(array_positions(u.weights, 'C')), c.doc_len
FROM chunks AS c CROSS JOIN LATERAL unnest(c.tsv) AS u
WHERE c.namespace = %(ns)s AND c.id = ANY(%(ids)s::bigint[])
  AND u.lexeme = ANY(%(lexemes)s::text[])
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
    stats = conn.execute(STATS, {"ns": namespace}).fetchone()
    if stats is None or stats[0] == 0:
        return [], {}, 0.0, 1.0, set()
    total, tokens, a0, dead = stats
    if a0 is None or not a0 > 0:  # never computed (or not a length): impacts unusable
        return None
    mult = Counter(lex for _, lex, df in rows if lex is not None and df > 0)
    dfs = {lex: df for _, lex, df in rows if lex in mult}
    idf = {lex: max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) * mult[lex]
           for lex, n in dfs.items()}  # fmt: skip
    avgdl = tokens / total
    return sorted(idf), idf, avgdl, max(1.0, avgdl / a0), set(dead or ())


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
    lexemes, idf, avgdl, grow, dead = planned
    if not lexemes or k <= 0:
        return []
    wa, wb, wc = weights
    norm = K1 * (1 - B)
    slope = K1 * B / max(avgdl, 1e-9)
    # Terms by position in ``lexemes`` (sorted), a chunk's terms met as a bit mask: the
    # bookkeeping per posting and per chunk is a few integer operations, not a dict.
    at = {lex: i for i, lex in enumerate(lexemes)}
    weight = [idf[x] for x in lexemes]

    def share(i: int, th: int, tb: int, tc: int, dl: int) -> float:
        f = wa * th + wb * tb + wc * tc
        return weight[i] * f * (K1 + 1) / (f + norm + slope * dl) if f > 0 else 0.0

    cursor = {i: (math.inf, 2**63 - 1) for i in range(len(lexemes))}  # (bound, id) last read
    met: dict[int, list[float]] = {}  # chunks met, not scored: each term's share (0 if not met)
    mask: dict[int, int] = {}  # the terms each chunk in ``met`` was met in
    known: dict[int, float] = {}  # and the sum of those shares
    scores: dict[int, float] = {}
    out = set(dead)  # chunks that cannot reach the top k (or are gone), met again later
    batch = max(FIRST_BATCH, -(-k // BLOCK))
    probes = max(PROBE_BATCH, 4 * k)
    walk = True
    while True:
        if walk:
            live = list(cursor)
            walked = conn.execute(WALK, {
                "ns": namespace, "lexemes": [lexemes[i] for i in live],
                "bound": [cursor[i][0] for i in live], "after": [cursor[i][1] for i in live],
                "n": [batch] * len(live),
            }).fetchall()  # fmt: skip
            read = Counter(row[0] for row in walked)
            for lex, bound, block, ids, ths, tbs, tcs, dls in walked:
                i = at[lex]
                cursor[i] = min(cursor[i], (bound, block))
                for chunk_id, th, tb, tc, dl in zip(ids, ths, tbs, tcs, dls, strict=True):
                    if chunk_id in scores or chunk_id in out:
                        continue
                    part = share(i, th, tb, tc, dl)
                    if chunk_id in met:
                        met[chunk_id][i] = part
                        mask[chunk_id] |= 1 << i
                        known[chunk_id] += part
                    else:
                        met[chunk_id] = [0.0] * len(lexemes)
                        met[chunk_id][i] = part
                        mask[chunk_id] = 1 << i
                        known[chunk_id] = part
            for i in live:
                if read[lexemes[i]] < batch:
                    del cursor[i]  # this term's blocks are all read
            batch = min(batch * 2, MAX_BATCH)
        ahead = {i: weight[i] * cursor[i][0] * grow * SLACK for i in cursor}
        pending = sum(1 << i for i in ahead)  # terms whose postings are not all read
        for chunk_id in [c for c, m in mask.items() if not pending & ~m]:
            scores[chunk_id] = sum(_forget(chunk_id, met, mask, known))  # every term met
        kth = _kth(scores, k)
        # per set of terms met: the most the others could add
        rest = {m: sum(a for i, a in ahead.items() if not m & 1 << i) for m in set(mask.values())}
        bounds = [(known[c] + rest[m], c) for c, m in mask.items()]
        for bound, chunk_id in bounds:
            if bound < kth:  # can never reach the top k: kth only rises
                _forget(chunk_id, met, mask, known)
                out.add(chunk_id)
        probe = [c for _, c in heapq.nlargest(probes, (b for b in bounds if b[0] >= kth))]
        if probe:
            probes = min(probes * 2, MAX_PROBES)  # many close candidates: fewer rounds
            parts_of = {c: [0.0] * len(lexemes) for c in probe}
            rows = conn.execute(
                PROBE, {"ns": namespace, "lexemes": lexemes, "ids": probe}
            ).fetchall()
            for chunk_id, lex, th, tb, tc, dl in rows:
                parts_of[chunk_id][at[lex]] = share(at[lex], th, tb, tc, dl)
            for chunk_id, parts in parts_of.items():
                scores[chunk_id] = sum(parts)
                _forget(chunk_id, met, mask, known)
            kth = _kth(scores, k)
        walk = bool(cursor) and not kth > sum(ahead.values())
        if not walk and not met:
            break
    best = heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))
    return [(c, s) for c, s in best if s > 0]


def _forget(
    chunk_id: int, met: dict[int, list[float]], mask: dict[int, int], known: dict[int, float]
) -> list[float]:
    """Drop a chunk met from the walk's bookkeeping; its shares, by term (in lexeme
    order: summed left to right, equal chunks tie exactly)."""
    del mask[chunk_id], known[chunk_id]
    return met.pop(chunk_id)


def _kth(scores: dict[int, float], k: int) -> float:
    best = heapq.nlargest(k, scores.values())
    return best[-1] if len(best) == k else 0.0
