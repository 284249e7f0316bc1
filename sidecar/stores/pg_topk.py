"""Top-k BM25 without scoring every matching chunk: the threshold algorithm over
block postings.

A term's postings are packed in ``blocks`` rows of up to ``BLOCK``, each bounded by
its highest *impact* (a posting's BM25 contribution before the IDF, with the document
length normalised against the namespace's ``impact_avgdl``); an index orders a term's
blocks by bound. A search reads query terms' blocks from the highest bound down, a batch
of rows at a time, each row a block of exact shares; a chunk met is scored exactly (its
other terms probed from its tsvector, today's statistics: the same number the exhaustive
query in ``pg_search`` gives). The shares met are a floor under each chunk's score, and
the k-th best floor a threshold. The terms with the lowest bounds (IDF times the bound
of the last block read), summing below it, cannot together lift a chunk never met into
the top k: only the others are read on (MaxScore), and the walk stops once every term's
bound sums below it. Bounds computed against an older average length are corrected: a
contribution grows by at most ``avgdl / impact_avgdl`` (when above 1), so the answer
stays exact and only the walk gets longer as the average drifts (``pg_write`` recomputes
them past a limit). Chunks deleted since the last merge (``dead``) are skipped.

Only what impacts bound takes this path: an OR of plain words, weighted alike (any
weights over the columns the impacts count; sparse search weighs the context column
less than the default the impacts were computed at). Prefixes, phrases and column
filters are answered exhaustively.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_pack import POSTING, decode
from sidecar.stores.pg_schema import BLOCK, K1, TS_CONFIG, B

# A block is one bytea read as it lies (about 4x cheaper than the five arrays before):
# long first reads and fewer round trips paid at 10k, 100k and 1M alike.
FIRST_BATCH = 256  # blocks per term in the first round (32,768 postings); doubled after
MAX_BATCH = 1024
MIN_BATCH = 4
PROBE_BATCH = 16  # chunks probed at once, the most promising first
MAX_PROBES = 1024
# A probe costs about as much as reading a few blocks (it unnests the chunk's whole
# tsvector): while a term's blocks remain, more candidates than this are left to the
# walk to settle, which lowers their bounds far more cheaply than probing them.
WALK_BEFORE_PROBING = 256
SLACK = 1 + 1e-5  # bounds are stored as float4: a bound a little above them

# The query's lexemes and their document frequencies, each row with the length statistics
# and the chunks deleted whose postings blocks still hold: one round trip.
PLAN = f"""
SELECT t.idx, l.lexeme, coalesce(d.df, 0), s.chunks, s.tokens, s.impact_avgdl, s.dead
FROM unnest(%(words)s::text[]) WITH ORDINALITY AS t(word, idx)
     LEFT JOIN LATERAL unnest(to_tsvector('{TS_CONFIG}', t.word)) AS l ON true
     LEFT JOIN terms AS d ON d.namespace = %(ns)s AND d.lexeme = l.lexeme COLLATE "C"
     LEFT JOIN (SELECT chunks, tokens, impact_avgdl,
                       (SELECT array_agg(chunk_id) FROM dead WHERE namespace = %(ns)s) AS dead
                FROM namespace_stats WHERE namespace = %(ns)s) AS s ON true
"""
# The next blocks of each term, by bound (then id) downwards from a cursor; a block's
# postings as they lie (``pg_schema.POSTING``), which numpy reads without parsing.
WALK = """
SELECT t.lexeme, b.bound, b.id, b.postings
FROM unnest(%(lexemes)s::text[], %(bound)s::float4[], %(after)s::bigint[], %(n)s::int[])
     AS t(lexeme, bound, after, n)
CROSS JOIN LATERAL (
    SELECT bound, id, postings FROM blocks
    WHERE namespace = %(ns)s AND lexeme = t.lexeme COLLATE "C"
      AND (bound, id) < (t.bound, t.after)
    ORDER BY bound DESC, id DESC LIMIT t.n
) AS b
"""
# Every query term's counts in the given chunks, from their tsvectors (a chunk's row by
# its primary key: the forward index). The tsvector is cut down to the query's lexemes
# before it is unnested (``ts_delete`` of all the others): unnesting every lexeme of a
# chunk, to keep a few, was most of a probe's time.
PROBE = """
SELECT c.id, u.lexeme, cardinality(array_positions(u.weights, 'A')),
       cardinality(array_positions(u.weights, 'B')),
       cardinality(array_positions(u.weights, 'C')), c.doc_len
FROM chunks AS c CROSS JOIN LATERAL unnest(ts_delete(
    c.tsv, tsvector_to_array(ts_delete(c.tsv, %(lexemes)s::text[])))) AS u
WHERE c.namespace = %(ns)s AND c.id = ANY(%(ids)s::bigint[])
"""


def plan(conn: Conn, namespace: str, params: dict[str, Any], weights: tuple[float, ...]) -> Any:
    """The query's lexemes with their multiplicity and IDF, its column weights, and the
    length statistics; None where this path cannot answer (a prefix, words weighted
    apart, weight on a column the impacts' ``weights`` leave out, a word that is
    several lexemes, impacts never computed).

    Other column weights than the impacts' are bounded too: a posting's weighted count
    is at most ``scale`` times the one its impact was computed from, and an impact grows
    by at most that factor (above 1) with it, as it is concave in the count."""
    columns = set(zip(params["wa"], params["wb"], params["wc"], strict=True))
    if any(params["prefix"]) or len(columns) != 1:
        return None
    (query_weights,) = columns
    if any(q > 0 and not w > 0 for q, w in zip(query_weights, weights, strict=True)):
        return None
    scale = max([1.0] + [q / w for q, w in zip(query_weights, weights, strict=True) if w > 0])
    rows = conn.execute(PLAN, {"words": params["words"], "ns": namespace}).fetchall()
    if not rows or len({row[0] for row in rows}) != len(rows):
        return None
    total, tokens, a0, dead = rows[0][3:]
    if not total:  # no chunk (or no statistics yet)
        return [], {}, query_weights, 0.0, 1.0, set()
    if a0 is None or not a0 > 0:  # never computed (or not a length): impacts unusable
        return None
    mult = Counter(lex for _, lex, df, *_ in rows if lex is not None and df > 0)
    dfs = {lex: df for _, lex, df, *_ in rows if lex in mult}
    idf = {lex: max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) * mult[lex]
           for lex, n in dfs.items()}  # fmt: skip
    avgdl = tokens / total
    grow = max(1.0, avgdl / a0) * scale
    return sorted(idf), idf, query_weights, avgdl, grow, set(dead or ())


def search(
    conn: Conn, namespace: str, params: dict[str, Any], weights: tuple[float, ...], k: int
) -> list[tuple[int, float]] | None:
    """The ``k`` best (chunk id, score), best first, ties by id; None where ``plan`` says
    this path cannot answer.

    A walked posting gives its chunk's exact share for that term, so the sum of a chunk's
    shares met is a floor on its score: the k-th best floor (or exact score) is a
    threshold no answer falls below, from the first round on. A term is walked only while
    it is *essential* (MaxScore): the terms whose bounds (IDF times the bound of the last
    block read) sum below the threshold cannot, together, lift a chunk never met into the
    top k, so only the others are walked for new chunks; the common terms, whose lists are
    long and bounds low, are mostly never read past their first blocks. A chunk met is only
    probed for its other terms while the most it could score (its floor plus, per term not
    met, that term's bound) still reaches the threshold, best candidates first. While more
    than ``WALK_BEFORE_PROBING`` are open and blocks remain, the walk goes on instead: a
    probe unnests a whole tsvector, a block read is 128 postings for about the price of one
    probe. The bookkeeping is over arrays (numpy): a round reads thousands of postings,
    and per-posting Python was most of a search."""
    planned = plan(conn, namespace, params, weights)
    if planned is None:
        return None
    lexemes, idf, (wa, wb, wc), avgdl, grow, dead = planned
    if not lexemes or k <= 0:
        return []
    norm = K1 * (1 - B)
    slope = K1 * B / max(avgdl, 1e-9)
    at = {lex: i for i, lex in enumerate(lexemes)}
    weight = [idf[x] for x in lexemes]
    cursor = {i: (math.inf, 2**63 - 1) for i in range(len(lexemes))}  # (bound, id) last read
    # each term's next read, doubled as it is walked; at first in proportion to its IDF (a
    # common term's blocks add little to any score, and MaxScore mostly never reads on)
    first = max(FIRST_BATCH, -(-k // BLOCK))
    batch = {i: max(MIN_BATCH, round(first * weight[i] / max(weight))) for i in cursor}
    scores: dict[int, float] = {}  # chunks probed: their exact scores
    gone = np.fromiter(dead, np.int64, len(dead))
    read = _Read(weight, (wa, wb, wc), norm, slope, gone)
    probes = max(PROBE_BATCH, 4 * k)
    walking, probe = list(cursor), []
    while walking or probe:
        # a round's walk and probes are decided together, so they go in one round trip
        with conn.pipeline():
            walked = conn.execute(WALK, {
                "ns": namespace, "lexemes": [lexemes[i] for i in walking],
                "bound": [cursor[i][0] for i in walking],
                "after": [cursor[i][1] for i in walking], "n": [batch[i] for i in walking],
            }, binary=True) if walking else None  # fmt: skip
            probed = conn.execute(
                PROBE, {"ns": namespace, "lexemes": lexemes, "ids": probe}
            ) if probe else None  # fmt: skip
        if walked is not None:
            rows = walked.fetchall()
            got = Counter(row[0] for row in rows)
            for lex, bound, block, postings in rows:
                cursor[at[lex]] = min(cursor[at[lex]], (bound, block))
                read.add(at[lex], postings)
            for i in walking:
                if got[lexemes[i]] < batch[i]:
                    del cursor[i]  # this term's blocks are all read
                else:
                    batch[i] = min(batch[i] * 2, MAX_BATCH)
        if probed is not None:
            parts_of = {c: [0.0] * len(lexemes) for c in probe}
            for chunk_id, lex, th, tb, tc, dl in probed.fetchall():
                f = wa * th + wb * tb + wc * tc
                i = at[lex]
                parts_of[chunk_id][i] = weight[i] * f * (K1 + 1) / (f + norm + slope * dl)
            for chunk_id, parts in parts_of.items():
                scores[chunk_id] = _sum(parts)
            read.mark(probe)
        # the most a term not met can still add: 0 once all its blocks are read
        ahead = np.array([weight[i] * cursor[i][0] * grow * SLACK if i in cursor else 0.0
                          for i in range(len(lexemes))])  # fmt: skip
        ids, known, seen = read.tally()
        exact = np.ones(len(ids), bool)  # every term met, or all read
        bound = known.copy()
        for i in np.flatnonzero(ahead).tolist():  # column by column: seen is column-major
            exact &= seen[:, i]
            bound += np.where(seen[:, i], 0.0, ahead[i])
        done = np.fromiter(scores.values(), float, len(scores))
        floor = _kth(np.concatenate([known, done]), k)  # k chunks score at least this
        open_ = np.flatnonzero(~exact & (bound >= floor))
        read.forget(bound < floor)
        probe = []
        if bool(cursor) and len(open_) > WALK_BEFORE_PROBING:
            # many candidates open while blocks remain: walking on settles them for less
            walking = [i for i in cursor if (~seen[open_, i]).any()]
            continue
        if len(open_):
            probe = ids[open_[np.argsort(-bound[open_], kind="stable")[:probes]]].tolist()
            probes = min(probes * 2, MAX_PROBES)  # many close candidates: fewer rounds
        # a chunk never met scores at most the sum of the bounds of its terms: the lowest
        # bounds summing below the floor cannot make one an answer, the rest can
        order = np.argsort(ahead, kind="stable")
        walking = [i for i in order[np.cumsum(ahead[order]) >= floor].tolist() if i in cursor]
    # every chunk that can still reach the floor is exact (met in every term, or probed)
    return _top(ids[exact], known[exact], scores, k)


def _top(
    ids: np.ndarray, known: np.ndarray, scores: dict[int, float], k: int
) -> list[tuple[int, float]]:
    """The ``k`` best of the chunks scored, by score then id, without the zeros."""
    ids = np.concatenate([ids, np.fromiter(scores, np.int64, len(scores))])
    values = np.concatenate([known, np.fromiter(scores.values(), float, len(scores))])
    if len(values) > k:  # those tied with the k-th kept: ties go by id
        near = values >= np.partition(values, len(values) - k)[len(values) - k]
        ids, values = ids[near], values[near]
    order = np.lexsort((ids, -values))[:k]
    return [
        (c, s) for c, s in zip(ids[order].tolist(), values[order].tolist(), strict=True) if s > 0
    ]


class _Read:
    """The chunks the walk has met, kept sorted by id with their share of each term met:
    a round's blocks are merged into them, so a round costs what it read, not what
    every round before it read (re-tallying every posting each round was most of a
    search that read thousands of blocks)."""

    def __init__(
        self,
        weight: list[float],
        w: tuple[float, float, float],
        norm: float,
        slope: float,
        gone: np.ndarray,
    ) -> None:
        self.weight = np.asarray(weight)
        self.w, self.norm, self.slope, self.gone = w, norm, slope, gone
        self.terms = len(weight)
        self.raw: list[bytes] = []  # blocks' postings, as read
        self.sizes: list[int] = []
        self.owner: list[int] = []
        self.ids = np.zeros(0, np.int64)
        self.parts = np.zeros((0, self.terms), order="F")
        self.seen = np.zeros((0, self.terms), bool, order="F")
        self.probed = np.zeros(0, bool)

    def add(self, term: int, postings: bytes) -> None:
        self.owner.append(term)
        self.sizes.append(len(postings) // POSTING.itemsize)
        self.raw.append(postings)

    def _merge(self) -> None:
        """Decode the blocks added since the last round and merge their shares in."""
        if not self.owner:
            return
        term = np.repeat(np.array(self.owner, np.int64), self.sizes)
        got = decode(self.raw)
        ids = got["id"].astype(np.int64)
        self.raw, self.sizes, self.owner = [], [], []
        if len(self.gone):
            keep = ~np.isin(ids, self.gone)
            term, ids, got = term[keep], ids[keep], got[keep]
        # the same operations, in the same order, as a probe's share: bit-identical (the
        # counts and lengths are read as float64 by the arithmetic itself, exactly)
        f = self.w[0] * got["th"].astype(float) + self.w[1] * got["tb"] + self.w[2] * got["tc"]
        share = self.weight[term] * f * (K1 + 1) / (f + self.norm + self.slope * got["dl"])
        fresh, row = np.unique(ids, return_inverse=True)
        # only the chunks not met before are inserted (two sorted runs: merged, not sorted)
        at = np.searchsorted(self.ids, fresh)
        known = at < len(self.ids)
        known[known] = self.ids[at[known]] == fresh[known]
        if not known.all():
            merged = np.concatenate([self.ids, fresh[~known]])
            merged.sort(kind="stable")
            old = np.searchsorted(merged, self.ids)
            # column-major: a round's tallies go column by column (row-wise reductions over
            # a few columns were most of a round's numpy time)
            parts = np.zeros((len(merged), self.terms), order="F")
            seen = np.zeros((len(merged), self.terms), bool, order="F")
            for t in range(self.terms):
                parts[old, t] = self.parts[:, t]
                seen[old, t] = self.seen[:, t]
            probed = np.zeros(len(merged), bool)
            probed[old] = self.probed
            self.ids, self.parts, self.seen, self.probed = merged, parts, seen, probed
        # a chunk has one posting per term: each cell is written once, share or zero
        where = np.searchsorted(self.ids, fresh)[row]
        self.parts[where, term] = share
        self.seen[where, term] = True

    def mark(self, probed: list[int]) -> None:
        """Chunks probed: their exact scores are known, they are no longer candidates."""
        at = np.searchsorted(self.ids, probed)
        self.probed[at[self.ids[np.minimum(at, len(self.ids) - 1)] == probed]] = True

    def forget(self, low: np.ndarray) -> None:
        """Drop the chunks of the last tally that cannot reach the floor (it only rises,
        their bounds only fall), so a round costs what it read, not every chunk met before
        it. One met again later comes back with only that round's shares: still a floor
        under its score, which stays below the floor, so it never enters the answer."""
        drop = np.zeros(len(self.ids), bool)
        drop[~self.probed] = low
        if drop.any():
            keep = np.flatnonzero(~drop)
            self.ids, self.probed = self.ids[keep], self.probed[keep]
            self.parts = np.asfortranarray(self.parts[keep])
            self.seen = np.asfortranarray(self.seen[keep])

    def tally(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunks met (not dead, not probed): ids, the sum of their shares met (in
        term order, as a probe sums: equal chunks tie exactly), and which terms met."""
        self._merge()
        if self.probed.any():
            keep = np.flatnonzero(~self.probed)
            ids = self.ids[keep]
            parts = np.asfortranarray(self.parts[keep])
            seen = np.asfortranarray(self.seen[keep])
        else:
            ids, parts, seen = self.ids, self.parts, self.seen
        known = parts[:, 0].copy()
        for t in range(1, self.terms):
            known += parts[:, t]
        return ids, known, seen


def _sum(parts: list[float]) -> float:
    total = parts[0]
    for x in parts[1:]:
        total += x
    return total


def _kth(scores: np.ndarray, k: int) -> float:
    if len(scores) < k:
        return 0.0
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])
