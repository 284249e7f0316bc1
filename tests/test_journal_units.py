"""A figure fills the slot its unit names: another unit is another slot, not a change."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from sidecar.journal.change import reports_change
from sidecar.journal.units import abbreviates, same_slot, units
from tests.test_journal import recall
from tests.test_journal_updates import FILLER, ids, lay_down


def test_a_figures_unit_words_are_its_neighbours() -> None:
    assert units("Muster point is the car park by gate 2; wardens are Bev and Tariq.") == {
        "2": ["gate"]
    }
    assert units("The drill took 6 minutes to clear.")["6"] == ["minutes", "took"]
    assert units("Moved to 4.") == {"4": []}  # no unit: it may fill any slot
    assert units("Card fees 2.4% plus 20 cents now.")["2.4%"] == ["fees"]


def test_short_units_stand_for_long_ones() -> None:
    assert abbreviates("rpm", ["requests", "per", "minute"])
    assert abbreviates("s", ["seconds"]) and abbreviates("mb", ["megabytes"])
    assert abbreviates("db", ["database"])
    assert not abbreviates("high", ["humidity"])  # not in order from its first letter
    assert not abbreviates("gate", ["minutes"]) and not abbreviates("rpm", [])
    assert same_slot(["requests", "per", "minute"], ["rpm", "since"])
    assert same_slot(["minutes"], ["idle", "minutes"]) and same_slot(["completed"], ["completes"])
    assert not same_slot(["gate"], ["minutes", "took"])
    assert not same_slot(["humidity"], ["high", "read"])


def test_a_figure_with_another_unit_reports_no_change() -> None:
    answer = "The hot yoga room is held at 38°C with 40% humidity."
    assert not reports_change(answer, "Humidity sensor replaced, the old one read 10% high.")
    assert reports_change(answer, "Hot yoga room humidity raised to 45% from Monday.")
    assert reports_change(  # an abbreviated unit is the same slot
        "The load balancer idle timeout is 60 seconds.", "Raised LB idle timeout to 350 s."
    )
    assert reports_change(
        "The API rate limit for partner keys is 500 requests per minute.",
        "Partner keys are throttled at 1,200 rpm since the contract renewal.",
    )
    assert not reports_change(
        "Site muster point is the car park by gate 2.",
        "Fire drill took 6 minutes to clear the site.",
    )


async def test_a_later_figure_for_another_slot_leaves_the_answer_first(
    client: TestClient,
) -> None:
    """Weeks after the answer, a drill on the same subject, linked to it by the words they
    share, gives a figure with another unit (minutes, where the answer's is a gate): a
    follow-up, so the answer keeps first place; a later event moving the point to another
    gate comes above it."""
    answer, drill = await lay_down(
        client,
        [(80, "Kestrel site muster point is the car park by gate 2, wardens Bev and Tariq."),
         (30, "Kestrel fire drill took 6 minutes to clear to the car park by gate 2.")],
    )  # fmt: skip
    await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])
    question = "Where is the Kestrel site muster point?"
    hits = (await recall(client, question, k=5, mark=False))["hits"]
    assert ids(hits)[0] == answer and drill in ids(hits)
    (moved,) = await lay_down(
        client, [(10, "Kestrel site muster point moved to the car park by gate 5.")]
    )
    order = ids((await recall(client, question, k=5, mark=False))["hits"])
    assert order.index(moved) < order.index(answer)
