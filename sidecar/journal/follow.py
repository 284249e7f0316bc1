"""At recall, a hit that a later event probably updates brings that event in, right above it.

The pairs come from the index (``links``: found when the later event was folded, by the
rare words the two share); here, with both texts in hand, a pair counts as an update
when the later *reports a change* (``change.reports_change``) and they share at least
``WORDS_CHANGE`` (any kept pair when the later names a name of the earlier), however
many words they share: a later event sharing nearly half the earlier's rare words but
giving no new value (a check, a report) is a follow-up. Letting such pairs through
without the test put a follow-up above an answer never updated once more on the fifth
held-out set in each mode, and (with identifiers and counted words read as values,
``change``) caught no restated pair the test misses. An explicit ``supersedes`` from the writer is
the strongest link (its older is shown only when superseded events are asked for).

A later event that shares rare words with many earlier ones (a weekly status line) is a
hub, not an update of each: a pair counts only when each is the other's closest partner
that qualifies, so links never add up to a recency order. Each hit brings in at most one
event, and only into places relevance left free: displacing a tenth hit for a linked event
cost 0.035 recall@10 on LoCoMo's conversations, where turns sharing rare words abound.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sidecar.journal.change import reports_change, shares_a_name
from sidecar.journal.events import payload_text
from sidecar.journal.links import CANDIDATE, kept_pairs

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
WORDS_NAMED = CANDIDATE  # ...or any kept pair, when the later also names the earlier's name
SUPERSEDES = 1.0  # a writer's explicit link outweighs any found one
MEANING_CANDIDATE = 0.4  # vectors: partners at least this close are looked at
MEANING_CHANGE = 0.5  # ...and count with a change reported
MEANING_DISCOUNT = 0.25
MEANING_PARTNERS = 10


def text(row: Row) -> str:
    return f"{row.summary}\n{payload_text(json.loads(row.payload))}"


Near = Callable[[list[str]], dict[str, list[tuple[str, float]]]]


def updates_of(
    tj: TierJournal,
    hits: Sequence[Hit],
    filters: Filters,
    now: float,
    near: Near,
    gives: Callable[[Row], bool] | None = None,
) -> dict[str, tuple[Row, float, str]]:
    """For each hit a later event probably updates: (that event, score, how found). A pair
    is found by the rare words the two share (the index's ``updates``) or, with vectors, by
    meaning (``near(ids)``: each event's closest others, cosine at least
    ``MEANING_CANDIDATE``). It counts only when each is the other's closest partner that
    qualifies (``qualifies``): a later event close to many earlier ones updates one at most.
    A later event that ``gives`` nothing of what the question asks for is left out."""
    assert tj.index is not None
    olders = {h.row.id: h.row for h in hits}
    explicit = {h.row.superseded_by: h.row.id for h in hits  # (a line naming itself: none)
                if h.row.superseded_by not in (None, h.row.id)}  # fmt: skip
    conn = tj.index.reader()
    found = _pairs(kept_pairs(conn, "older", list(olders), WORDS_NAMED), near(list(olders)))
    wanted = {n for pairs in found.values() for n in pairs} | set(explicit)
    rows = {r.id: r for r in tj.index.fetch("id", wanted, filters, now)}
    rows = {n: r for n, r in rows.items() if gives is None or gives(r) or n in explicit}
    later = {o: {n: f for n, f in pairs.items() if n in rows and rows[n].ts > olders[o].ts}
             for o, pairs in found.items() if o in olders}  # fmt: skip
    candidates = [n for pairs in later.values() for n in pairs]
    theirs = _pairs(
        [(o, n, w) for o, n, w in kept_pairs(conn, "newer", candidates, WORDS_NAMED)],
        near(candidates),
        reverse=True,
    )
    known = {**olders, **rows}
    missing = {o for pairs in theirs.values() for o in pairs} - known.keys()
    known.update({r.id: r for r in tj.index.fetch("id", missing)})
    closest: dict[str, str] = {}  # newer -> its closest qualifying earlier partner
    for newer, pairs in theirs.items():
        earlier = [(o, f) for o, f in pairs.items() if o in known and known[o].ts < known[newer].ts]
        for older, (words, cosine) in sorted(earlier, key=lambda p: (-rank(*p[1]), p[0])):
            if qualifies(known[older], known[newer], words, cosine):
                closest[newer] = older
                break
    out: dict[str, tuple[Row, float, str]] = {}
    for newer, older in explicit.items():
        if newer in rows:
            out[older] = (rows[newer], SUPERSEDES, "supersedes")
    for older, pairs in later.items():
        for newer, (words, cosine) in sorted(pairs.items(), key=lambda p: (-rank(*p[1]), p[0])):
            if older in out or not qualifies(olders[older], rows[newer], words, cosine):
                continue
            if closest.get(newer) == older:  # else its closest qualifying partner is another
                how = "words" if words >= cosine - MEANING_DISCOUNT else "meaning"
                out[older] = (rows[newer], rank(words, cosine), how)
            break
    return out


def _pairs(
    by_words: list[tuple[str, str, float]],
    by_meaning: dict[str, list[tuple[str, float]]],
    reverse: bool = False,
) -> dict[str, dict[str, tuple[float, float]]]:
    """event -> partner -> (words, cosine): ``by_words`` as (older, newer, words), keyed by
    the older (by the newer when ``reverse``); ``by_meaning`` keyed by the event asked."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for older, newer, words in by_words:
        key, other = (newer, older) if reverse else (older, newer)
        out.setdefault(key, {})[other] = (words, 0.0)
    for key, partners in by_meaning.items():
        mine = out.setdefault(key, {})
        for other, cosine in partners:
            mine[other] = (mine.get(other, (0.0, 0.0))[0], cosine)
    return out


def rank(words: float, cosine: float) -> float:
    """One scale for the two ways of finding a pair: a cosine counts less than the same
    share of rare words (two statements on one topic are close in meaning anyway)."""
    return max(words, cosine - MEANING_DISCOUNT)


def qualifies(older: Row, newer: Row, words: float, cosine: float) -> bool:
    """The later reports a change and they share ``WORDS_CHANGE``, or are ``MEANING_CHANGE``
    close in meaning, or the later names a name of the earlier (``WORDS_NAMED``: a terse
    update shares little else, "Carla handed it to Jorge as of today")."""
    a, b = text(older), text(newer)
    close = words >= WORDS_CHANGE or cosine >= MEANING_CHANGE
    if not close and (words < WORDS_NAMED or not shares_a_name(a, b)):
        return False
    return reports_change(a, b)


def follow(
    tj: TierJournal,
    hits: list[Recalled],
    filters: Filters,
    now: float,
    k: int,
    bring: Callable[[Row, Recalled], Recalled],
    near: Near,
    gives: Callable[[Row], bool] | None = None,
) -> list[Recalled]:
    """The hits with each probable update placed directly above the hit it updates (moved
    up if it is a hit already, else brought in by ``bring(row, hit it updates)`` while
    fewer than ``k`` events were found). ``gives(row)``: does a later event give a value of
    the kind the question asks for (None: it names no kind); one that does not is not taken
    for an update. A placed event takes the score of its place, so the merge of tiers by
    score keeps the order."""
    if not hits:
        return hits
    found = updates_of(tj, hits, filters, now, near, gives)
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
    for slot, hit in enumerate(out):  # a hit pushed past the last place: just below the last
        # (a tie would let the merge of tiers, later first, put it back above)
        hit.score = scores[slot] if slot < len(scores) else math.nextafter(out[slot - 1].score, 0)
    return out
