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
    out: list[str] = []
    for m in _RELATIVE.finditer(text):
        try:
            day, year_only = _resolve(m[1], m[2], m[3], when)
        except (ValueError, OverflowError):
            continue
        out.append(str(day.year) if year_only else f"{day.strftime('%B')} {day.year}")
    return " ".join(dict.fromkeys(out))
