"""The date a note hit is about, so a reader can see which of two hits is the later.

A chunk's own heading is the nearest statement of its date ("Session 3 (1:56 pm on 8 May,
2023)", "2026-11-21 standup"); else a daily log's file name (``daily/2026-11-21.md``). A
value that is not a real day ("2023-02-30") is no date, never an error.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december"
    .split(), start=1)}  # fmt: skip
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december)"
_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_DAY_MONTH = re.compile(rf"(?<!\d)(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})", re.I)
_MONTH_DAY = re.compile(rf"{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})", re.I)


def _day(year: str, month: int, day: str) -> date | None:
    try:
        return date(int(year), month, int(day))
    except ValueError:
        return None


def found_date(text: str) -> date | None:
    """The first date written in ``text`` as ISO, "8 May, 2023" or "May 8, 2023"."""
    m = _ISO.search(text)
    if m:
        return _day(m[1], int(m[2]), m[3])
    m = _DAY_MONTH.search(text)
    if m:
        return _day(m[3], _MONTHS[m[2].lower()], m[1])
    m = _MONTH_DAY.search(text)
    if m:
        return _day(m[3], _MONTHS[m[1].lower()], m[2])
    return None


def hit_date(path: str, heading: str) -> str | None:
    """The ISO date of a hit: its heading's, else its file name's; None when neither says."""
    when = found_date(heading) if heading else None
    if when is None:
        when = found_date(path.rsplit("/", 1)[-1])
    return when.isoformat() if when else None


_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last night|this morning"
    r"|(?:last|next|this) (?:week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(\d+|a|an|one|two|three|four|five|six) (day|week|month|year)s? ago)\b",
    re.I,
)


# What each of ``_RELATIVE``'s expressions holds, in lower case: an ASCII text with none of
# them has none, and most text is turned away by this test at a tenth of the regex's cost.
_RELATIVE_WORDS = ("yesterday", "today", "tonight", "tomorrow", "last ", "next ", "this ", " ago")


def _months(when: date, n: int) -> date:
    m = when.month - 1 + n
    return date(when.year + m // 12, m % 12 + 1, 1)


def _resolve(phrase: str, count: str | None, unit: str | None, when: date) -> tuple[date, bool]:
    """The day meant (the first of its month or year when that is all it says), and whether
    only its year is meant."""
    p = phrase.lower()
    if unit:
        n = int(count) if count and count.isdigit() else _NUMBERS.get((count or "").lower(), 1)
        unit = unit.lower()
        if unit == "day":
            return when - timedelta(days=n), False
        if unit == "week":
            return when - timedelta(weeks=n), False
        if unit == "month":
            return _months(when, -n), False
        return date(when.year - n, 1, 1), True
    if p in ("yesterday", "last night"):
        return when - timedelta(days=1), False
    if p == "tomorrow":
        return when + timedelta(days=1), False
    if p in ("today", "tonight", "this morning"):
        return when, False
    step, what = p.split(" ", 1)
    sign = {"last": -1, "next": 1, "this": 0}[step]
    if what in ("week", "weekend"):
        return when + timedelta(weeks=sign), False
    if what == "month":
        return _months(when, sign), False
    if what == "year":
        return date(when.year + sign, 1, 1), True
    target = _WEEKDAYS.index(what)  # last friday: the friday before
    back = (when.weekday() - target) % 7 or 7
    if sign <= 0:
        return when - timedelta(days=back), False
    return when + timedelta(days=(7 - back) or 7), False


def resolved(text: str, when: date) -> str:
    """Each relative expression of ``text`` ("yesterday", "last month", "two weeks ago")
    written as the month it falls in from ``when`` ("April 2023"), or the year ("2022").

    Month and year, not the day: questions name months ("in March 2023"), and a day's
    number matches every other small number. Cross-validated on LoCoMo dev (README,
    "Validated on conversations a choice was not made on")."""
    if text.isascii():  # lower case then means what ``re.I`` does: the cheap test is exact
        low = text.lower()
        if not any(word in low for word in _RELATIVE_WORDS):
            return ""
    out: list[str] = []
    for m in _RELATIVE.finditer(text):
        try:
            day, year_only = _resolve(m[1], m[2], m[3], when)
        except (ValueError, OverflowError):
            continue
        out.append(str(day.year) if year_only else f"{day.strftime('%B')} {day.year}")
    return " ".join(dict.fromkeys(out))


_COUNT = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|few|couple of)"
)
_UNIT = r"(?:days?|weeks?|weekends?|months?|years?)"
_WHEN_SAID = re.compile(
    rf"\b(?:(?:{'|'.join(_WEEKDAYS)})s?|ago|since|recently|lately|(?:19|20)\d\d"
    r"|(?:january|february|march|april|june|july|august|september|october|november|december)"
    r"|(?:last|next|this|past|coming|on) (?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)"
    rf"|(?:last|next|this|past|coming|for|about|over|under|nearly|almost) {_COUNT}? ?{_UNIT}"
    r"|(?:last|this) (?:night|morning|evening|summer|winter|spring|fall|autumn)"
    rf"|{_COUNT} {_UNIT} (?:now|ago|later|earlier|before|after)"
    r"|the \d{1,2}(?:st|nd|rd|th))\b"
    rf"|\bmay\s+\d|\d\s+may\b|(?<!\d)\d{{4}}-\d{{2}}-\d{{2}}(?!\d)",
    re.I,
)


def says_when(text: str) -> bool:
    """Whether ``text`` places something in time: a relative expression ("last week",
    "two days ago", "last Fri"), a duration ("for 3 years", "since"), a weekday, a month,
    a year, a day of the month ("the 15th") or a written date.

    "May" counts only beside a number: alone it is mostly the verb. Heading lines are not
    read: a section's date is every chunk's under it, and says nothing about this one."""
    if "#" in text:
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))
    return _RELATIVE.search(text) is not None or _WHEN_SAID.search(text) is not None


_ABBREVIATED = {m[:3]: m for m in _MONTHS} | {"sept": "september"}
_MONTH_WORD = rf"(?:{_MONTH[1:-1]}|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?)"
_DAY_WORD = r"(\d{1,2})(?:st|nd|rd|th)?"
_WRITTEN = re.compile(
    rf"\b(?:{_DAY_WORD}(?:\s+of)?\s+({_MONTH_WORD})|({_MONTH_WORD})\s+{_DAY_WORD})\b"
    r"(?:,?\s+(\d{4}))?(?!\d)",
    re.I,
)
_SPELLED = re.compile(rf"(?:\d{{1,2}}\s+{_MONTH}|{_MONTH}\s+\d{{1,2}})(?:,?\s+\d{{4}})?", re.I)
_DIGIT = re.compile(r"\d")
_ASCII_DIGITS = "0123456789"
# How every month word ``_WRITTEN`` reads begins, in lower case, and the same at the start
# of a word, where ``_WRITTEN`` reads them ("summary" holds "mar" but no month).
_MONTH_STEMS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_START = re.compile(rf"\b(?:{'|'.join(_MONTH_STEMS)})")
_NUMERIC = re.compile(r"(?<![\d-])(\d{4})-(\d{2})(?:-(\d{2}))?(?![\d-])")


def _month_name(word: str) -> str | None:
    w = word.lower().rstrip(".")
    name = w if w in _MONTHS else _ABBREVIATED.get(w)
    return name.capitalize() if name else None


def canonical_dates(text: str) -> str:
    """The dates of ``text`` in the one form notes' headings use ("15 August", "3 May 2023",
    "May 2023"), for what a question writes another way: "Aug 15th", "the 8th of December",
    "2023-05-03", "2023-05". Empty when it writes none other way. The caller adds these to
    its own words rather than replacing them, so a word like "15th" still finds itself."""
    written = numeric = True
    if text.isascii():  # exact cheap tests first: lower case then means what ``re.I`` does
        if not any(d in text for d in _ASCII_DIGITS):  # every form has a number
            return ""
        low = text.lower()
        written = any(stem in low for stem in _MONTH_STEMS) and bool(_MONTH_START.search(low))
        numeric = "-" in text
    elif _DIGIT.search(text) is None:
        return ""
    out: list[str] = []
    for m in _WRITTEN.finditer(text) if written else ():
        if _SPELLED.fullmatch(m[0]):
            continue  # "8 May, 2023", "May 8": the words are there already
        day, month = (m[1], m[2]) if m[1] else (m[4], m[3])
        name = _month_name(month)
        if name == "May" and not month.startswith("M"):
            continue  # "I may 5 times": the verb
        if name and 1 <= int(day) <= 31:
            out.append(" ".join(filter(None, (str(int(day)), name, m[5]))))
    for m in _NUMERIC.finditer(text) if numeric else ():
        month = int(m[2])
        if not 1 <= month <= 12:
            continue
        name = date(2000, month, 1).strftime("%B")
        day = _day(m[1], month, m[3]) if m[3] else None
        if m[3] and day is None:
            continue
        out.append(f"{day.day} {name} {m[1]}" if day else f"{name} {m[1]}")
    return " ".join(dict.fromkeys(out))
