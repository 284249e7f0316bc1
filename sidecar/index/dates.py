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


def day_word(day: date) -> str:
    """The one index word for a day ("20230503"), whatever form wrote it: "3rd of May",
    "May 3", "03/05/2023" or "last Wednesday" under a heading dated 10 May 2023. The day's
    number alone would match every other small number in text; this word matches the day."""
    return f"{day.year:04d}{day.month:02d}{day.day:02d}"


_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "few": 3, "couple": 2, "several": 3}  # fmt: skip
# How many: a number, a number word, or "a few", "a couple (of)", "several" (taken as 3, 2, 3).
_HOW_MANY = r"\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve" + (
    r"|(?:a )?(?:few|couple)(?: of)?|several"
)
_SPAN = "week|weekend|month|year|" + "|".join(_WEEKDAYS)
# The everyday ways to place something relative to when it was said, whatever words a
# writer picks: "last Friday" / "this past Friday", "next week" / "this coming week", "two
# days ago" / "a couple of days back", "in a few weeks", "the other day", "over the weekend".
_RELATIVE = re.compile(
    r"\b(?:(?P<fixed>yesterday|today|tonight|tomorrow|last night|the day before yesterday"
    r"|this (?:morning|afternoon|evening)|the other (?:day|night)|(?:over|on) the weekend)"
    rf"|(?P<step>last|next|this(?: past| coming)?|the past|past|coming) (?P<span>{_SPAN})"
    rf"|(?P<count>{_HOW_MANY}) (?P<unit>day|week|month|year)s? (?:ago|back)"
    rf"|in (?P<ahead>{_HOW_MANY}) (?P<ahead_unit>day|week|month|year)s?)\b",
    re.I,
)


# What each of ``_RELATIVE``'s expressions holds, in lower case: an ASCII text with none of
# them has none, and most text is turned away by this test at a fraction of the regex's
# cost (every weekday and "today", "yesterday" hold "day").
_RELATIVE_WORDS = ("day", "week", "month", "year", "tonight", "tomorrow", "this ", "last ",
                   "the other")  # fmt: skip


def _months(when: date, n: int) -> date:
    m = when.month - 1 + n
    return date(when.year + m // 12, m % 12 + 1, 1)


def _how_many(count: str) -> int:
    c = count.lower().removeprefix("a ").removesuffix(" of")
    return int(c) if c.isdigit() else _NUMBERS.get(c, 1)


def _moved(when: date, n: int, unit: str) -> tuple[date, bool]:
    """``when`` moved by ``n`` units (back when negative): the day, or the first of its
    month or year when that is all the unit says, and whether only its year is meant."""
    unit = unit.lower()
    if unit == "day":
        return when + timedelta(days=n), False
    if unit == "week":
        return when + timedelta(weeks=n), False
    if unit == "month":
        return _months(when, n), False
    return date(when.year + n, 1, 1), True


_FIXED = {"yesterday": -1, "last night": -1, "the day before yesterday": -2, "tomorrow": 1,
          "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
          "the other day": -2, "the other night": -2}  # fmt: skip
_STEP = {"last": -1, "next": 1, "this": 0, "this past": -1, "the past": -1, "past": -1,
         "this coming": 1, "coming": 1}  # fmt: skip


def _resolve(m: re.Match[str], when: date) -> tuple[date, bool]:
    """The day ``m`` means (the first of its month or year when that is all it says), and
    whether only its year is meant."""
    if m["count"]:
        return _moved(when, -_how_many(m["count"]), m["unit"])
    if m["ahead"]:
        return _moved(when, _how_many(m["ahead"]), m["ahead_unit"])
    if m["fixed"]:
        p = " ".join(m["fixed"].lower().split())
        if p.endswith("weekend"):  # the weekend just past, or this one if said on it
            return when - timedelta(days=(when.weekday() - 5) % 7), False
        return when + timedelta(days=_FIXED[p]), False
    step = " ".join(m["step"].lower().split())
    sign = _STEP[step]
    what = m["span"].lower()
    if what == "weekend" and step != "next":  # its Saturday, from the week it is said in
        if sign < 0:  # the weekend before that week
            return when - timedelta(days=when.weekday() + 2), False
        ahead = 5 - when.weekday()  # this weekend: said on its Sunday, the day before
        return when + timedelta(days=ahead % 7 if sign > 0 else ahead), False
    if what in ("week", "weekend"):
        return when + timedelta(weeks=sign), False
    if what == "month":
        return _months(when, sign), False
    if what == "year":
        return date(when.year + sign, 1, 1), True
    target = _WEEKDAYS.index(what)  # last friday: the friday before
    back = (when.weekday() - target) % 7 or (0 if sign == 0 else 7)  # this monday, on one
    if sign <= 0:
        return when - timedelta(days=back), False
    return when + timedelta(days=(7 - back) or 7), False


def resolved(text: str, when: date) -> str:
    """Each relative expression of ``text`` ("yesterday", "last month", "two weeks ago",
    "this past Friday", "in a few weeks") written as the month it falls in from ``when``
    ("April 2023"), or the year ("2022"), and, for one that names a day, that day's
    ``day_word``.

    Month and year in words, not the day's number: questions name months ("in March
    2023"), and a day's number matches every other small number. Cross-validated on
    LoCoMo dev (README, "Validated on conversations a choice was not made on"); the forms
    beyond LoCoMo's own are those its unseen conversations may use instead (``bench
    robustness``)."""
    if text.isascii():  # lower case then means what ``re.I`` does: the cheap test is exact
        low = text.lower()
        if not any(word in low for word in _RELATIVE_WORDS):
            return ""
    out: list[str] = []
    days: list[str] = []
    for m in _RELATIVE.finditer(text):
        try:
            day, year_only = _resolve(m, when)
        except (ValueError, OverflowError):
            continue
        out.append(str(day.year) if year_only else f"{day.strftime('%B')} {day.year}")
        if _to_the_day(m):
            days.append(day_word(day))
    return " ".join(dict.fromkeys(out + days))


def _to_the_day(m: re.Match[str]) -> bool:
    """Whether a relative expression names one day ("yesterday", "last Friday", "3 days
    ago"), not a week, month or year, nor "the other day" or "a few days ago" (roughly)."""
    if m["count"] or m["ahead"]:
        vague = any(w in (m["count"] or m["ahead"]).lower() for w in ("few", "couple", "several"))
        return (m["unit"] or m["ahead_unit"]).lower() == "day" and not vague
    if m["fixed"]:
        return not m["fixed"].lower().startswith(("the other", "over", "on"))
    return m["span"].lower() not in ("week", "weekend", "month", "year")


_COUNT = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|few|couple of"
    r"|several)"
)
_UNIT = r"(?:days?|weeks?|weekends?|months?|years?)"
_WHEN_SAID = re.compile(
    rf"\b(?:(?:{'|'.join(_WEEKDAYS)})s?|ago|since|recently|lately|(?:19|20)\d\d"
    r"|(?:january|february|march|april|june|july|august|september|october|november|december)"
    r"|(?:last|next|this|past|coming|on) (?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)"
    rf"|(?:last|next|this|past|coming|for|about|over|under|nearly|almost) {_COUNT}? ?{_UNIT}"
    r"|(?:last|this) (?:night|morning|evening|summer|winter|spring|fall|autumn)"
    rf"|{_COUNT} {_UNIT} (?:now|ago|back|later|earlier|before|after)|in (?:a )?{_COUNT} {_UNIT}"
    r"|the \d{1,2}(?:st|nd|rd|th)|the other day|(?:over|on|at) the weekend)\b"
    rf"|\bmay\s+\d|\d\s+may\b|(?<!\d)\d{{4}}-\d{{2}}-\d{{2}}(?!\d)"
    r"|\b\d{1,2}(?:st|nd|rd|th)? of may\b|(?<![\d/.])\d{1,2}([/.])\d{1,2}\1\d{4}(?!\d)",
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


def canonical_dates(text: str, when: date | None = None) -> str:
    """The dates of ``text`` in the one form notes' headings use ("15 August", "3 May 2023",
    "May 2023"), for what a question writes another way: "Aug 15th", "the 8th of December",
    "2023-05-03", "2023-05", "03/05/2023"; and each day it names as its ``day_word``, in
    whatever form, the spelled ones included. A day written without its year is taken in
    the year that puts it nearest ``when`` (the date of the section it is in), and without
    ``when`` gets no day word. Empty when it writes no date. The caller adds these to its
    own words rather than replacing them, so a word like "15th" still finds itself."""
    written = numeric = slashed = True
    if text.isascii():  # exact cheap tests first: lower case then means what ``re.I`` does
        if not any(d in text for d in _ASCII_DIGITS):  # every form has a number
            return ""
        low = text.lower()
        written = any(stem in low for stem in _MONTH_STEMS) and bool(_MONTH_START.search(low))
        numeric = "-" in text
        slashed = "/" in text or "." in text
    elif _DIGIT.search(text) is None:
        return ""
    out: list[str] = []
    days: list[date] = []
    for m in _WRITTEN.finditer(text) if written else ():
        day, month = (m[1], m[2]) if m[1] else (m[4], m[3])
        name = _month_name(month)
        if name == "May" and not month.startswith("M"):
            continue  # "I may 5 times": the verb
        if not name or not 1 <= int(day) <= 31:
            continue
        if not _SPELLED.fullmatch(m[0]):  # "8 May, 2023", "May 8": the words are there
            out.append(" ".join(filter(None, (str(int(day)), name, m[5]))))
        found = _in_year(int(m[5]) if m[5] else None, _MONTHS[name.lower()], int(day), when)
        days += [found] if found else []
    for m in _NUMERIC.finditer(text) if numeric else ():
        month = int(m[2])
        if not 1 <= month <= 12:
            continue
        name = date(2000, month, 1).strftime("%B")
        day = _day(m[1], month, m[3]) if m[3] else None
        if m[3] and day is None:
            continue
        out.append(f"{day.day} {name} {m[1]}" if day else f"{name} {m[1]}")
        days += [day] if day else []
    for m in _SLASHED.finditer(text) if slashed else ():
        for day in _readings(int(m[1]), int(m[3]), int(m[4]), when):
            out.append(f"{day.day} {day.strftime('%B')} {day.year}")
            days.append(day)
    return " ".join(dict.fromkeys(out + [day_word(d) for d in days]))


# "03/05/2023", "3.5.2023": day and month in either order, a four-digit year.
_SLASHED = re.compile(r"(?<![\d/.])(\d{1,2})([/.])(\d{1,2})\2(\d{4})(?![\d/]|\.\d)")


def _in_year(year: int | None, month: int, day: int, when: date | None) -> date | None:
    """The day, in ``year``, or without one in the year that puts it nearest ``when``."""
    if year is not None:
        return _day(str(year), month, str(day))
    if when is None:
        return None
    near = [d for y in (when.year - 1, when.year, when.year + 1)
            if (d := _day(str(y), month, str(day))) is not None]  # fmt: skip
    return min(near, key=lambda d: abs(d - when), default=None)


def _readings(first: int, second: int, year: int, when: date | None) -> list[date]:
    """The days "first/second/year" can be: day first (most of the world) or month first
    (the US). When both are real days, the one nearer ``when``; without ``when``, both."""
    found = [d for d in (_day(str(year), second, str(first)), _day(str(year), first, str(second)))
             if d is not None]  # fmt: skip
    found = list(dict.fromkeys(found))
    if len(found) == 2 and when is not None:
        return [min(found, key=lambda d: abs(d - when))]
    return found
