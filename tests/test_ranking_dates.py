"""Dates in notes: relative expressions resolved against their section's date and indexed
as context, so a question naming the month finds the line that said "last month"."""

from __future__ import annotations

from datetime import date

import pytest

from sidecar.index.chunking import chunk_markdown
from sidecar.index.dates import found_date, resolved

MAY_8 = date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday.", "May 2023"),
        ("We moved last month, and two weeks ago the boxes came.", "April 2023"),
        ("Back from Lisbon last Friday, and this Monday off.", "May 2023"),
        ("I started running 9 days ago; next month is the race.", "April 2023 June 2023"),
        ("Last year was hard.", "2022"),
        ("No relative words: the weekly report, a monthly plan, yesterdays.", ""),
    ],
)
def test_relative_expressions_become_the_dates_they_mean(text: str, expected: str) -> None:
    assert resolved(text, MAY_8) == expected


def test_date_forms_and_impossible_days() -> None:
    assert found_date("Session 2 (7:00 pm on 25 May, 2023)") == date(2023, 5, 25)
    assert found_date("standup, June 3rd 2024") == date(2024, 6, 3)
    assert found_date("2024-02-29 notes") == date(2024, 2, 29)
    assert found_date("2023-02-29 notes") is None  # not a day: no date, no error
    assert found_date("31 June, 2023") is None


def test_a_chunk_is_found_by_the_date_its_relative_words_mean() -> None:
    filler = "\n".join(f"Caroline: line {i} about painting and the weather." for i in range(12))
    text = (f"## Session 3 (1:56 pm on 8 May, 2023)\n{filler}\n"
            "Melanie: We went camping last month, up in the hills.\n"
            f"{filler}\n")  # fmt: skip
    chunks = chunk_markdown(text, 400).chunks
    (camping,) = [c for c in chunks if "camping" in c.text]
    assert "April 2023" in camping.context and "April" not in camping.text
    assert all("April" not in c.context for c in chunks if c is not camping and
               "camping" not in c.context)  # fmt: skip
