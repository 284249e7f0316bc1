"""Where an episode is ranked: relevance to the query, and importance now.

Relevance is the notes' fusion applied to events: BM25's pool re-ordered by
meaning, ``ALPHA * bm25/max + (1 - ALPHA) * cosine`` (an event without a vector
keeps its BM25 share as its dense share), plus events only the dense leg found,
which have no BM25 share to add. Importance is the reference's
``BASE x max(0.1, 1 - days/180) x (1 + log2(refs + 1)/8)``, floored by priority
and computed at query time, never a night out of date.

Four rankings can be asked for; the journal benchmark compares them. ``updates`` (the
default): relevance picks the k events, ``relevance x standing`` (importance without the
age decay) orders them, and among events about one subject the later comes first
(``retrieval.updates``). Age decay is a global recency: it put an old answer that was
never updated below any later event sharing the question's words (0 of 7 held-out
questions kept their answer first, against 5-6 by relevance alone), where the local rule
moves only an event's own restatements. ``importance`` is the reference's ordering,
``relevance x importance`` (its ``cosine x importance``), age decay included;
``relevance`` ignores importance; ``linear`` is the reference's ``0.5 * vector +
0.3 * BM25 + 0.2 * temporal proximity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sidecar.retrieval.modes import ALPHA, FILL_MIN_COSINE

RANKINGS = ("updates", "importance", "relevance", "linear")
DEFAULT_RANKING = "updates"
PICKED_BY_RELEVANCE = ("updates", "importance")  # relevance picks the k, the ranking orders
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


def standing(base: float, floor: float, refs: int) -> float:
    """Importance without the age decay: what the default ranking weighs relevance by."""
    return max(floor, base * (1.0 + math.log2(refs + 1) / 8.0))


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
    ranking: str,
    rel: float,
    importance: float,
    c: Candidate,
    age_s: float,
    top_bm25: float,
    weight: float,
) -> float:
    """``weight``: the event's ``standing``, the default ranking's factor."""
    if ranking == "relevance":
        return rel
    if ranking == "updates":
        return rel * weight
    if ranking == "linear":
        bm25 = (c.bm25 or 0.0) / top_bm25 if top_bm25 > 0 else 0.0
        return 0.5 * max(0.0, c.cosine or 0.0) + 0.3 * bm25 + 0.2 * recency(age_s)
    return rel * importance
