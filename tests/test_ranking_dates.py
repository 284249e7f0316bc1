"""Dates in notes: relative expressions resolved against their section's date and indexed
as context, so a question naming the month finds the line that said "last month"."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.index import indexer
from sidecar.index.chunking import chunk_markdown
from sidecar.index.dates import canonical_dates, found_date, resolved
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import search_store
from sidecar.stores import open_store

MAY_8 = date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday.", "May 2023 20230507"),
        ("We moved last month, and two weeks ago the boxes came.", "April 2023"),
        ("Back from Lisbon last Friday, and this Monday off.", "May 2023 20230505 20230508"),
        ("I started running 9 days ago; next month is the race.", "April 2023 June 2023 20230429"),
        ("Last year was hard.", "2022"),
        # other everyday forms of the same times
        (
            "I was back this past Friday; the move is this coming Monday.",
            "May 2023 20230505 20230515",
        ),
        ("We met the day before yesterday, and the other day again.", "May 2023 20230506"),
        ("A couple of days ago, and a few weeks back.", "May 2023 April 2023"),
        ("The race is in a few weeks; the wedding in two months.", "May 2023 July 2023"),
        ("Three years back we hiked over the weekend.", "2020 May 2023"),
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did John's teammates give him on Aug 15th?", "15 August"),
        ("Which book did Tim finish on 8th December, 2023?", "8 December 2023 20231208"),
        ("the 3rd of May", "3 May"),
        ("Sept. 3, 2022", "3 September 2022 20220903"),
        ("standup 2023-05-03, plan for 2023-06", "3 May 2023 June 2023 20230503"),
        ("2023-13-01 and 2023-02-30", ""),  # no month 13, no 30 February: nothing
        ("on 8 May, 2023 and May 9", "20230508"),  # words there already; May 9 of no year
        ("I may 5 times; my 18th birthday; jan", ""),  # the verb, an ordinal, a name
    ],
)
def test_dates_written_another_way_in_the_headings_form(text: str, expected: str) -> None:
    assert canonical_dates(text) == expected


# Words dates are written with, in several cases, and words that only look like them.
_DATE_WORDS = (
    "May",
    "MAY",
    "may",
    "Aug",
    "aug.",
    "AUGUST",
    "Sept.",
    "sep",
    "3",
    "15",
    "15th",
    "2023",
    "2023-05-03",
    "2023-05",
    "2023-13-01",
    "the",
    "of",
    ",",
    "-",
    "last",
    "LAST",
    "next",
    "this",
    "week",
    "Friday",
    "ago",
    "two days ago",
    "a Year ago",
    "3 weeks ago",
    "yesterday",
    "Today",
    "tonight",
    "tomorrow",
    "this morning",
    "Last night",
    "this past",
    "coming",
    "the other day",
    "a couple of",
    "few",
    "in",
    "back",
    "weekend",
    "over the weekend",
    "days",
    "the 8th of December",
    "market",
    "decimal",
    "mayor",
    "12",
)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(_DATE_WORDS), max_size=14), sep=st.sampled_from(" \n"))
def test_the_quick_tests_of_plain_text_turn_away_no_date(words: list[str], sep: str) -> None:
    """ASCII text is first tested for the words a date needs; the same text with a
    character that is not ASCII after it (which no pattern reads) goes to the regular
    expressions alone, and must come out the same."""
    text = sep.join(words)
    assert canonical_dates(text) == canonical_dates(f"{text}\n\u2014")
    assert resolved(text, MAY_8) == resolved(f"{text}\n\u2014", MAY_8)


def test_a_question_finds_a_heading_by_a_date_it_writes_another_way() -> None:
    planned = plan("What happened on Aug 15th?")
    assert planned is not None
    assert {'"15th"', '"aug"', '"15"', '"august"'} <= set(planned.match.split(" OR "))


def test_a_daily_log_and_an_iso_heading_are_found_by_their_month() -> None:
    log = "- 10:02 moved the backups to the new bucket\n- 11:40 rotated the keys\n"
    (only,) = chunk_markdown(log, 400, day=date(2026, 11, 21)).chunks
    assert only.context == "November 2026 20261121"  # no neighbours: its month, its day
    iso = chunk_markdown("## 2023-05-08 standup\nShipped the importer last week.\n", 400)
    assert iso.chunks[0].context == "May 2023 20230508"  # "last week", the heading: one month
    spelled = chunk_markdown("## Session 1 (8 May, 2023)\nShipped it. Next: Aug 15th.\n", 400)
    assert spelled.chunks[0].context == "20230508 15 August 20230815"  # no second "May 2023"
    assert chunk_markdown(log, 400).chunks[0].context == ""  # no date: nothing added


def test_a_daily_log_is_searched_by_the_month_its_name_says(tmp_path: Path) -> None:
    daily = tmp_path / "memory" / "daily"
    daily.mkdir(parents=True)
    (daily / "2026-11-21.md").write_text("- moved the backups to the new bucket\n")
    (daily / "notes.md").write_text("- moved the backups again\n")
    store = open_store(tmp_path / "index.sqlite", "agent")
    try:
        store.replace_all(indexer.load_tree(tmp_path / "memory", 400))
        planned = plan("Where did the backups go in November 2026?")
        assert planned is not None
        hits, _ = search_store(store, planned, 10)
        assert [h.path for h in hits] == ["daily/2026-11-21.md", "daily/notes.md"]
    finally:
        store.close()


MAY_10 = "## Session 2 (10:00 am on 10 May, 2023)"  # a Wednesday


@pytest.mark.parametrize(
    "said",
    ["on the 3rd of May", "on May 3", "on 3 May", "on 03/05/2023", "on 5/3/2023", "on 3.5.2023",
     "on 2023-05-03", "last Wednesday", "7 days ago", "on Wednesday, May 3rd"],
)  # fmt: skip
def test_a_day_written_any_way_is_indexed_as_one_word(said: str) -> None:
    """Forms the LoCoMo dev half does not use are normalised the same as those it does: each
    gives the chunk the day's one word (and the section's own day word, 10 May)."""
    (chunk,) = chunk_markdown(f"{MAY_10}\nAda: we signed the lease {said}.\n", 400).chunks
    words = chunk.context.split()
    assert "20230503" in words and "20230510" in words
    assert not any(w.isdigit() and len(w) == 8 and w not in ("20230503", "20230510")
                   for w in words)  # fmt: skip


def test_a_day_without_its_year_is_taken_nearest_the_section() -> None:
    dec_28 = "## Session 9 (6:00 pm on 28 December, 2023)"
    (chunk,) = chunk_markdown(f"{dec_28}\nAda: the move is on the 3rd of January.\n", 400).chunks
    assert "20240103" in chunk.context.split()  # the coming January, not the past one
    assert canonical_dates("on the 3rd of January") == "3 January"  # no section: no day word


def test_a_day_and_month_in_either_order() -> None:
    assert canonical_dates("25/12/2023") == "25 December 2023 20231225"  # one reading only
    both = canonical_dates("03/05/2023")  # day first or month first: both, without a section
    assert both == "3 May 2023 5 March 2023 20230503 20230305"
    assert canonical_dates("03/05/2023", date(2023, 3, 9)) == "5 March 2023 20230305"
    assert canonical_dates("version 1.2.3 and 3/4 of 31/02/2023") == ""  # none is a day


def test_a_question_naming_a_day_finds_what_was_said_relative_to_it(tmp_path: Path) -> None:
    """ "last Wednesday" under a heading dated 10 May 2023 is 3 May 2023: a question naming
    that day, in any form, finds it above a line with more of the question's words on
    another day of the same month."""
    memory = tmp_path / "memory" / "daily"
    memory.mkdir(parents=True)
    (memory / "2023-05-10.md").write_text(f"{MAY_10}\nAda: we signed the lease last Wednesday.\n")
    (memory / "2023-05-20.md").write_text(
        "## Session 3 (9:00 am on 20 May, 2023)\nAda: the lease, the lease! Signed the lease.\n"
    )
    store = open_store(tmp_path / "index.sqlite", "agent")
    try:
        store.replace_all(indexer.load_tree(tmp_path / "memory", 400))
        for asked in ("3 May, 2023", "May 3rd, 2023", "2023-05-03", "05/03/2023"):
            planned = plan(f"Which lease did Ada sign on {asked}?")
            assert planned is not None
            hits, _ = search_store(store, planned, 10)
            assert hits[0].path == "daily/2023-05-10.md", asked
        planned = plan("Which lease did Ada sign in May 2023?")  # no day: the words decide
        assert planned is not None
        assert search_store(store, planned, 10)[0][0].path == "daily/2023-05-20.md"
    finally:
        store.close()
