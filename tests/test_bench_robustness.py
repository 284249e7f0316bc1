"""The robustness bench's transforms: each rewrites what it says and nothing else, keeps
every turn where it was (the evidence still points at it), and never reads a moved date
again."""

from __future__ import annotations

import json

from bench import robustness


def _sample() -> dict[str, object]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Yesterday I bought a car."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "We met last Friday, in June."},
            ],
            "session_2_date_time": "10:37 am on 27 December, 2023",
            "session_2": [
                {"speaker": "Ana", "dia_id": "D2:1", "text": "Two days ago, on 3 March, 2023."},
            ],
        },
        "qa": [
            {"question": "When did Ana buy a car?", "evidence": ["D1:1"], "category": 2},
            {"question": "When did Ben meet Ana?", "evidence": ["D1:2"], "category": 2},
            {"question": "What happened on 3 March, 2023?", "evidence": ["D2:1"], "category": 4},
        ],
    }


def _texts(sample: dict[str, object]) -> list[str]:
    conv = sample["conversation"]
    assert isinstance(conv, dict)
    return [t["text"] for key in ("session_1", "session_2") for t in conv[key]]


def test_relative_forms_rewrites_relative_expressions_only() -> None:
    original = _sample()
    out = robustness.transform(original, "relative")
    assert _texts(out) == [
        "The other day I bought a car.",
        "We met this past Friday, in June.",
        "A couple of days ago, on 3 March, 2023.",
    ]
    assert out["qa"] == original["qa"]
    assert _texts(original)[0] == "Yesterday I bought a car."  # the source is not touched


def test_reworded_questions_use_synonyms_and_other_ways_to_ask_when() -> None:
    out = robustness.transform(_sample(), "reworded")
    assert [q["question"] for q in out["qa"]] == [
        "At what point did Ana purchase a vehicle?",
        "On what date did Ben get together with Ana?",
        "What happened on 3 March, 2023?",
    ]
    assert _texts(out) == _texts(_sample())
    assert [q["evidence"] for q in out["qa"]] == [["D1:1"], ["D1:2"], ["D2:1"]]


def test_shifted_moves_sessions_and_written_dates_alike_once() -> None:
    out = robustness.transform(_sample(), "shifted")
    conv = out["conversation"]
    assert conv["session_1_date_time"] == "7:13 pm on 16 August, 2023"
    assert conv["session_2_date_time"] == "3:54 pm on 5 April, 2024"  # a later year
    # 3 March + 100 days is 11 June; a month alone moves by the three months 100 days span
    assert _texts(out)[1:] == [
        "We met last Friday, in September.",
        "Two days ago, on 11 June, 2023.",
    ]
    assert out["qa"][2]["question"] == "What happened on 11 June, 2023?"
    # each date moves once: "16 August, 2023" is not read again as "August, 2023"
    assert robustness.shifted("8 May, 2023; May 2023; May 8th, 2023") == (
        "16 August, 2023; August 2023; August 16th, 2023"
    )
    assert robustness.shifted("30 February 2023") == "30 February 2023"  # no such day: kept


def test_per_category_weighs_each_conversation_by_its_questions() -> None:
    lines = [
        json.dumps({"sample": s, "category": c, "recall_budget": r})
        for s, c, r in [("a", 2, 1.0), ("a", 2, 0.0), ("a", 4, 1.0), ("b", 2, 0.5)]
    ]
    rows = robustness.per_category(lines)
    assert rows[0][robustness.TEMPORAL] == (0.5, 2)
    assert rows[0]["all"] == (2 / 3, 3)
    assert rows[1][robustness.TEMPORAL] == (0.5, 1)
    assert robustness.overall(rows, robustness.TEMPORAL) == 0.5
    assert robustness.overall(rows, "all", skip=1) == 2 / 3


def test_the_audit_chooses_on_or_off_on_the_other_conversations() -> None:
    """Conversation 0 gains a temporal question with the mechanism on, conversation 1 loses
    overall with it: each held conversation is scored with what the other one chose."""
    on = {0: {"all": (0.6, 2), robustness.TEMPORAL: (1.0, 1)},
          1: {"all": (0.4, 2), robustness.TEMPORAL: (0.0, 1)}}  # fmt: skip
    off = {0: {"all": (0.5, 2), robustness.TEMPORAL: (0.0, 1)},
           1: {"all": (0.5, 2), robustness.TEMPORAL: (0.0, 1)}}  # fmt: skip
    scores = {"fts5": {"original": off}, "hybrid": {"original": on},
              "hybrid, no x": {"original": off}}  # fmt: skip
    table = robustness._audit(scores, ("fts5", "hybrid", "hybrid, no x"))
    # held 0: conversation 1 did better off, so 0 is scored off (no gain); held 1: 0 chose on
    assert table.rows == [["hybrid, no x", "+0.000 off", "+0.000 on", "0.000"]]
