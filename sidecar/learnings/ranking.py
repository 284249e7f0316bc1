"""Where a learning is ranked: relevance x prominence x scope, then MMR for diversity.

    prominence    = importance x decay x (1 + reinforcement_count)    (0 unless active)
    decay         = max(DECAY_FLOOR, exp(-ln 2 / HALF_LIFE_DAYS x age_days))
    score         = relevance x prominence x scope_factor

Relevance comes from the same hybrid ranking as notes (``retrieval.ranking``), scaled
to the best candidate. Age counts from ``last_reinforced`` (else ``created``) and is
computed at query time, so nothing is rewritten for time to pass. The floor is on
the decay, not on prominence: time alone never hides an entry, and importance and
reinforcement still tell two old entries apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from sidecar.learnings.entries import MAX_COUNT, jaccard, words
from sidecar.retrieval.updates import stems

HALF_LIFE_DAYS = 90.0
DECAY_FLOOR = 0.1
# The reference's team and project factors: an agent's own learnings are closer to its
# work than the crew's.
SCOPE_FACTORS = {"agent": 1.5, "crew": 1.2}
RELEVANCE, PROMINENCE, REFERENCE = "relevance", "prominence", "reference"
RANKINGS = ("default", RELEVANCE, PROMINENCE, REFERENCE)  # a search's ``ranking``, to compare
# The listing's orders without a query (``listing.py`` sorts by them), best first for each.
REINFORCED, RECENT = "reinforced", "recent"
ORDERS = (PROMINENCE, REINFORCED, RECENT)
ANY_STATUS = "any"
MAX_LIST = 200
MMR_LAMBDA = 0.7  # share of the score in MMR; the rest penalises likeness to earlier hits


def decay(meta: dict[str, Any], today: date) -> float:
    """Half-life decay since the entry was last reinforced (the journal's ``recency`` is a
    linear fall over a horizon: a different curve, hence a different name)."""
    when = meta.get("last_reinforced") or meta.get("created")
    if not when:
        return 1.0
    age = max(0, (today - date.fromisoformat(when)).days)
    return max(DECAY_FLOOR, math.exp(-math.log(2) / HALF_LIFE_DAYS * age))


def prominence(meta: dict[str, Any], today: date) -> float:
    if meta.get("status", "active") != "active":
        return 0.0
    # Bounded here too: an index written by an older version may hold any count.
    reinforced = 1 + min(max(int(meta.get("reinforcement_count", 0)), 0), MAX_COUNT)
    return float(meta.get("importance", 0.5)) * decay(meta, today) * reinforced


@dataclass(slots=True)
class ScoredLearning:
    tier: str
    path: str
    meta: dict[str, Any]
    text: str
    relevance: float
    prominence: float = 0.0
    scope_factor: float = 1.0
    fit: float = 0.0  # share of the query's content words the entry holds (``fit``)

    @property
    def score(self) -> float:
        return self.relevance * self.prominence * self.scope_factor


def mmr(
    candidates: Sequence[ScoredLearning], k: int, lam: float = MMR_LAMBDA
) -> list[ScoredLearning]:
    """Maximal marginal relevance: each pick trades its score (scaled to the best) for its
    word-set likeness to what is already picked, so near-duplicates do not fill the list."""
    pool = [c for c in candidates if c.score > 0]
    if not pool:
        return []
    top = max(c.score for c in pool)
    sets = [words(c.text) for c in pool]
    likeness = [0.0] * len(pool)  # max Jaccard with anything picked so far
    left = set(range(len(pool)))
    picked: list[ScoredLearning] = []
    while left and len(picked) < k:
        best = max(left, key=lambda i: (lam * pool[i].score / top - (1 - lam) * likeness[i], -i))
        left.discard(best)
        picked.append(pool[best])
        for i in left:
            likeness[i] = max(likeness[i], jaccard(sets[i], sets[best]))
    return picked


def fit(query: str, text: str) -> float:
    """The share of the query's content words (stems) the entry holds: unlike BM25, a word
    repeated, or rarer in the index, counts once and no more than any other."""
    asked = stems(query)
    return len(asked & stems(text)) / len(asked) if asked else 0.0


def answering(
    by_relevance: list[ScoredLearning], relevance_gate: float, fit_gate: float
) -> list[ScoredLearning]:
    """The candidates that answer the task, in relevance order: prominence orders these.

    An entry answers when it holds at least ``fit_gate`` of the content words the
    best-fitting one holds; when none holds any (dense fills only), when it is at least
    ``relevance_gate`` as relevant as the best."""
    best_fit = max((c.fit for c in by_relevance), default=0.0)
    if best_fit > 0:
        return [c for c in by_relevance if c.fit >= fit_gate * best_fit and c.score > 0]
    best = by_relevance[0].relevance if by_relevance else 0.0
    return [c for c in by_relevance if c.relevance >= relevance_gate * best and c.score > 0]
