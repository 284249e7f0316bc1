"""The kind of value a question asks for, and whether a later statement gives one."""

from __future__ import annotations

import pytest

from sidecar.journal.answers import asks, gives


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When is the board meeting on branch closures?", "date"),
        ("What date is the release freeze?", "date"),
        ("What time are the nightly backups?", "clock"),
        ("What is the kick-off time on Saturdays?", "clock"),
        ("How often is the staging database refreshed?", "period"),
        ("How long are logs retained?", "length"),
        ("How much notice is needed for a declaration?", "length"),
        ("How much do we charge for late checkout?", "money"),
        ("What is the hygiene appointment fee?", "money"),
        ("How many data nodes does the search cluster have?", "count"),
        ("Who signs off on infrastructure costs?", "person"),
        ("Who's the contact for Riverside?", "person"),
        # names no kind: any later statement may answer it
        ("Which tool do we use for error tracking?", None),
        ("Where is our DNS hosted?", None),
        ("Is the fare-free Saturday pilot going ahead?", None),
        ("Do children still pay overdue fines?", None),
    ],
)
def test_a_question_names_the_kind_of_its_answer_or_none(question: str, kind: str | None) -> None:
    assert asks(question) == kind


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("date", "That board meeting slipped to 12 March; the chair is away."),
        ("date", "Merch pushed it to the 22nd so leftovers clear first."),
        ("date", "Production releases happen Mondays and Thursdays now."),
        ("clock", "Nightly backups moved to 04:30 UTC."),
        ("clock", "Lights out by 1 am on event weeks."),
        ("period", "Staging DB refresh runs every night since QA asked for it."),
        ("money", "The late checkout charge goes up to 55 euros from May."),
        ("money", "Students get in for a fiver next season."),
        ("money", "Card fees drop to 2.4% from September."),
        ("money", "Committee voted to waive it entirely for in-state students."),
        ("count", "Added two more data nodes to the search cluster."),
        ("person", "Priya took over ticket triage."),
        ("person", "Ito withdrew; Daniel Brenner steps in for the Rach 3."),
        # called off: an answer with no value of any kind
        ("date", "Okafor event is off: her publisher pulled the whole tour."),
        ("clock", "The council scrapped the late service."),
    ],
)
def test_a_statement_gives_a_value_of_the_kind(kind: str, text: str) -> None:
    assert gives(kind, text)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("date", "Festival season: 14 events booked for the mobile bar."),
        ("date", "Hokusai exhibition passed 20,000 visitors."),
        ("money", "Practice closes 24 December to 2 January."),
        ("clock", "Reminder texts go out 48 hours before appointments."),
        ("person", "the dashboard for the staging database showed a spike."),
        ("count", "Housekeeping asks that late checkouts be flagged in the PMS."),
    ],
)
def test_a_follow_up_without_a_value_of_the_kind_gives_none(kind: str, text: str) -> None:
    assert not gives(kind, text)


def test_a_payload_of_figures_is_read_in_one_pass() -> None:
    """An event's text runs to ~18 KB (summary and payload); one holding figures with no
    spaces between them (a CSV row, version or address lists) was scanned from every figure
    to its end for a money unit: quadratic, ~20 s on one 16 KB text on this machine. Read
    once, it takes milliseconds; the answer is the same."""
    figures = ",".join(str(i % 97) for i in range(5000))  # 16 KB
    assert not gives("money", f"Readings: {figures}")
    assert gives("money", f"Readings: {figures}k")
    assert gives("money", f"Readings: {figures} euros")
    assert not gives("money", "Release 1.2.3.4 goes out")
    assert gives("money", "The fee rises to 1,250.50 dollars")
