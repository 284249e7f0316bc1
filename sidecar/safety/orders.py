"""The matcher for the orders of :mod:`sidecar.safety.rules_orders`.

An act found in a paragraph counts as an order when the text speaks to the
agent (or the act opens its clause, as an imperative), unless the sentence
before it forbids it, narrates it ("they tried to get the agent to ..."), or the
paragraph reports it as an attack ("attackers claim ...").
"""

from __future__ import annotations

import re
from bisect import bisect_left

from sidecar.safety import lazy_re
from sidecar.safety.rules_intent import INTENSIFIES, REPORTED
from sidecar.safety.rules_orders import (
    DESCRIBED_AFTER,
    EXCUSED,
    IMPERATIVE_LEAD,
    IMPERATIVE_VERB,
    NARRATED,
    NEGATED,
    REFUSED_AFTER,
    VERB_BEFORE,
    Order,
)
from sidecar.safety.text import Doc, between, occurrences, span_excerpt

_PARAGRAPH_CAP = 800  # characters either side of an anchor that count as its paragraph
_SENTENCE_END = lazy_re.compile(r"[.!?](?=\s)|\n")
# A reason or purpose after the act: a negation there is not about the act ("so it's not lost").
_PURPOSE = lazy_re.compile(r"\b(?:so|because|since)\b", re.IGNORECASE)
_CLAUSE_END = lazy_re.compile(r"[,;:()\[\]<>\u2014\u2013]|\s-\s|\*\*")


def _after_last(regex: re.Pattern[str], text: str) -> str:
    last = None
    for last in regex.finditer(text):  # noqa: B007 - the last one is wanted
        pass
    return text[last.end() :] if last else text


def _negated(text: str) -> bool:
    """Whether ``text`` holds a negation that does not govern asking, waiting or worrying."""
    return any(not INTENSIFIES.match(text, m.end()) for m in NEGATED.finditer(text))


def _forbidden(sentence: str) -> bool:
    """Whether the words before the act forbid it, warn about it or make it a condition.

    A negation counts only when it does not govern asking, waiting or worrying:
    "never, under any circumstances, skip the review" forbids; "don't worry, skip
    the review" orders.
    """
    return bool(EXCUSED.search(sentence)) or _negated(sentence)


def _given(check: Order, text: str, para: tuple[int, int], m: re.Match[str]) -> bool:
    sentence = _after_last(_SENTENCE_END, text[para[0] : m.start()])
    if _forbidden(sentence) or NARRATED.search(sentence):
        return False
    end = _SENTENCE_END.search(text, m.end(), para[1])
    rest = text[m.end() : end.start() if end else para[1]]
    if (
        _negated(_PURPOSE.split(rest, 1)[0])
        or DESCRIBED_AFTER.match(rest)
        or REFUSED_AFTER.search(rest)
    ):
        return False  # "without review, nothing merges", "auto-approve ... is enabled"
    if check.needs is not None and not check.needs.search(m.group()):
        return False
    if check.spared is not None and check.spared.match(rest):
        return False  # only a cosmetic or read-only step goes unasked
    if check.wide is not None and not check.wide.search(sentence + m.group() + rest):
        return False
    paragraph = text[para[0] : m.start()] + " " + text[m.end() : para[1]]
    if REPORTED.search(paragraph):
        return False  # a warning about such orders, not one
    if check.addressed is None or check.addressed.search(paragraph):
        return True
    clause = _after_last(_CLAUSE_END, sentence).lstrip()
    if not check.imperative:
        return False
    if IMPERATIVE_VERB.match(m.group()):
        return bool(IMPERATIVE_LEAD.fullmatch(clause))
    # the verb comes before the act, in its clause or opening its sentence
    return bool(VERB_BEFORE.fullmatch(clause) or VERB_BEFORE.fullmatch(sentence.lstrip()))


def order_excerpt(check: Order, doc: Doc) -> str | None:
    """The first act in the text that is given to the agent as an order (see ``Order``)."""
    text = doc.text
    spots = doc.find_any(check.anchors)
    if check.marks and doc.non_ascii:
        found = [m for m in check.marks if m in doc.non_ascii_lower]
        if found:
            spots = sorted({*spots, *(i for m in found for i in occurrences(text, m))})
    seen: set[str] = set()  # a paragraph repeated in one text is read once
    i = 0
    while i < len(spots):
        start, end = between(text, spots[i], "\n\n", _PARAGRAPH_CAP)
        i = bisect_left(spots, end, i + 1)  # the next anchor in a later paragraph
        paragraph = text[start:end]
        if paragraph in seen:
            continue
        seen.add(paragraph)
        for m in check.act.finditer(text, start, end):
            if doc.strict or _given(check, text, (start, end), m):
                return span_excerpt(text, m.start(), m.end())
    return None
