"""At recall, a hit that a later event probably updates brings that event in, right above it.

The pairs come from the index (``links``: found when the later event was folded, by the
rare words the two share); here, with both texts in hand, a pair counts as an update
when the later *reports a change* (``links.reports_change``) and they share at least
``WORDS_CHANGE``, or they share ``WORDS_ALONE`` whatever they say. An explicit
``supersedes`` from the writer is the strongest link (its older is shown only when
superseded events are asked for).

A later event that shares rare words with many earlier ones (a weekly status line) is a
hub, not an update of each: a pair counts only when each is the other's closest partner
that qualifies, so links never add up to a recency order. Each hit brings in at most one
event, and only into places relevance left free: displacing a tenth hit for a linked event
cost 0.035 recall@10 on LoCoMo's conversations, where turns sharing rare words abound.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sidecar.journal.events import payload_text
from sidecar.journal.links import reports_change

if TYPE_CHECKING:
    from sidecar.journal.index import Filters, Row
    from sidecar.journal.tier import TierJournal


class Hit(Protocol):
    """What is read and set of a recalled event (``recall.Recalled``)."""

    row: Row
    score: float
    update_of: dict[str, Any] | None


Recalled = TypeVar("Recalled", bound=Hit)

WORDS_CHANGE = 0.2
WORDS_ALONE = 0.45
SUPERSEDES = 1.0  # a writer's explicit link outweighs any found one


def text(row: Row) -> str:
    return f"{row.summary}\n{payload_text(json.loads(row.payload))}"


def updates_of(
    tj: TierJournal, hits: Sequence[Hit], filters: Filters, now: float
) -> dict[str, tuple[Row, float, str]]:
    """For each hit a later event probably updates: (that event, score, how found). A
    found pair counts only when each is the other's closest partner that qualifies (the
    later reports a change, or they share ``WORDS_ALONE``): a later event sharing rare
    words with many earlier ones updates one of them at most."""
    assert tj.index is not None
    olders = {h.row.id: h.row for h in hits}
    pairs = tj.index.updates_of(list(olders), WORDS_CHANGE)
    explicit = {h.row.superseded_by: h.row.id for h in hits if h.row.superseded_by}
    wanted = {newer for _, newer, _ in pairs} | set(explicit)
    rows = {r.id: r for r in tj.index.fetch("id", wanted, filters, now)}
    out: dict[str, tuple[Row, float, str]] = {}
    for newer, older in explicit.items():
        if newer in rows:
            out[older] = (rows[newer], SUPERSEDES, "supersedes")
    theirs = tj.index.partners_of([n for _, n, _ in pairs if n in rows], WORDS_CHANGE)
    known = {**olders, **rows}
    missing = {o for _, o, _ in theirs} - known.keys()
    known.update({r.id: r for r in tj.index.fetch("id", missing)})
    closest: dict[str, str] = {}  # newer -> its closest qualifying earlier partner
    for older, newer, words in sorted(theirs, key=lambda p: (-p[2], p[0])):
        if newer not in closest and older in known and qualifies(known[older], known[newer], words):
            closest[newer] = older
    decided: set[str] = set(out)
    for older, newer, words in sorted(pairs, key=lambda p: (-p[2], p[1])):
        row = rows.get(newer)
        if row is None or older in decided or row.ts <= olders[older].ts:
            continue
        if qualifies(olders[older], row, words):
            decided.add(older)  # its closest qualifying later partner decides
            if closest.get(newer) == older:
                out[older] = (row, words, "words")
    return out


def qualifies(older: Row, newer: Row, words: float) -> bool:
    return words >= WORDS_ALONE or (
        words >= WORDS_CHANGE and reports_change(text(older), text(newer))
    )


def follow(
    tj: TierJournal,
    hits: list[Recalled],
    filters: Filters,
    now: float,
    k: int,
    bring: Callable[[Row, Recalled], Recalled],
) -> list[Recalled]:
    """The hits with each probable update placed directly above the hit it updates (moved
    up if it is a hit already, else brought in by ``bring(row, hit it updates)`` while
    fewer than ``k`` events were found). A placed event takes the score of its place,
    so the merge of tiers by score keeps the order."""
    if not hits:
        return hits
    found = updates_of(tj, hits, filters, now)
    if not found:
        return hits
    by_id = {h.row.id: h for h in hits}
    budget = k - len(hits)  # places left free: a hit relevance picked is never dropped
    placed: set[str] = set()
    out: list[Recalled] = []
    for hit in hits:
        if hit.row.id in placed:
            continue
        link = found.get(hit.row.id)
        if link is not None and link[0].id not in placed:
            row, score, how = link
            newer = by_id.get(row.id)
            if newer is None and budget > 0:
                budget -= 1
                newer = bring(row, hit)
            if newer is not None:
                newer.update_of = {"id": hit.row.id, "score": round(score, 4), "by": how}
                out.append(newer)
                placed.add(row.id)
        out.append(hit)
        placed.add(hit.row.id)
    scores = [h.score for h in hits]
    out = out[:k]
    for slot, hit in enumerate(out):  # a brought event past the last hit: the last score
        hit.score = scores[min(slot, len(scores) - 1)]
    return out
