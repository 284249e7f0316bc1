"""Recall from one tier: the sparse and dense legs, the filters, the ranking, the walk.

Runs on a reader thread against the committed index and the in-memory vectors,
so a recall never waits for an append being synced.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from sidecar.index.store import QuerySyntaxError
from sidecar.journal import answers, follow, ranking
from sidecar.journal.change import reports_change
from sidecar.journal.events import iso, payload_text
from sidecar.journal.index import Filters, Row
from sidecar.journal.ranking import Candidate
from sidecar.retrieval import query as planner
from sidecar.retrieval import updates
from sidecar.safety import scan_remembered

if TYPE_CHECKING:
    from sidecar.crew.client import LeadClient
    from sidecar.journal.tier import EventVectors, TierJournal
    from sidecar.retrieval.embedders.base import Vectors


@dataclass(frozen=True, slots=True)
class RecallQuery:
    text: str
    k: int
    filters: Filters
    walk: int = 0
    ranking: str = ranking.DEFAULT_RANKING


@dataclass(slots=True)
class Recalled:
    row: Row
    tier: str
    score: float
    relevance: float
    importance: float
    candidate: Candidate
    body: dict[str, Any] | None = None  # to_json, made on the reader thread
    update_of: dict[str, Any] | None = None  # the hit this one probably updates (``follow``)

    def to_json(self, now: float) -> dict[str, Any]:
        body = self.row.to_json()
        flag = flagged(self.row)
        if flag is not None:
            body["flagged"] = flag
        return {
            **body,
            "tier": self.tier,
            "score": round(self.score, 6),
            "relevance": round(self.relevance, 6),
            "importance": round(self.importance, 6),
            "age_s": round(max(0.0, now - self.row.ts), 3),
            "ranks": {
                "sparse": self.candidate.ranks.get("sparse"),
                "dense": self.candidate.ranks.get("dense"),
            },
            "cosine": None if self.candidate.cosine is None else round(self.candidate.cosine, 6),
            **({"update_of": self.update_of} if self.update_of else {}),
        }


def flagged(row: Row) -> dict[str, str] | None:
    """The scanner's verdict on an event's text: the one stored with it, or (for an event
    the background scan has not reached yet) read now and remembered by digest."""
    if row.flag is not None:
        return json.loads(row.flag) if row.flag else None
    return verdict(f"{row.summary}\n{payload_text(json.loads(row.payload))}")


def verdict(text: str) -> dict[str, str] | None:
    finding = scan_remembered(text)
    if finding is None:
        return None
    return {"category": finding.category, "pattern": finding.pattern}


def _sparse(
    tj: TierJournal, text: str, filters: Filters, now: float, pool: int
) -> tuple[list[tuple[int, float]], str | None]:
    assert tj.index is not None
    planned = planner.plan(text)
    if planned is None:
        return [], None
    try:
        return tj.index.sparse(planned.match, filters, now, pool), planned.mode
    except QuerySyntaxError:
        if planned.match == planned.fallback:
            raise
        return tj.index.sparse(planned.fallback, filters, now, pool), planner.MODE_FALLBACK


def sparse_leg(
    tj: TierJournal, q: RecallQuery, now: float
) -> tuple[list[tuple[int, float]], str | None]:
    """BM25's pool, and how the query was read (terms, fts5, ...): it runs while the
    query is being embedded."""
    return _sparse(tj, q.text, q.filters, now, ranking.pool_size(q.k))


def recall_tier(
    tj: TierJournal,
    q: RecallQuery,
    sparse: list[tuple[int, float]],
    qvec: Vectors | None,
    now: float,
) -> list[Recalled]:
    """The tier's best ``q.k`` events from BM25's pool and the dense leg."""
    assert tj.index is not None
    pool = ranking.pool_size(q.k)
    by_seq = tj.index.fetch("seq", [seq for seq, _ in sparse])
    rows = {r.seq: r for r in by_seq}
    cands: dict[str, Candidate] = {}
    for rank, (seq, bm25) in enumerate(sparse, start=1):
        row = rows.get(seq)
        if row is not None:
            cands[row.id] = Candidate(row.id, bm25, ranks={"sparse": rank})
    by_id = {r.id: r for r in by_seq}
    vectors = tj.vectors
    if qvec is not None and vectors is not None and len(vectors):
        import numpy as np  # only with vectors: a sparse-only daemon never loads it

        ids, matrix = vectors.matrix()
        sims = matrix @ qvec
        top = np.argpartition(-sims, pool)[:pool] if len(ids) > pool else np.arange(len(ids))
        top = top[np.argsort(-sims[top], kind="stable")]
        dense_ids = [ids[i] for i in top]
        fresh = [i for i in dense_ids if i not in by_id]
        for row in tj.index.fetch("id", fresh, q.filters, now):
            by_id[row.id] = row
        rank = 0
        for i in top:
            event_id = ids[i]
            if event_id not in by_id:
                continue  # filtered out
            rank += 1
            cand = cands.setdefault(event_id, Candidate(event_id))
            cand.cosine, cand.ranks["dense"] = float(sims[i]), rank
        positions = vectors.positions
        for cand in cands.values():  # BM25 candidates the dense pool did not reach
            if cand.cosine is None and cand.id in positions:
                cand.cosine = float(matrix[positions[cand.id]] @ qvec)
    rel = ranking.relevance(list(cands.values()))
    top_bm25 = max((c.bm25 for c in cands.values() if c.bm25 is not None), default=0.0)
    out = []
    for event_id, relevance in rel.items():
        row = by_id[event_id]
        age = now - row.ts
        importance = ranking.importance_now(row.base, row.floor, age, row.refs)
        weight = ranking.standing(row.base, row.floor, row.refs)
        cand = cands[event_id]
        score = ranking.score(q.ranking, relevance, importance, cand, age, top_bm25, weight)
        out.append(Recalled(row, tj.tier.name, score, relevance, importance, cand))
    if q.ranking in ranking.PICKED_BY_RELEVANCE:
        # Relevance decides which events answer; importance decides their order. Letting
        # importance pick members cost 0.05-0.14 recall@10 on LoCoMo (docs/journal.md).
        out.sort(key=lambda r: (-r.relevance, -r.row.ts, r.row.id))
        out = out[: q.k]
    out.sort(key=lambda r: (-r.score, -r.row.ts, r.row.id))
    out = out[: q.k]
    if q.ranking == "updates":
        best = sorted(rel, key=rel.__getitem__, reverse=True)[: updates.BACKGROUND]
        kind = answers.asks(q.text)
        gives = None if kind is None else partial(_gives, kind)
        out = later_first(out, q.text, tj.vectors, [by_id[i] for i in best], gives)

        def bring(row: Row, hit: Recalled) -> Recalled:
            importance = ranking.importance_now(row.base, row.floor, now - row.ts, row.refs)
            return Recalled(row, hit.tier, hit.score, 0.0, importance, Candidate(row.id))

        out = follow.follow(tj, out, q.filters, now, q.k, bring, partial(near, tj.vectors), gives)
    for r in out:  # serialised here, where a scan of unread text does not hold the loop
        r.body = r.to_json(now)
    return out


def usual_closeness(vectors: EventVectors | None, pool: list[Row]) -> float | None:
    """How close two of the query's best candidates usually are: the mean of their pairwise
    cosines plus one standard deviation (None with fewer than three vectors). Two hits
    must be closer than that to be one subject (``retrieval.updates``)."""
    if vectors is None:
        return None
    _, matrix = vectors.matrix()
    rows = [r for r in (vectors.positions.get(row.id) for row in pool) if r is not None]
    rows = [r for r in rows if r < len(matrix)]
    if len(rows) < 3:
        return None
    import numpy as np  # only with vectors

    picked = matrix[rows]
    sims = (picked @ picked.T)[np.triu_indices(len(rows), 1)]
    return float(sims.mean() + sims.std())


def near(vectors: EventVectors | None, ids: list[str]) -> dict[str, list[tuple[str, float]]]:
    """Each event's closest others by meaning (``follow.MEANING_PARTNERS`` at most, cosine
    at least ``follow.MEANING_CANDIDATE``): one product of the tier's vectors with the
    events' own, for the few events a recall asks about."""
    if vectors is None or not ids:
        return {}
    all_ids, matrix = vectors.matrix()
    asked = [(i, r) for i in ids if (r := vectors.positions.get(i)) is not None and r < len(matrix)]
    if not asked:
        return {}
    import numpy as np  # only with vectors

    sims = matrix @ matrix[[r for _, r in asked]].T  # (events, asked)
    top = min(follow.MEANING_PARTNERS + 1, len(all_ids))
    out: dict[str, list[tuple[str, float]]] = {}
    for col, (event_id, row) in enumerate(asked):
        column = sims[:, col]
        best = np.argpartition(-column, top - 1)[:top]
        out[event_id] = [
            (all_ids[j], float(column[j]))
            for j in best
            if j != row and column[j] >= follow.MEANING_CANDIDATE
        ]
    return out


def words(row: Row) -> set[str]:
    return updates.stems(f"{row.summary}\n{payload_text(json.loads(row.payload))}")


def _gives(kind: str, row: Row) -> bool:
    return answers.gives(kind, follow.text(row))


def later_first(
    hits: list[Recalled],
    query: str,
    vectors: EventVectors | None,
    pool: list[Row],
    gives: Callable[[Row], bool] | None = None,
) -> list[Recalled]:
    """Among hits about one subject, the later event first (``retrieval.updates``); the
    set of hits and every other hit's place stay as relevance and standing chose. What is
    usual closeness is read from ``pool``, the query's best candidates. ``gives(row)``:
    does the event give a value of the kind the question asks for (None: it names no
    kind). A moved hit takes the score of the place it moves to, so the merge of tiers by
    score keeps the order."""
    asked = updates.stems(query)
    hit_words = [words(h.row) | updates.spelled_out(follow.text(h.row), query) for h in hits]
    known = {h.row.id: w for h, w in zip(hits, hit_words, strict=True)}
    rows = [vectors.positions.get(h.row.id) for h in hits] if vectors is not None else []
    matrix = vectors.matrix()[1] if any(r is not None for r in rows) else None

    def cosine(i: int, j: int) -> float | None:
        a, b = (rows[i], rows[j]) if matrix is not None else (None, None)
        if a is None or b is None or max(a, b) >= len(matrix):
            return None
        return float(matrix[a] @ matrix[b])

    order = updates.later_first(
        [h.row.ts for h in hits],
        [w & asked for w in hit_words],
        hit_words,
        cosine,
        to_query=[h.candidate.cosine for h in hits],
        relevance=[h.relevance for h in hits],
        usual=lambda: usual_closeness(vectors, pool),
        usual_words=lambda: updates.usual_overlap(
            [known.get(row.id) or words(row) for row in pool], asked
        ),
        replaces=lambda i, j: reports_change(follow.text(hits[i].row), follow.text(hits[j].row)),
        answers=None if gives is None else [gives(h.row) for h in hits],
    )
    scores = [h.score for h in hits]
    out = [hits[i] for i in order]
    for slot, hit in enumerate(out):  # the place's score: merging tiers by score keeps it
        hit.score = scores[slot]
    return out


def neighbours(
    tj: TierJournal, hits: list[Recalled], filters: Filters, now: float
) -> dict[str, list[dict[str, Any]]]:
    """One hop along relations from each hit, to events that pass the same filters."""
    assert tj.index is not None
    links = tj.index.neighbours([h.row.id for h in hits])
    others = {other for edges in links.values() for other, _, _ in edges}
    rows = {r.id: r for r in tj.index.fetch("id", others, filters, now)}
    out: dict[str, list[dict[str, Any]]] = {}
    for event_id, edges in links.items():
        seen: set[str] = set()
        shown = []
        for other, relation, weight in sorted(edges, key=lambda e: -e[2]):
            row = rows.get(other)
            if row is None or other in seen:
                continue
            seen.add(other)
            entry = {
                "id": other,
                "relation": relation,
                "weight": round(weight, 4),
                "type": row.type,
                "ts": row.to_json()["ts"],
                "summary": row.summary,
            }
            flag = flagged(row)
            if flag is not None:
                entry["flagged"] = flag
            shown.append(entry)
        out[event_id] = shown
    return out


async def from_lead(
    lead: LeadClient, q: RecallQuery, mark: bool, warnings: list[str]
) -> list[dict[str, Any]]:
    """A member's crew leg: the lead's answer for the crew's high-value events (none, and a
    warning, if the lead does not answer)."""
    f = q.filters
    body = {
        "query": q.text,
        "k": q.k,
        "scope": "crew_shared",
        "walk": q.walk,
        "mark": mark,
        "ranking": q.ranking,
        "include_superseded": f.include_superseded,
        **({"session_id": f.session_id} if f.session_id else {}),
        **({"types": list(f.types)} if f.types else {}),
        **({"since": iso(f.since)} if f.since is not None else {}),
        **({"until": iso(f.until)} if f.until is not None else {}),
    }
    answer = await lead.answer_or_note("/memory/recall", body, warnings, "own journal only")
    if answer is None:
        return []
    warnings += [f"crew: {w}" for w in answer.get("warnings", [])]
    return [h for h in answer.get("hits", []) if isinstance(h, dict) and "score" in h]
