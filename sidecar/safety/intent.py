"""Matchers for the intent rules of :mod:`sidecar.safety.rules_intent`.

Each function takes its check (the data) and a :class:`~sidecar.safety.text.Doc`
and returns an excerpt of the first hit, or None. Like the other matchers,
none runs a regex over the whole text: each starts from literal anchors.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sidecar.safety.clauses import clause_after, clause_before
from sidecar.safety.rules_i18n import Lang
from sidecar.safety.rules_intent import (
    REPORTED,
    Authority,
    Exchange,
    Foreign,
    LineOpen,
    Quoted,
)
from sidecar.safety.text import (
    Doc,
    between,
    excerpt,
    plain_line,
    span_excerpt,
)

_OPEN_QUOTES = "\"'`\u201c\u2018\u00ab\u201e\u2039"
_PARAGRAPH_CAP = 800  # characters either side of an anchor that count as its paragraph


# --- other languages ----------------------------------------------------------------------------


def _lang_lines(lang: Lang, doc: Doc) -> list[tuple[int, int]]:
    """Line spans holding one of the language's anchors or marks, in order, each once."""
    text = doc.text
    spots = list(doc.find_any(lang.anchors)) if lang.anchors else []
    if lang.marks and doc.non_ascii:
        for mark in (m for m in lang.marks if m in doc.non_ascii_lower):
            for form in {mark, mark.capitalize(), mark.upper()}:
                i = text.find(form)
                while i >= 0:
                    spots.append(i)
                    i = text.find(form, i + 1)
    spans: list[tuple[int, int]] = []
    for pos in sorted(spots):
        if spans and spans[-1][0] <= pos < spans[-1][1]:
            continue
        spans.append(plain_line(text, pos))
    return spans


def _foreign_order(lang: Lang, line: str) -> re.Match[str] | None:
    """The verb of an override order in ``line``, if the object goes with it and no negation."""
    for v in lang.verb.finditer(line):
        before, after = line[: v.start()], line[v.end() :]
        if before.rstrip()[-1:] in _OPEN_QUOTES and before.rstrip():
            continue  # quoted: the quoted-override rule judges it
        if lang.neg_before and lang.neg_before.search(before[-20:]):
            continue
        if lang.neg_after and lang.neg_after.match(after):
            continue
        windows = [clause_after(after)[:120]]
        if lang.object_first:
            windows.append(clause_before(before)[-60:])
        if lang.everything and lang.everything.search(windows[0][:60]):
            return v
        if any(lang.noun.search(w) and lang.qual.search(w) for w in windows):
            return v
    return None


def foreign_excerpt(check: Foreign, doc: Doc) -> str | None:
    """An override order in one of the check's languages."""
    text = doc.text
    for lang in check.langs:
        seen: set[str] = set()  # a line repeated in one text is read once
        for start, end in _lang_lines(lang, doc):
            line = text[start:end]
            if line in seen:
                continue
            seen.add(line)
            low = line.lower()
            if lang.hints and not any(h in low for h in lang.hints):
                continue
            if lang.markers and not any(m in low for m in lang.markers):
                continue
            v = _foreign_order(lang, text[start:end])
            if v:
                return span_excerpt(text, start + v.start(), start + v.end())
    return None


# --- quoted orders ------------------------------------------------------------------------------


def quoted_excerpt(check: Quoted, inner: Callable[[Doc], str | None], doc: Doc) -> str | None:
    """An override order inside quotes, backticks, a link title or an HTML attribute."""
    text = doc.text
    needles = tuple(a.decode() for a in check.anchors)
    judged: dict[str, str | None] = {}  # a quotation repeated in one text is judged once
    for start, end in doc.lines(check.anchors, logical=False):
        if not any(q in text[start:end] for q in _OPEN_QUOTES):
            continue
        for m in check.segment.finditer(text, start, end):
            index = next(i for i, g in enumerate(m.groups(), 1) if g is not None)
            quoted = m.group(index)
            low = quoted.lower()
            if not any(n in low for n in needles):
                continue
            if quoted not in judged:
                judged[quoted] = inner(Doc(quoted, strict=doc.strict))
            if judged[quoted] is None:
                continue
            prefix = text[start : m.start()]
            if check.attribute.search(prefix):
                return excerpt(quoted)
            after = text[m.end() : end]
            sentence = clause_before(prefix)
            if check.mention.search(sentence) and not check.act_on.match(after):
                continue
            first = min(low.find(n) for n in needles if n in low)
            if (
                check.goes_on.search(quoted, first + 12)
                or re.match(r"[\s,;]*(?:and\s+)?then\b", after)
                or check.act_on.match(after)
            ):
                return excerpt(quoted)
    return None


# --- forged authority ---------------------------------------------------------------------------


def _paragraph(text: str, pos: int) -> tuple[int, int]:
    return between(text, pos, "\n\n", _PARAGRAPH_CAP)


def authority_excerpt(check: Authority, doc: Doc) -> str | None:
    """An order to drop a safeguard in a paragraph that claims to come from an authority."""
    text = doc.text
    done, seen = -1, set()
    for pos in doc.find_any(check.anchors):
        if pos < done:
            continue
        start, end = _paragraph(text, pos)
        done = end
        para = text[start:end]
        if para in seen:
            continue
        seen.add(para)
        low = para.lower()
        if not any(h in low for h in check.claim_hints) or not check.claim.search(para):
            continue
        if not doc.strict and REPORTED.search(para):
            continue  # a warning about such claims ("phishing mails claim to be ..."), not one
        for m in check.directive.finditer(para):
            if not check.negated.search(para, max(0, m.start() - 80), m.start()):
                return span_excerpt(text, start + m.start(), start + m.end())
    return None


# --- fake turns ---------------------------------------------------------------------------------


def line_open_excerpt(check: LineOpen, doc: Doc) -> str | None:
    """A line opening with the check's regex, e.g. a chat-template token or a fake block end."""
    text = doc.text
    for start, _ in doc.lines(check.anchors, logical=False):
        m = check.regex.match(text, start, min(len(text), start + 400))
        if m:
            return span_excerpt(text, m.start(), m.end())
    return None


def exchange_excerpt(check: Exchange, doc: Doc) -> str | None:
    """A scripted exchange in which the assistant agrees to drop a safeguard."""
    text = doc.text
    for start, end in doc.lines(check.anchors, logical=False):
        m = check.complies.match(text, start, end)
        if m and check.user_turn.search(text, max(0, start - 2000), min(len(text), end + 2000)):
            return span_excerpt(text, m.start(), m.end())
    return None
