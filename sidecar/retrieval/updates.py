"""Updates are local: among hits about one subject, the later comes first.

A later statement about the subject of an earlier one usually replaces it ("the
staging target moved to eu-west-2"), so a reader should meet it first. Recency as a
global factor cost LoCoMo recall and put old answers that were never updated below
later chatter sharing their words (README, "Journal"): most hits are not updates of
each other, and their relevance order is the better one. So time only re-orders hits
that are about the same subject, and only among the positions they already hold: the
set of hits, and the place of every unrelated hit, stay as relevance chose them.

Every hit shares something with the query, so two hits sharing the query's words, or
both close to it in meaning, says little about whether they are about the same thing.
Sameness is what they have in common *beyond* the question:

- with vectors: cosine at least ``SAME_COSINE`` and, with the query's part taken out
  (the partial correlation of the two given the query), at least ``SAME_BEYOND_QUERY``;
  and closer than the query's candidates usually are to each other (``usual``: their
  mean pairwise cosine plus one standard deviation). Turns of one conversation are all
  alike (a LoCoMo question's 20 best turns average 0.50-0.60 by conversation; the
  held-out updates' candidates 0.24), so there an absolute threshold would call many of
  them restatements and reorder the list by date;
- without: both mention one of the query's words and their content words overlap by
  ``SAME_WORDS``, or by ``SAME_WORDS_SHARED`` when their words outside the query also
  overlap more than the candidates' usually do (``usual_words``: a name, the old value, a
  place; a conversation's speaker names are shared by every turn, so they do not count);
  and the later states a different value for a slot the earlier filled (``replaces``).
  Words alone find a topic, not a replacement: without that test a later follow-up on the
  topic (a complaint after the flushing run, an amendment to the trial) moved above an
  answer never updated in 8 of 8 held-out questions of v3 (sanity), 3 of 8 of v2. And,
  as with vectors, the later must be as near the earlier as the question is: it shares
  at least as many of the earlier's words as the question does.

Where the question names the kind of its answer (a date, an amount, a person), a later
hit giving no value of that kind is a follow-up whatever else it shares (``answers``).

A hit far less relevant than the one it would displace (under ``MIN_RELEVANCE_SHARE`` of
it) is not taken for its update: it would jump many places on a loose likeness. A group
is the best hit not yet grouped and the hits below it about its subject; sameness is not
chained through a third hit, so one likeness along a chain of loosely related events
never turns the list into a recency order.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Sequence

from sidecar.retrieval.query import terms

# MiniLM cosines on the vectors the journal holds (an event's type in words, then its
# text). Held-out update pairs (bench/data/updates_heldout.json): the two statements have a
# median cosine of 0.64 and a median partial cosine given the question of 0.38; an old
# answer never updated and a later event sharing the question's words, 0.36 and 0.15.
SAME_COSINE = 0.5
SAME_BEYOND_QUERY = 0.3
# Without vectors: Jaccard of the two texts' content-word stems.
SAME_WORDS = 0.15
SAME_WORDS_SHARED = 0.1
MIN_RELEVANCE_SHARE = 0.3
# How many of the query's best candidates say what closeness is usual: 190 pairs. Twenty
# and forty (the pool at k = 10) gave the same figures on every set measured.
BACKGROUND = 20


def stems(text: str) -> set[str]:
    """Content words folded (``fold``): a rough stand-in for the index's porter stem,
    enough to see two texts share a word. Cutting a long word's last three letters read
    "refreshed" and "refresh" as two words (restated pair 37, "Staging DB refresh")."""
    return {fold(w) for w in terms(text)}


def fold(word: str) -> str:
    """A word without its inflection ("refreshes", "refreshed", "refreshing" ->
    "refresh"), cut to its first five letters ("updat" for "update" and "updated")."""
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    return word[:5]


# A short form written in capitals ("LB", "DB", "SLO", "VMs"): it may stand for words.
_SHORT = re.compile(r"\b[A-Z][A-Z0-9]{1,3}(?=s?\b)")


def expands(short: str, words: Sequence[str]) -> list[str]:
    """The words at the start of ``words`` that ``short`` (at most four letters, lower
    case) is written for, or none: their initials ("lb": "load balancer", "rpm": "requests
    per minute"), or one word's letters in order from its first ("db": "database", "s":
    "seconds", "mb": "megabytes")."""
    if not 0 < len(short) <= 4 or not words or len(words[0]) <= len(short):
        return []
    if len(short) > 1 and "".join(w[:1] for w in words[: len(short)]) == short:
        return list(words[: len(short)])
    head = words[0]
    rest = iter(head[1:])
    return [head] if head[0] == short[0] and all(ch in rest for ch in short[1:]) else []


def spelled_out(text: str, query: str) -> set[str]:
    """The stems of the query's words that a short form in ``text`` stands for ("Raised
    LB idle timeout" holds "load balancer" for "What is the load balancer idle timeout?"),
    so two statements, one written short, share the words they both name."""
    asked = terms(query)
    out: set[str] = set()
    for match in _SHORT.finditer(text):
        short = match.group().lower()
        if short in asked:
            continue
        for i in range(len(asked)):
            if found := expands(short, asked[i:]):
                out |= stems(" ".join(found))
                break
    return out


def later_first(
    when: Sequence[float | None],
    subject: Sequence[set[str]],
    words: Sequence[set[str]],
    cosine: Callable[[int, int], float | None],
    *,
    to_query: Sequence[float | None] | None = None,
    relevance: Sequence[float] | None = None,
    usual: Callable[[], float | None] | None = None,
    usual_words: Callable[[], float | None] | None = None,
    replaces: Callable[[int, int], bool] | None = None,
    answers: Sequence[bool] | None = None,
) -> list[int]:
    """The new order of hits ``0..n-1`` (given in relevance order).

    ``when``: each hit's time (None: unknown, never moved); ``subject``: the query's
    stems each hit mentions; ``words``: each hit's content stems; ``cosine(i, j)``: the
    two hits' similarity, or None when either has no vector; ``to_query``: each hit's
    cosine to the query (None: unknown); ``relevance``: each hit's relevance; ``usual``:
    the cosine two of the query's candidates usually reach (None: not known);
    ``usual_words``: the same for the overlap of their words outside the query
    (``usual_overlap``). Both are asked at most once, and only when a pair comes close
    enough for them to decide: most recalls never pay for them. ``replaces(i, j)``: does
    the later hit ``j`` restate a value the earlier ``i`` gave (None: not asked); asked of
    two hits alike in words only, whose likeness says they share a topic, not a slot.
    ``answers``: does each hit give a value of the kind the question asks for (None: the
    question names no kind); a later hit that does not never moves above an earlier one.
    """
    n = len(when)
    near = list(to_query) if to_query is not None else [None] * n
    rel = list(relevance) if relevance is not None else [1.0] * n
    asked = set().union(*subject) if n else set()
    usual_cosine = functools.cache(usual or _unknown)
    usual_outside = functools.cache(usual_words or _unknown)

    def same(i: int, j: int) -> bool:
        if rel[j] < MIN_RELEVANCE_SHARE * rel[i]:
            return False
        if answers is not None and not answers[j if (when[j] or 0.0) > (when[i] or 0.0) else i]:
            return False  # the later gives nothing of what is asked: a follow-up
        sim, qi, qj = cosine(i, j), near[i], near[j]
        if sim is not None and qi is not None and qj is not None:
            if sim < SAME_COSINE or beyond_query(sim, qi, qj) < SAME_BEYOND_QUERY:
                return False
            return sim >= (usual_cosine() or 0.0)
        if not alike_in_words(subject[i] & subject[j], asked, words[i], words[j], usual_outside):
            return False
        earlier, later = (i, j) if (when[i] or 0.0) <= (when[j] or 0.0) else (j, i)
        if len(words[earlier] & words[later]) < len(subject[earlier]):
            return False  # the question restates the earlier better than the later does
        return replaces is None or replaces(earlier, later)

    dated = [i for i in range(n) if when[i] is not None]
    grouped: set[int] = set()
    order = list(range(n))
    for a, i in enumerate(dated):  # a group: the best hit left and the hits on its subject
        if i in grouped:
            continue
        group = [i] + [j for j in dated[a + 1 :] if j not in grouped and same(i, j)]
        grouped.update(group)
        newest_first = sorted(group, key=lambda g: -(when[g] or 0.0))
        for slot, g in zip(group, newest_first, strict=True):  # group: in rank order
            order[slot] = g
    return order


def _unknown() -> float | None:
    return None


def beyond_query(sim: float, qi: float, qj: float) -> float:
    """The two hits' closeness with the query's part taken out: the partial correlation of
    their cosines given the query's (0 when either is the query itself)."""
    rest = (1.0 - qi * qi) * (1.0 - qj * qj)
    return (sim - qi * qj) / math.sqrt(rest) if rest > 1e-9 else 0.0


def alike_in_words(
    both: set[str],
    asked: set[str],
    wi: set[str],
    wj: set[str],
    usual_words: Callable[[], float | None],
) -> bool:
    """Both name a word of the query (``both``), and they share enough words: fewer when
    their words outside the query (``asked``) overlap more than the candidates' usually
    do (the query's words are what every hit shares)."""
    if not both:
        return False
    union = wi | wj
    share = len(wi & wj) / len(union) if union else 0.0
    if share >= SAME_WORDS:
        return True
    if share < SAME_WORDS_SHARED:
        return False
    beyond = outside_overlap(wi, wj, asked)
    return beyond > 0.0 and beyond >= (usual_words() or 0.0)


def outside_overlap(wi: set[str], wj: set[str], asked: set[str]) -> float:
    """Jaccard of two texts' words that are not the query's."""
    a, b = wi - asked, wj - asked
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def usual_overlap(words: Sequence[set[str]], asked: set[str]) -> float | None:
    """How much two of the query's candidates usually share outside the query's words: the
    mean of their pairwise ``outside_overlap`` plus one standard deviation (None with fewer
    than three)."""
    if len(words) < 3:
        return None
    outside = [w - asked for w in words]
    pairs = [len(a & b) / (len(a | b) or 1) for a, b in itertools.combinations(outside, 2)]
    mean = sum(pairs) / len(pairs)
    return mean + math.sqrt(sum((x - mean) ** 2 for x in pairs) / len(pairs))
