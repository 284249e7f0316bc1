"""A question that names someone is answered by what they say: among BM25's candidates, a
chunk gains a share of the best score (``modes.SPEAKER_SHARE``) times the share of its
transcript lines opened by a speaker the question names, in sparse and hybrid ranking
alike; notes without speaker labels, and questions naming nobody who speaks, keep their
order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.index.store import Hit, IndexStore
from sidecar.retrieval import fusion, query
from sidecar.retrieval.modes import SPARSE
from sidecar.retrieval.ranking import lift, rank_tier
from sidecar.retrieval.speakers import said_share
from tests.transcripts import files, transcript_store


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What has Melanie painted?", {"Melanie"}),
        ("What does Jon's dance studio offer?", {"Jon"}),
        ("Which city have both Jean and John visited?", {"Jean", "John"}),
        ("When did Caroline\u2019s move happen?", {"Caroline"}),
        ("How did it go? Where was it?", set()),  # question words are not names
        ("what did melanie paint", set()),  # no capital, no name
    ],
)
def test_what_a_question_names(question: str, names: set[str]) -> None:
    assert query.named(question) == names
    planned = query.plan(question)
    assert planned is not None and planned.names == names


def test_syntax_names_nobody() -> None:
    planned = query.plan('"Melanie" AND painting')
    assert planned is not None and planned.mode == query.MODE_FTS5 and not planned.names


@pytest.mark.parametrize(
    ("text", "names", "share"),
    [
        ("Melanie: I painted a sunset.", {"Melanie"}, 1.0),
        ("Caroline: Nice!\nMelanie: I painted a sunset.", {"Melanie"}, 0.5),
        ("## Session 2\nCaroline: Nice!\nMelanie: I painted it.\nMelanie: Last week.", {"Melanie"},
         2 / 3),  # a heading is no turn
        ("  Melanie:  indented transcript line", {"Melanie"}, 1.0),
        ("Dr Ruiz: the cast comes off Monday.", {"Ruiz"}, 1.0),
        ("Caroline: Melanie: is that yours?", {"Melanie"}, 0.0),  # not at a line's start
        ("Caroline: I love Melanie's painting.", {"Melanie"}, 0.0),  # named, not speaking
        ("Melanie painted it: a sunset.", {"Melanie"}, 0.0),  # a colon later in prose
        ("Melanie: I painted a sunset.", set(), 0.0),
        ("Note: Melanie paints on Sundays.", {"Melanie"}, 0.0),
        ("Caroline and Melanie met.", {"Melanie"}, 0.0),  # no transcript at all
    ],
)  # fmt: skip
def test_the_share_of_a_chunk_a_named_speaker_says(
    text: str, names: set[str], share: float
) -> None:
    assert said_share(text, frozenset(names)) == pytest.approx(share)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[IndexStore]:
    """Two sessions about painting: in the first, Caroline praises a painting at length;
    in the second, Melanie says what she painted."""
    s = transcript_store(
        tmp_path,
        {
            "2023-05-08": (
                "## Session 1 (1:56 pm on 8 May, 2023)\n"
                "Caroline: Melanie, that painting is awesome, painted so well, what a painting!\n"
            ),
            "2023-06-27": (
                "## Session 2 (3:00 pm on 27 June, 2023)\n"
                "Melanie: I painted this horse, my painting for the barn wall.\n"
            ),
            "2023-06-30": (  # a note, not a transcript: no speaker lifts it
                "## Studio plan\nPainting supplies for Melanie: canvas, oils, a painting knife.\n"
            ),
        },
    )
    yield s
    s.close()


def test_a_question_naming_a_speaker_puts_their_own_line_first(store: IndexStore) -> None:
    unnamed = query.plan("what has melanie painted")
    named = query.plan("What has Melanie painted?")
    assert unnamed is not None and named is not None
    plain, _ = rank_tier(store, "agent", unnamed, 10, SPARSE)
    lifted, _ = rank_tier(store, "agent", named, 10, SPARSE)
    # BM25 alone puts Caroline's praise above Melanie's own line; named, Melanie's line
    # passes it, the note (far ahead on its words, no speaker) keeps the lead, nothing is lost.
    assert files(plain)[:3] == ["daily/2023-06-30.md", "daily/2023-05-08.md",
                                "daily/2023-06-27.md"]  # fmt: skip
    assert files(lifted)[:3] == ["daily/2023-06-30.md", "daily/2023-06-27.md",
                                 "daily/2023-05-08.md"]  # fmt: skip
    assert sorted(files(plain)) == sorted(files(lifted))


def test_the_lift_is_a_share_of_the_best_score_not_a_jump_over_everything() -> None:
    names = frozenset({"Melanie"})
    strong = Hit("a.md", 1, 1, "", "Caroline: painting, painting, Melanie's painting!", 10.0)
    weak = Hit("b.md", 1, 1, "", "Melanie: hello.", 1.0)
    close = Hit("c.md", 1, 1, "", "Melanie: I painted a horse.", 9.5)
    assert [h.path for h in lift([strong, weak, close], False, names)] == ["c.md", "a.md", "b.md"]
    assert [h.path for h in lift([strong, weak, close], False)] == ["a.md", "c.md", "b.md"]


def test_a_chunk_of_both_speakers_gains_half() -> None:
    names = frozenset({"Melanie"})
    both = Hit("a.md", 1, 2, "", "Caroline: Did you paint it?\nMelanie: Yes, a horse.", 10.0)
    own = Hit("b.md", 1, 1, "", "Melanie: I painted a horse.", 9.6)
    other = Hit("c.md", 1, 1, "", "Caroline: I painted a horse.", 10.2)
    # a tenth of 10.2, whole for Melanie's own line, half for the shared chunk: 10.62, 10.51,
    # 10.2 (a whole lift for the shared chunk would put it first, at 11.02)
    assert [h.path for h in lift([other, both, own], False, names)] == ["b.md", "a.md", "c.md"]


def test_hybrid_lifts_only_a_named_speaker() -> None:
    other = Hit("a.md", 1, 1, "", "Caroline: Your painting is lovely!", 1.0, "a")
    own = Hit("b.md", 1, 1, "", "Melanie: I painted a sunset.", 0.9, "b")
    dense = {"a": 0.5, "b": 0.5}
    assert [r.hit.path for r in fusion.rerank([other, own], dense, [], 10)] == ["a.md", "b.md"]
    caroline = fusion.rerank([other, own], dense, [], 10, names=frozenset({"Caroline"}))
    assert [r.hit.path for r in caroline] == ["a.md", "b.md"]
    melanie = fusion.rerank([other, own], dense, [], 10, names=frozenset({"Melanie"}))
    assert [r.hit.path for r in melanie] == ["b.md", "a.md"]
