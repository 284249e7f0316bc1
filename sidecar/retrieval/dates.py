"""The date a note hit is about, so a reader can see which of two hits is the later.

A chunk's own heading is the nearest statement of its date ("Session 3 (1:56 pm on 8 May,
2023)", "2026-11-21 standup"); else a daily log's file name (``daily/2026-11-21.md``). A
value that is not a real day ("2023-02-30") is no date, never an error.
"""

from __future__ import annotations

import re
from datetime import date

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
