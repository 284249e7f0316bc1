"""Hostile text against the readers of statements: long runs of near-matches must be read in
time that grows with the text, and odd figures or marks read as values, never an error."""

from __future__ import annotations

from datetime import date

from sidecar.index.dates import resolved
from sidecar.journal.change import reports_change, values


def test_a_long_snake_case_word_with_a_mark_is_read_without_backtracking() -> None:
    # "a_a_..._a+": the identifier pattern could split each "_a" two ways, 2^n tries
    # before failing on the "+"; read in one pass it is no identifier, and no name.
    assert values("a_" * 2000 + "+") == {"name": frozenset()}
    assert values("x " + "cfg_" * 500 + "v+ y") == {"name": frozenset()}
    # what it reads as identifiers is unchanged
    for word in ("db_main", "a__b", "api.internal", "cdn.example/assets", "eu-west-central"):
        assert values(f"Moved to {word} now.")["identifier"] == {word}
    for word in ("a_", "db.", "two-week"):
        assert "identifier" not in values(f"Moved to {word} now")


def test_a_figure_of_thousands_of_digits_is_no_count_and_no_error() -> None:
    # int() refuses a string of more than 4300 digits: a pasted long number beside a
    # counted word ("one approval") made the change test raise, and recall with it.
    huge = "9" * 5000
    assert not reports_change("one approval needed", f"now {huge} approvals")
    assert reports_change("one approval needed at 12:00", f"now {huge} approvals at 13:00")
    assert reports_change("one approval needed", "now 2 approvals")  # a count still counts
    same = f"{huge} approvals and one review"
    assert not reports_change(same, same)


def test_last_weekend_is_the_weekend_before_the_week_it_is_said_in() -> None:
    # said on Monday 5 June 2023, "last weekend" was 3-4 June: a week back (29 May)
    # put it in May. Said on a Sunday, it is the weekend before that one.
    for said in ("We hiked last weekend.", "We hiked this past weekend."):
        assert resolved(said, date(2023, 6, 5)) == "June 2023"
        assert resolved(said, date(2023, 7, 2)) == "June 2023"  # a Sunday: 24-25 June
    assert resolved("We hiked over the weekend.", date(2023, 6, 5)) == "June 2023"


def test_this_weekend_is_the_one_of_the_week_it_is_said_in() -> None:
    # said on Monday 29 May 2023, "this weekend" is 3-4 June; said on Thursday 27 April,
    # "this coming weekend" is 29-30 April, not a week on (4 May)
    assert resolved("Hiking this weekend.", date(2023, 5, 29)) == "June 2023"
    assert resolved("Hiking this coming weekend.", date(2023, 4, 27)) == "April 2023"
    assert resolved("Hiking the coming weekend.", date(2023, 4, 30)) == "May 2023"  # a Sunday
    assert resolved("Hiking this weekend.", date(2023, 4, 30)) == "April 2023"  # on it
