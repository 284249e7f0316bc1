"""What kind of value a question asks for, and whether a statement gives one.

A later event on an answer's subject replaces the answer only if it fills the slot the
question asks about: "When does the rooftop bar close?" is answered anew by a later
date, not by "Festival season: 14 events booked for the bar"; "What is the charge for
missed appointments?" by a new amount, not by the practice's holiday dates. Where the
question names the kind of its answer (a date, a time of day, how often, how long, an
amount of money, a count, a person), a later event that gives no value of that kind is a
follow-up, not an update, and keeps its place. A question that names no kind ("which
tool", "is it still on") asks nothing of the later event.

Measured on the four development sets: where the question names a kind (92 of 176
pairs), the replacing statement gives a value of it in 88; the later same-subject
follow-ups in 130 of 267; later events beside a never-updated answer in 6 of 25.
"""

from __future__ import annotations

import re

from sidecar.journal.change import calls_off, values

Kind = str

_YES_NO = re.compile(
    r"\s*(?:is|are|do|does|did|will|would|can|could|should|has|have|had|was|were)\b", re.I
)
_ASKS: tuple[tuple[Kind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.I))
    for kind, pattern in (
        ("person", r"^\s*who\b|\bwho(?:'s| is| are| owns| runs| manages| handles| does)\b"),
        ("clock", r"\bwhat time\b|\bat what hour\b|\bwhat(?:'s| is| was) the [\w' -]*\btime\b"),
        ("period", r"\bhow (?:often|frequently|regularly)\b"),
        ("length", r"\bhow long\b|\bhow much (?:notice|time|warning|lead time)\b"),
        (
            "date",
            r"^\s*when\b|\bwhen (?:is|are|do|does|did|will|was|were|should)\b"
            r"|\b(?:what|which) (?:date|day)\b|\bdeadline\b",
        ),
        (
            "money",
            r"\bhow much\b|\b(?:price|cost|costs|fee|fees|charge|budget|salary|fare|"
            r"rent|deposit|fine|fines|bonus|spend)\b",
        ),
        ("count", r"\bhow many\b"),
    )
)
# Figures of money: a currency sign, a unit after a figure ("40 euros", "25p", "27k"), a
# share (a fee of 2.4%), the words for money, and the price of nothing ("free", "waived").
# A figure is read from the first digit of its run ("1,250.50"), so a run of figures with
# no spaces ("1,2,3,...") is scanned once, not once from each figure in it.
_MONEY = re.compile(
    r"[$€£¥%]|(?<![\d,.])\b\d[\d,.]*\s?"
    r"(?:k|m|bn|p|pence|cents?|euros?|pounds?|dollars?|quid|usd|eur|gbp)\b"
    r"|\b(?:euros?|pounds?|dollars?|pence|cents?|fiver|tenner|grand|free|waived?|no charge)\b",
    re.I,
)
_CLOCK = re.compile(
    r"\b\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm)\b|\b\d{1,2}[:.]\d{2}\b|\b(?:noon|midday|midnight)\b",
    re.I,
)
_DATE = re.compile(
    r"\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b"
    r"|\b(?:today|tonight|tomorrow|yesterday|weekend|spring|summer|autumn|fall|winter)\b"
    r"|\b(?:next|this|last) (?:week|month|year|quarter|term)\b|\bend of (?:the )?\w+\b",
    re.I,
)
_WEEKDAYS = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b", re.I)
_OFTEN = re.compile(r"\b(?:every|each|once|twice|per|a (?:day|week|month|year))\b", re.I)
_NUMBER_WORDS = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|dozen|"
    r"hundred|half|double|triple|none)\b",
    re.I,
)
_OPENING_NAME = re.compile(r"\s*[A-Z][a-z]+(?:'s)? (?!the\b)[a-z]+")


def asks(question: str) -> Kind | None:
    """The kind of value the question asks for, or None (a yes/no question, or one that
    names no kind)."""
    if _YES_NO.match(question):
        return None
    return next((kind for kind, pattern in _ASKS if pattern.search(question)), None)


def gives(kind: Kind, text: str) -> bool:
    """Whether the statement gives a value of ``kind``, or calls its subject off."""
    if calls_off(text):
        return True
    found = values(text)
    figures = any(k.startswith("figure:") for k in found)
    if kind == "clock":
        return bool(_CLOCK.search(text))
    if kind == "period":
        return bool(found.get("period") or _WEEKDAYS.search(text) or _OFTEN.search(text))
    if kind == "length":
        return bool(found.get("period")) or figures or bool(_NUMBER_WORDS.search(text))
    if kind == "money":
        return bool(_MONEY.search(text))
    if kind == "count":
        return figures or bool(_NUMBER_WORDS.search(text))
    if kind == "date":
        return bool(
            found.get("month")
            or _WEEKDAYS.search(text)
            or _DATE.search(text)
            or _CLOCK.search(text)
        )
    if kind == "person":  # a name, which may open the line ("Priya took over triage")
        return bool(found.get("name")) or bool(_OPENING_NAME.match(text))
    return True
