"""Updates are local: among hits about one subject, the later comes first.

A later statement about the subject of an earlier one usually replaces it ("the
staging target moved to eu-west-2"), so a reader should meet it first. Recency as a
global factor cost LoCoMo recall (README, "Journal"): most hits are not updates of
each other, and their relevance order is the better one. So time only re-orders hits
that are about the same subject, and only among the positions they already hold: the
set of hits, and the place of every unrelated hit, stay as relevance chose them.

Two hits are about the same subject when both mention one of the query's words (the
subject asked about) and they are close in meaning: cosine at least ``SAME_COSINE``
when both have vectors, else a share of content words in common of at least
``SAME_WORDS``. A group is the best hit not yet grouped and the hits below it about its
subject; sameness is not chained through a third hit, so one word shared along a
chain of loosely related events never turns the list into a recency order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sidecar.retrieval.query import stem, terms

# MiniLM cosine of two hits about one subject, on the vectors the journal holds (an event's
# type in words, then its text: two events of one type are some 0.15 closer than their
# texts alone). On the restated-facts benchmark the older and newer statement of a fact
# have a median of 0.78 (a tenth below 0.59); an event on another matter sharing a word
# with the question, 0.46 with either (a tenth above 0.66).
SAME_COSINE = 0.6
# Without vectors: Jaccard of the two texts' content-word stems.
SAME_WORDS = 0.2


def stems(text: str) -> set[str]:
    """Content words folded by a plural ``s`` and a long word's last three letters: a
    rough stand-in for the index's porter stem, enough to see two texts share a word."""
    out = set()
    for w in terms(text):
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(stem(w))
    return out


def later_first(
    when: Sequence[float | None],
    subject: Sequence[set[str]],
    words: Sequence[set[str]],
    cosine: Callable[[int, int], float | None],
) -> list[int]:
    """The new order of hits ``0..n-1`` (given in relevance order).

    ``when``: each hit's time (None: unknown, never moved); ``subject``: the query's
    stems each hit mentions; ``words``: each hit's content stems; ``cosine(i, j)``: the
    two hits' similarity, or None when either has no vector.
    """
    n = len(when)
    dated = [i for i in range(n) if when[i] is not None and subject[i]]
    grouped: set[int] = set()
    groups: list[list[int]] = []
    for a, i in enumerate(dated):  # a group: the best hit left and the hits on its subject
        if i in grouped:
            continue
        group = [i] + [
            j for j in dated[a + 1 :] if j not in grouped and _same(i, j, subject, words, cosine)
        ]
        grouped.update(group)
        groups.append(group)
    order = list(range(n))
    for members in groups:
        if len(members) < 2:
            continue
        newest_first = sorted(members, key=lambda i: -(when[i] or 0.0))
        for slot, i in zip(members, newest_first, strict=True):  # members: in rank order
            order[slot] = i
    return order


def _same(
    i: int,
    j: int,
    subject: Sequence[set[str]],
    words: Sequence[set[str]],
    cosine: Callable[[int, int], float | None],
) -> bool:
    if not subject[i] & subject[j]:
        return False
    sim = cosine(i, j)
    if sim is not None:
        return sim >= SAME_COSINE
    union = words[i] | words[j]
    return bool(union) and len(words[i] & words[j]) / len(union) >= SAME_WORDS
