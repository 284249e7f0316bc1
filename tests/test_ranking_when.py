"""A question that asks when is answered by a line that says when: among BM25's
candidates, a chunk placing something in time gains a share of the best score
(``modes.WHEN_SHARE``), in sparse and hybrid ranking alike; other questions keep BM25's
order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.index.dates import says_when
from sidecar.index.store import Hit, IndexStore
from sidecar.retrieval import fusion, query
from sidecar.retrieval.modes import SPARSE
from sidecar.retrieval.ranking import lift, rank_tier
from tests.transcripts import files, transcript_store


@pytest.mark.parametrize(
    "text",
    [
        "I went to a support group yesterday.",
        "Last Fri I took the kids to a pottery workshop.",
        "I've known these friends for 4 years.",
        "We met back up on the 15th after my trip.",
        "Two weeks ago the boxes came.",
        "I started in 2019, on a Tuesday.",
        "The launch was on 3 May, the review on 2024-06-01.",
        "I've been playing for about four months now.",
        "We met on the 3rd of May.",  # forms the LoCoMo dev half does not use
        "Paid on 03/05/2023, shipped 3.5.2023.",
        "I ran into her the other day.",
        "We hiked over the weekend, and moved a few weeks back.",
        "The move is in a few weeks.",
        "I'll know in a couple of days.",
    ],
)
def test_lines_that_say_when(text: str) -> None:
    assert says_when(text)


@pytest.mark.parametrize(
    "text",
    [
        "I may join the pottery workshop, it looks fun.",  # "may" the verb
        "The weekly report and a monthly plan.",
        "## Session 3 (1:56 pm on 8 May, 2023)\nI love painting sunsets.",  # heading's date
        "I have known them for ages.",
        "We live in a house by the sea.",
        "Version 1.2.3 fixed 3/4 of the bugs.",  # a version and a fraction, no date
    ],
)
def test_lines_that_do_not(text: str) -> None:
    assert not says_when(text)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("How long has Nate had his turtles?", True),
        ("Which month did Tim visit the UK?", True),
        ("How many weeks passed between the two adoptions?", True),
        ("What did Caroline paint?", False),
        ("Which city was John in?", False),
        ("When Jon has lost his job as a banker?", True),
        ("what to do when the build fails", False),
        ("When the build fails, retry once.", False),
        ("What was the date of the wedding?", True),  # forms the LoCoMo dev half lacks
        ("How recently did Ada run?", True),
        ("At what point did Ada start running?", True),
        ("How soon is the move?", True),
        ("What was the month like?", False),
        ("What is the year-end plan?", False),
    ],
)
def test_questions_that_ask_when(question: str, asks: bool) -> None:
    planned = query.plan(question)
    assert planned is not None and planned.asks_when is asks


def test_syntax_is_not_a_question() -> None:
    planned = query.plan('"support group" AND when')
    assert planned is not None and planned.mode == query.MODE_FTS5 and not planned.asks_when


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[IndexStore]:
    """Two sessions that both mention the camping trip; only the later one says when."""
    s = transcript_store(
        tmp_path,
        {
            "2023-05-08": (
                "## Session 1 (1:56 pm on 8 May, 2023)\n"
                "Melanie: Camping with the kids by the lake, so much fun.\n"
            ),
            "2023-06-27": (
                "## Session 2 (3:00 pm on 27 June, 2023)\n"
                "Melanie: We went camping last week, up in the hills, so much fun.\n"
            ),
        },
    )
    yield s
    s.close()


def test_a_when_question_puts_the_line_saying_when_first(store: IndexStore) -> None:
    what = query.plan("Where did Melanie go camping?")
    when = query.plan("When did Melanie go camping?")
    assert what is not None and when is not None
    plain, _ = rank_tier(store, "agent", what, 10, SPARSE)
    lifted, _ = rank_tier(store, "agent", when, 10, SPARSE)
    # BM25 alone prefers the shorter session; asking when, the one that
    # says "last week" comes first, and nothing is lost.
    assert files(plain) == ["daily/2023-05-08.md", "daily/2023-06-27.md"]
    assert files(lifted) == ["daily/2023-06-27.md", "daily/2023-05-08.md"]
    assert lifted[0].score > lifted[1].score


def test_the_lift_is_a_share_of_the_best_score_not_a_jump_over_everything() -> None:
    strong = Hit("a.md", 1, 1, "", "Camping, camping and more camping with Melanie.", 10.0)
    weak = Hit("b.md", 1, 1, "", "Last week it rained.", 1.0)
    close = Hit("c.md", 1, 1, "", "We went camping yesterday.", 9.5)
    assert [h.path for h in lift([strong, weak, close], True)] == ["c.md", "a.md", "b.md"]
    assert lift([], True) == []


def test_hybrid_lifts_only_when_asked() -> None:
    plain = Hit("a.md", 1, 1, "", "Camping with the kids.", 1.0, "a")
    dated = Hit("b.md", 1, 1, "", "Camping last week.", 0.9, "b")
    dense = {"a": 0.5, "b": 0.5}
    assert [r.hit.path for r in fusion.rerank([plain, dated], dense, [], 10)] == ["a.md", "b.md"]
    lifted = fusion.rerank([plain, dated], dense, [], 10, asks_when=True)
    assert [r.hit.path for r in lifted] == ["b.md", "a.md"]
