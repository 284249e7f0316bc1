"""Ranked search over one tier (BM25, vectors or both), fusion across tiers, snippets.

BM25 numbers from two indexes are not comparable (each has its own document
count and average length), so ``scope=both`` fuses by rank, never by score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cmp_to_key
from typing import TYPE_CHECKING

from sidecar.disk.tiers import is_archived
from sidecar.index.dates import hit_date, says_when
from sidecar.index.store import Hit, IndexStore, QuerySyntaxError
from sidecar.retrieval import modes
from sidecar.retrieval.modes import DENSE, HYBRID, POOL, SPARSE, SPARSE_CONTEXT_WEIGHT
from sidecar.retrieval.query import MODE_FALLBACK, MODE_TERMS, PlannedQuery, stem
from sidecar.retrieval.speakers import said_share
from sidecar.safety import scan_remembered

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors
    from sidecar.retrieval.vector_sync import TierVectors

RRF_K = 60
SNIPPET_CHARS = 320
_HEADING_TITLE = re.compile(r"#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")


@dataclass(frozen=True, slots=True)
class Result:
    source: str  # tier name
    hit: Hit
    score: float
    # A result the crew lead already rendered (snippet, flag): passed through as is.
    rendered: dict[str, object] | None = None
    ranks: dict[str, int] | None = None  # 1-based rank in each retrieval leg

    def to_json(self, query_terms: Sequence[str]) -> dict[str, object]:
        if self.rendered is not None:
            return {**self.rendered, "score": round(self.score, 6)}
        shown = body_only(self.hit)
        body: dict[str, object] = {
            "file": self.hit.path,
            "source": self.source,
            "start_line": shown.start_line,
            "end_line": shown.end_line,
            "heading": self.hit.heading,
            "snippet": snippet(shown.text, query_terms),
            "score": round(self.score, 6),
        }
        when = hit_date(self.hit.path, self.hit.heading)
        if when is not None:
            body["date"] = when
        if self.ranks:
            body["ranks"] = self.ranks
        if is_archived(self.hit.path):  # history moved out of the active tier
            body["archived"] = True
        finding = scan_remembered(self.hit.text)
        if finding is not None:  # say so; the MCP tools withhold the text
            body["flagged"] = {"category": finding.category, "pattern": finding.pattern}
        return body


def search_store(
    store: IndexStore, planned: PlannedQuery, limit: int, context_weight: float | None = None
) -> tuple[list[Hit], str]:
    """Run the planned query; on a syntax error, run the plain-terms form instead."""
    try:
        return store.search(planned.match, limit, context_weight), planned.mode
    except QuerySyntaxError:
        if not planned.fallback:
            return [], MODE_FALLBACK
        return store.search(planned.fallback, limit, context_weight), MODE_FALLBACK


def rank_tier(
    store: IndexStore,
    source: str,
    planned: PlannedQuery | None,
    limit: int,
    mode: str,
    query_vector: Vectors | None = None,
    vectors: TierVectors | None = None,
    pool: Pool | None = None,
) -> tuple[list[Result], str]:
    """One tier's results in a retrieval mode, and how the query was read.

    Runs on a search thread. Without a query vector (sparse mode, or no embedder)
    this is BM25 alone, and numpy is never imported. ``pool``: hybrid's BM25 pool and
    its vectors (``bm25_pool``), when they were read while the query was embedded.
    """
    query_mode = planned.mode if planned else MODE_TERMS
    if mode == SPARSE or query_vector is None or vectors is None:
        if planned is None:
            return [], query_mode
        cued = planned.asks_when or bool(planned.names)
        depth = max(POOL, limit) if cued else limit
        hits, query_mode = search_store(store, planned, depth, SPARSE_CONTEXT_WEIGHT)
        if cued:
            hits = lift(hits, planned.asks_when, planned.names)[:limit]
        return [Result(source, h, h.score, ranks={SPARSE: i})
                for i, h in enumerate(hits, start=1)], query_mode  # fmt: skip
    sparse: list[Hit] = []
    blobs: dict[str, bytes] | None = None
    if mode == HYBRID and pool is not None:
        sparse, query_mode, blobs = pool.hits, pool.query_mode, pool.vectors
    elif mode == HYBRID and planned is not None:
        sparse, query_mode = search_store(store, planned, max(POOL, limit))
    fill: list[tuple[Hit, float]] = []
    if mode == DENSE or len(sparse) < limit:
        # A row the sync has not caught up with yet may name a chunk id that is gone or
        # now holds other text: only hits whose text the vector was made from count, and
        # twice as many rows are asked for, so that a few such rows cost no results.
        top, sims, keys = vectors.index.top_k(query_vector, 2 * (limit + len(sparse)))
        ids = top.tolist()
        found = store.hits(ids)
        fill = [(found[i], sim) for i, sim, key in zip(ids, sims.tolist(), keys, strict=True)
                if i in found and found[i].key == key]  # fmt: skip
    if mode == DENSE:
        return [Result(source, h, s, ranks={DENSE: r})
                for r, (h, s) in enumerate(fill[:limit], start=1)], query_mode  # fmt: skip
    if blobs is None:
        blobs = store.get_vectors(vectors.embedder.model_id, (h.key for h in sparse))
    return _reranked(source, sparse, blobs, query_vector, fill, limit, planned), query_mode


@dataclass(frozen=True, slots=True)
class Pool:
    """Hybrid's BM25 candidates with their stored vectors, read in one search-thread job
    while the query embeds: once the query has its vector, what is left is arithmetic."""

    hits: list[Hit]
    query_mode: str
    vectors: dict[str, bytes]  # content hash -> the chunk's stored vectors (``from_blob``)


def bm25_pool(store: IndexStore, planned: PlannedQuery, limit: int, model_id: str) -> Pool:
    """BM25's ``max(POOL, limit)`` best chunks and their vectors under ``model_id``."""
    hits, query_mode = search_store(store, planned, max(POOL, limit))
    return Pool(hits, query_mode, store.get_vectors(model_id, (h.key for h in hits)))


def rank_pool(
    source: str, pool: Pool, query_vector: Vectors, limit: int, planned: PlannedQuery | None
) -> list[Result] | None:
    """``rank_tier``'s hybrid answer from ``pool`` alone, without the store (no thread
    needed); None when BM25 found fewer than ``limit`` and the dense leg must fill."""
    if len(pool.hits) < limit:
        return None
    return _reranked(source, pool.hits, pool.vectors, query_vector, [], limit, planned)


def _reranked(
    source: str, sparse: list[Hit], blobs: dict[str, bytes], query_vector: Vectors,
    fill: list[tuple[Hit, float]], limit: int, planned: PlannedQuery | None,
) -> list[Result]:  # fmt: skip
    from sidecar.retrieval import fusion  # numpy: a sparse-only daemon never loads it

    dense = {k: fusion.dense_score(query_vector, b) for k, b in blobs.items()}
    if planned is None:
        ranked = fusion.rerank(sparse, dense, fill, limit)
    else:
        ranked = fusion.rerank(sparse, dense, fill, limit, planned.asks_when, planned.names)
    return [Result(source, r.hit, r.score, ranks=r.ranks) for r in ranked]


def body_only(hit: Hit) -> Hit:
    """The hit without the heading lines it starts with, when it has lines below them.

    A chunk that opens a section starts at its heading, and the heading is indexed with it
    (its words find the chunk). In a search answer the heading line only repeats the hit's
    ``heading`` (and the date read from it) while a reader with a budget pays for it: the
    answer points at the lines below. Only lines naming the hit's own breadcrumb are
    dropped, so a comment line in code ("# install") stays. Blank lines stripped from the
    start of the chunk's text leave the new range starting early, never late: no line of
    text is lost. Only what is shown changes: a chunk is still found, and its vectors and
    a learning's entry still looked up, by the range it was indexed with.
    """
    if not hit.text.startswith("#"):
        return hit
    titles = set(hit.heading.split(" > "))
    lines = hit.text.split("\n")
    skip = 0
    while skip < len(lines):
        line = lines[skip].strip()
        m = _HEADING_TITLE.fullmatch(line) if line else None
        if line and (m is None or (m.group(1) or "").strip() not in titles):
            break
        skip += 1
    if skip == 0 or skip == len(lines):
        return hit
    return replace(hit, start_line=hit.start_line + skip, text="\n".join(lines[skip:]))


def lift(hits: list[Hit], asks_when: bool, names: frozenset[str] = frozenset()) -> list[Hit]:
    """BM25's pool with hybrid's lifts (``fusion.rerank``), in shares of the best score: for
    a question that asks when, a hit that says when something happened gains
    ``WHEN_SHARE``; a hit gains ``SPEAKER_SHARE`` times the share of its transcript lines
    said by someone the question names (``names``, ``speakers``). Its score says so, and
    its rank in the BM25 leg stays where the new order puts it."""
    if not hits:
        return hits
    best = max(h.score for h in hits)

    def gain(hit: Hit) -> float:
        share = modes.WHEN_SHARE if asks_when and says_when(hit.text) else 0.0
        return share + modes.SPEAKER_SHARE * said_share(hit.text, names)

    lifted = [replace(h, score=h.score + g * best) if (g := gain(h)) else h for h in hits]
    return sorted(lifted, key=lambda h: -h.score)  # stable: ties keep BM25's order


def dense_fill_last(results: list[Result]) -> list[Result]:
    """Hybrid hits BM25 never saw (dense fills of a short list) after every other hit.

    Within a tier they already rank below its BM25 hits; across tiers, rank fusion
    would otherwise put one tier's best fill level with the other's best BM25 hit.
    """
    return sorted(results, key=lambda r: bool(r.ranks) and SPARSE not in (r.ranks or {}))


def rrf_fuse(ranked: dict[str, list[Result]], limit: int, k: int = RRF_K) -> list[Result]:
    """Reciprocal rank fusion of the tiers' lists: a hit scores 1 / (k + its rank).

    Hits of the same rank in two tiers tie. When both tiers ranked the same way (both
    hybrid, or both BM25 alone), the one its own tier scored higher goes first: scores of
    two indexes are not on one scale, but a tie is exactly where a weak hit (a tier's best
    match for one common word) would otherwise lead over a strong one for no better
    reason than the order of the tiers' names. Otherwise (different retrievals, a lead's
    rendered results, dense fills scored on shifted scales) the tier order decides."""
    # Keyed by tier and rank, not by file and lines: the pieces of one over-long line are
    # separate chunks with the same line range, and each is a hit of its own.
    own = {(source, rank): result for source, results in ranked.items()
           for rank, result in enumerate(results, start=1)}  # fmt: skip

    def legs(key: tuple[str, int]) -> tuple[str, ...] | None:
        ranks = own[key].ranks
        found = tuple(sorted(ranks)) if ranks else None
        return found if found and SPARSE in found else None  # BM25-backed, not rendered

    def compare(a: tuple[str, int], b: tuple[str, int]) -> int:
        """The fused score orders by rank; a tie across tiers as the docstring says."""
        if a[1] != b[1]:
            return -1 if a[1] < b[1] else 1
        score_a, score_b = own[a].score, own[b].score
        if a[0] != b[0] and legs(a) is not None and legs(a) == legs(b) and score_a != score_b:
            return -1 if score_a > score_b else 1
        return -1 if a < b else 1 if a > b else 0

    fused = sorted(own, key=cmp_to_key(compare))[:limit]
    return [replace(own[key], score=1.0 / (k + key[1])) for key in fused]


def snippet(text: str, query_terms: Sequence[str], max_chars: int = SNIPPET_CHARS) -> str:
    """The run of whole lines of ``text`` that mentions the most query terms.

    Lines are never cut, except a single line longer than the budget, which is
    cut at a character boundary and marked with an ellipsis.
    """
    if len(text) <= max_chars:
        return text
    lines = text.split("\n")
    # Substring tests, not a regex of the terms: compiling one costs more than every test
    # of a search's ten hits, and each query is new.
    stems = {stem(w).lower() for w in query_terms}
    weights = [sum(s in low for s in stems) for low in map(str.lower, lines)]
    # Two pointers: the window [start, end) of whole lines that fits max_chars.
    best, best_span = -1, (0, 0)
    start, size, weight = 0, -1, 0
    for end, line in enumerate(lines):
        size += len(line) + 1
        weight += weights[end]
        while size > max_chars and start <= end:
            size -= len(lines[start]) + 1
            weight -= weights[start]
            start += 1
        if start <= end and weight > best:
            best, best_span = weight, (start, end + 1)
    if best < 0:  # every line alone is longer than the budget
        top = max(range(len(lines)), key=lambda i: weights[i])
        return lines[top][: max_chars - 1] + "…"
    return "\n".join(lines[best_span[0] : best_span[1]])
