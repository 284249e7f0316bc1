"""Where an episode is ranked: relevance to the query, and importance now.

Relevance is the notes' fusion applied to events: BM25's pool re-ordered by
meaning, ``ALPHA * bm25/max + (1 - ALPHA) * cosine`` (an event without a vector
keeps its BM25 share as its dense share), plus events only the dense leg found,
which have no BM25 share to add. Importance is the reference's
``BASE x max(0.1, 1 - days/180) x (1 + log2(refs + 1)/8)``, floored by priority
and computed at query time, never a night out of date.

Three rankings can be asked for; the README's journal benchmark compares them:
``importance`` (the default): relevance picks the k events, ``relevance x
importance`` (the reference's ``cosine x importance``) orders them; ``relevance``
ignores importance; ``linear`` is the reference's ``0.5 * vector + 0.3 * BM25 +
0.2 * temporal proximity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sidecar.retrieval.modes import ALPHA, FILL_MIN_COSINE

RANKINGS = ("importance", "relevance", "linear")
DEFAULT_RANKING = "importance"
POOL_MIN = 20
HORIZON_DAYS = 180.0


def pool_size(k: int) -> int:
    """Candidates each leg brings before relevance picks the best k."""
    return max(POOL_MIN, 4 * k)


def recency(age_s: float) -> float:
    return max(0.1, 1.0 - max(0.0, age_s) / 86400.0 / HORIZON_DAYS)


def importance_now(base: float, floor: float, age_s: float, refs: int) -> float:
    """Base importance decayed by age and lifted by use, never below the priority floor."""
    return max(floor, base * recency(age_s) * (1.0 + math.log2(refs + 1) / 8.0))


@dataclass(slots=True)
class Candidate:
    id: str
    bm25: float | None = None  # higher is better
    cosine: float | None = None
    ranks: dict[str, int] = field(default_factory=dict)  # 1-based rank in each leg


def relevance(candidates: list[Candidate]) -> dict[str, float]:
    """Each candidate's relevance in [0, 1]."""
    top = max((c.bm25 for c in candidates if c.bm25 is not None), default=0.0)
    out: dict[str, float] = {}
    for c in candidates:
        if c.bm25 is not None:
            norm = c.bm25 / top if top > 0 else 1.0
            out[c.id] = ALPHA * norm + (1 - ALPHA) * (norm if c.cosine is None else c.cosine)
        elif c.cosine is not None and c.cosine >= FILL_MIN_COSINE:
            out[c.id] = (1 - ALPHA) * c.cosine
    return out


def score(
    ranking: str, rel: float, importance: float, c: Candidate, age_s: float, top_bm25: float
) -> float:
    if ranking == "relevance":
        return rel
    if ranking == "linear":
        bm25 = (c.bm25 or 0.0) / top_bm25 if top_bm25 > 0 else 0.0
        return 0.5 * max(0.0, c.cosine or 0.0) + 0.3 * bm25 + 0.2 * recency(age_s)
    return rel * importance
