"""How learnings search hits are ordered, cut to budgets and shown: plain functions of
the candidates (the institutional directives are ``standing.py``'s)."""

from __future__ import annotations

from typing import Any

from sidecar.learnings.ranking import (
    PROMINENCE,
    REFERENCE,
    RELEVANCE,
    ScoredLearning,
    answering,
    mmr,
)
from sidecar.retrieval.modes import SPARSE
from sidecar.retrieval.ranking import Result
from sidecar.safety import scan_remembered

FILL_SHARE = 0.5  # a hit only the dense leg found counts at most this much relevance
# Prominence orders only the hits that answer the task: those whose ``match`` (the share of
# the query's words they hold, with vectors mixed with their cosine to it) is at least
# MATCH_GATE of the best guidance entry's (``ranking.answering``). A lesson reinforced a
# dozen times must not outrank the one that answers the question just for sharing a word
# with it; a weak entry's extra BM25 for one repeated or rare word is not an answer either.
# Calibrated on the independent ranking set (0.7 / 0.75 / 0.8 tie within 0.015 there),
# checked on the project's own set and held-out lessons v1, which also choose 0.75.
# When nothing matches (an FTS5 expression of non-content words) the relevance gate stays.
MATCH_GATE = 0.75
RELEVANCE_GATE = 0.5


def relevances(results: list[Result]) -> list[float]:
    """Each result's relevance from the notes' ranking, scaled to the best hit: BM25 (or
    hybrid) scores over the best one; a dense-only hit's cosine, at most ``FILL_SHARE``
    when words found anything (``fusion.rerank`` ranks such fills below, at -2 + cosine)."""
    worded = [r.score for r in results if r.ranks and SPARSE in r.ranks]
    top = max(worded) if worded else 0.0
    dense_only = [r.score for r in results if not (r.ranks and SPARSE in r.ranks)]
    best_sim = max(dense_only) if dense_only and not worded else 1.0
    out: list[float] = []
    for r in results:
        if r.ranks and SPARSE in r.ranks:
            out.append(r.score / top if top > 0 else 1.0)
        elif worded:
            out.append(FILL_SHARE * max(0.0, r.score + 2.0))
        else:
            out.append(max(0.0, r.score) / best_sim if best_sim > 0 else 0.0)
    return out


def order(candidates: list[ScoredLearning], ranking: str) -> list[ScoredLearning]:
    """``default``: the hits that answer the task (``answering``) by prominence (times
    match and relevance) and MMR, then the rest by match; ``prominence``: the same without MMR;
    ``reference``: the reference's relevance x prominence x scope and MMR over every
    candidate; ``relevance`` alone."""
    by_relevance = sorted(candidates, key=lambda c: -c.relevance)
    if ranking == RELEVANCE:
        return by_relevance
    if ranking == REFERENCE:
        return mmr(candidates, len(candidates))
    strong = answering(by_relevance, RELEVANCE_GATE, MATCH_GATE)
    # The rest by how well they match the task: relevance is scaled to each tier's best,
    # so a tier's best loose hit would otherwise lead the other tier's closer ones.
    rest = sorted((c for c in by_relevance if c not in strong and c.prominence > 0),
                  key=lambda c: -c.match)  # fmt: skip
    if ranking == PROMINENCE:
        return sorted(strong, key=lambda c: -c.answer_score) + rest
    return mmr(strong, len(strong), value=lambda c: c.answer_score) + rest


def within_budgets(
    ordered: list[ScoredLearning], limit: int, budgets: dict[str, int]
) -> list[ScoredLearning]:
    """The first ``limit`` hits, skipping any whose type has used its character budget."""
    used: dict[str, int] = {}
    out: list[ScoredLearning] = []
    for c in ordered:
        kind = c.meta["type"]
        if kind in budgets and used.get(kind, 0) + len(c.text) > budgets[kind]:
            continue
        used[kind] = used.get(kind, 0) + len(c.text)
        out.append(c)
        if len(out) >= limit:
            break
    return out


def hit(c: ScoredLearning) -> dict[str, Any]:
    meta = c.meta
    hit: dict[str, Any] = {
        "id": meta["id"], "tier": c.tier, "file": c.path, "line": meta["line"],
        "type": meta["type"], "domain": meta["domain"], "importance": meta["importance"],
        "reinforcement_count": meta["reinforcement_count"],
        "last_reinforced": meta["last_reinforced"], "status": meta["status"],
        "institutional": meta["institutional"], "text": c.text,
        "relevance": round(c.relevance, 6), "prominence": round(c.prominence, 6),
        "scope_factor": c.scope_factor, "score": round(c.score, 6),
    }  # fmt: skip
    finding = scan_remembered(c.text)
    if finding is not None:  # say so; the MCP tools withhold the text
        hit["flagged"] = {"category": finding.category, "pattern": finding.pattern}
    return hit
