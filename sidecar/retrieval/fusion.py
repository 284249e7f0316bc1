"""How the sparse (BM25) and dense (embedding) legs become one ranking for a tier.

Measured on LoCoMo (README, "Hybrid retrieval"): reciprocal rank fusion of the
two legs with all-MiniLM-L6-v2 loses to BM25 alone, because the dense leg's
own top hits are mostly wrong and RRF gives them the same say as BM25's. What
helps is letting the dense leg *re-order* BM25's candidates, never add new ones:

    score = ALPHA * bm25 / max(bm25 in pool) + (1 - ALPHA) * dense
    dense = LINE_MIX * max(cosine of each line) + (1 - LINE_MIX) * cosine of the chunk

over BM25's top ``POOL`` chunks, plus ``WHEN_SHARE`` for a chunk that says when
something happened if the question asks when, and ``SPEAKER_SHARE`` times the share of a
chunk's transcript lines said by someone the question names (``speakers``). A chunk still
waiting for its vector keeps its BM25 share as its dense share, so it neither gains nor
loses for being new.
When BM25 finds fewer chunks than asked for (no shared words), dense hits at
least ``NOTES_FILL_MIN_COSINE`` similar fill the rest, below every BM25 hit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sidecar.index.dates import says_when
from sidecar.index.store import Hit
from sidecar.retrieval import modes
from sidecar.retrieval.modes import ALPHA, DENSE, NOTES_FILL_MIN_COSINE, SPARSE
from sidecar.retrieval.speakers import said_share
from sidecar.retrieval.vector_sync import from_blob

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors

LINE_MIX = 0.5


@dataclass(frozen=True, slots=True)
class Ranked:
    hit: Hit
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # 1-based rank in each leg


def dense_score(query: Vectors, blob: bytes) -> float:
    """The chunk's similarity to the query: its best line mixed with the whole."""
    sims = from_blob(blob, len(query)) @ query
    best_line = float(sims[1:].max()) if len(sims) > 1 else float(sims[0])
    return LINE_MIX * best_line + (1 - LINE_MIX) * float(sims[0])


def rerank(
    sparse: list[Hit],
    dense: dict[str, float],
    fill: list[tuple[Hit, float]],
    limit: int,
    asks_when: bool = False,
    names: frozenset[str] = frozenset(),
) -> list[Ranked]:
    """BM25's pool re-ordered by the mixed score, then dense-only hits if too few.

    ``dense`` maps a chunk's content hash to its :func:`dense_score`; ``fill`` is the
    dense leg's own top hits (hit, cosine), best first. ``asks_when``: the question asks
    for a time, so a chunk that says when gains ``WHEN_SHARE``; ``names``: whom it names
    (``query.named``), so a chunk gains ``SPEAKER_SHARE`` times the share of its transcript
    lines they say.
    """
    lift = modes.WHEN_SHARE if asks_when else 0.0
    ranked: list[Ranked] = []
    if sparse:
        top = max(h.score for h in sparse)
        norm = [h.score / top if top > 0 else 1.0 for h in sparse]
        sims = [dense.get(h.key) for h in sparse]
        scored = sorted((-s, i) for i, s in enumerate(sims) if s is not None)  # ties: BM25's
        dense_rank = {i: r for r, (_, i) in enumerate(scored, start=1)}
        for i, hit in enumerate(sparse):
            sim = sims[i]
            mixed = ALPHA * norm[i] + (1 - ALPHA) * (norm[i] if sim is None else sim)
            if lift and says_when(hit.text):
                mixed += lift
            if names:
                mixed += modes.SPEAKER_SHARE * said_share(hit.text, names)
            ranks = {SPARSE: i + 1}
            if sim is not None:
                ranks[DENSE] = dense_rank[i]
            ranked.append(Ranked(hit, mixed, ranks))
        order = np.argsort([-r.score for r in ranked], kind="stable")
        ranked = [ranked[j] for j in order]
    if len(ranked) < limit:
        seen = {(r.hit.path, r.hit.start_line) for r in ranked}
        # Below every BM25 hit (mixed scores are above -1), in the dense leg's order.
        shift = -2.0 if ranked else 0.0
        for rank, (hit, sim) in enumerate(fill, start=1):
            if len(ranked) >= limit:
                break
            if (hit.path, hit.start_line) not in seen and sim >= NOTES_FILL_MIN_COSINE:
                ranked.append(Ranked(hit, shift + sim, {DENSE: rank}))
    return ranked[:limit]
