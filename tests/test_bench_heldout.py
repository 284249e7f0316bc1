"""The held-out sets hold what issue 33 asks of them, and their scoring counts what it says.

No daemon here: the bench part runs the sets against one; these check the data's
composition (so a later edit cannot quietly shrink or skew it) and the scoring functions
on rankings whose answers are known.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import pytest

from bench import heldout, heldout2, heldout3, heldout4, heldout5, heldout6
from bench.restated_pairs import _words as words

UPDATE_SETS = pytest.mark.parametrize(
    "path",
    [
        heldout.UPDATES,
        heldout.UPDATES2,
        heldout.UPDATES3,
        heldout.UPDATES4,
        heldout.UPDATES5,
        heldout.UPDATES6,
    ],
    ids=["v1", "v2", "v3", "v4", "v5", "v6"],
)
LESSON_SETS = pytest.mark.parametrize(
    "path",
    [
        heldout.LESSONS,
        heldout.LESSONS2,
        heldout.LESSONS3,
        heldout.LESSONS4,
        heldout.LESSONS5,
        heldout.LESSONS6,
    ],
    ids=["v1", "v2", "v3", "v4", "v5", "v6"],
)
# The later sets (v2 on) hold the data checks below as well.
LATER_UPDATES = pytest.mark.parametrize(
    "path",
    [heldout.UPDATES2, heldout.UPDATES3, heldout.UPDATES4, heldout.UPDATES5, heldout.UPDATES6],
    ids=["v2", "v3", "v4", "v5", "v6"],
)
LATER_LESSONS = pytest.mark.parametrize(
    "path",
    [heldout.LESSONS2, heldout.LESSONS3, heldout.LESSONS4, heldout.LESSONS5, heldout.LESSONS6],
    ids=["v2", "v3", "v4", "v5", "v6"],
)


@UPDATE_SETS
def test_updates_set_has_the_composition_the_issue_asks_for(path: Path) -> None:
    data = heldout.load(path)
    pairs, distractors = data["pairs"], data["distractors"]
    assert len(pairs) >= 40
    assert len(distractors) >= 200
    leans = Counter(heldout.lean(p) for p in pairs)
    assert all(leans[side] >= len(pairs) // 4 for side in ("older", "even", "newer")), leans
    first = min(dt.datetime.fromisoformat(p["older"]["ts"]) for p in pairs)
    last = max(dt.datetime.fromisoformat(p["newer"]["ts"]) for p in pairs)
    assert (last - first).days >= 300  # spread over about a year
    by_key = {p["key"]: p for p in pairs}
    assert all(p["older"]["ts"] < p["newer"]["ts"] for p in pairs)
    later = [d for d in distractors if d["role"].startswith("later") and d["about"] in by_key]
    assert len(later) >= 20
    assert all(d["ts"] > by_key[d["about"]]["newer"]["ts"] for d in later)
    assert len(data["sanity"]) >= 5


@UPDATE_SETS
def test_update_events_place_every_named_event_once_in_time_order(path: Path) -> None:
    data = heldout.load(path)
    events, where = heldout.update_events(data)
    assert len(events) == 2 * len(data["pairs"]) + len(data["sanity"]) + len(data["distractors"])
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    newest = max(dt.datetime.fromisoformat(e["ts"]) for e in events)
    assert newest.date() < dt.date.today()  # shifted so "now" is today: nothing in the future
    pair = data["pairs"][0]
    assert events[where[f"o:{pair['key']}"]]["summary"] == pair["older"]["summary"]
    assert events[where[f"n:{pair['key']}"]]["summary"] == pair["newer"]["summary"]


def test_score_updates_counts_newer_first_missing_older_and_sanity() -> None:
    data = {
        "pairs": [
            {"key": "a", "older": {"summary": "x"}, "newer": {"summary": "y"}, "query": "qa"},
            {"key": "b", "older": {"summary": "x"}, "newer": {"summary": "y"}, "query": "qb"},
            {"key": "c", "older": {"summary": "x"}, "newer": {"summary": "y"}, "query": "qc"},
        ],
        "sanity": [{"key": "s", "query": "qs"}],
    }
    ids = ["oa", "na", "ob", "nb", "oc", "nc", "s", "d"]
    where = {"o:a": 0, "n:a": 1, "o:b": 2, "n:b": 3, "o:c": 4, "n:c": 5, "s:s": 6}
    ranked = {
        "qa": ["d", "na", "oa"],  # newer above older
        "qb": ["ob", "nb"],  # older above newer
        "qc": ["d", "d", "d", "d", "d", "nc"],  # older missing: newer counts, but not top 5
        "qs": ["d", "s"],  # the sanity answer pushed down
    }
    score = heldout.score_updates(data, ranked, ids, where)
    assert score["newer_first"] == 2 / 3
    assert score["newer_top5"] == 2  # a and b; c's newer is sixth
    assert score["missed"] == ["b"]
    assert (score["sanity_hit1"], score["sanity_missed"]) == (0, ["s"])


@LESSON_SETS
def test_lessons_set_has_every_role_for_every_topic(path: Path) -> None:
    data = heldout.load(path)
    entries = {e["key"]: e for e in data["entries"]}
    kinds = Counter(q["kind"] for q in data["queries"])
    assert kinds["prominent"] >= 12 and kinds["exact"] >= 6
    for q in data["queries"]:
        answer = entries[q["answer"]]
        assert q["relevant"][q["answer"]] == 3 and answer["status"] == "active"
        if q["kind"] == "prominent":
            weak, retired = entries[q["weak"]], entries[q["retired"]]
            dups = [k for k, e in entries.items() if e.get("dup_group") == answer["dup_group"]]
            assert len(dups) == 2 and all(k in q["relevant"] for k in dups)
            assert answer["reinforcement_count"] > weak["reinforcement_count"]
            assert answer["importance"] > weak["importance"]
            assert retired["status"] == "retired" and q["weak"] not in q["relevant"]
        else:
            neighbour = entries[q["neighbour"]]
            assert neighbour["importance"] > answer["importance"]
            assert neighbour["reinforcement_count"] > answer["reinforcement_count"]


def test_score_lessons_counts_first_places_and_retired_shown() -> None:
    data = {
        "entries": [
            {"key": "p", "status": "active"},
            {"key": "w", "status": "active"},
            {"key": "r", "status": "retired"},
            {"key": "x", "status": "active"},
        ],
        "queries": [
            {"key": "q1", "kind": "prominent", "answer": "p", "relevant": {"p": 3}},
            {"key": "q2", "kind": "exact", "answer": "x", "relevant": {"x": 3}},
        ],
    }
    score = heldout.score_lessons(data, {"q1": ["p", "r"], "q2": ["w", "x"]})
    assert score["prominent_first"] == 1
    assert score["exact_first"] == 0
    assert score["retired_shown"] == 1
    assert 0.5 < score["ndcg"] < 1.0


def test_bare_bm25_ranks_by_the_query_words() -> None:
    texts = ["the nightly load starts late", "unrelated text", "nightly nightly load"]
    assert heldout.bare_bm25(texts, ["nightly load"], 5) == {"nightly load": [2, 0]}


# -- the later sets (v2 on): checks of the data itself, beyond the composition above -----


@LATER_UPDATES
def test_later_updates_keys_dates_and_roles_hold_together(path: Path) -> None:
    data = heldout.load(path)
    pairs, sanity, distractors = data["pairs"], data["sanity"], data["distractors"]
    keys = [p["key"] for p in pairs] + [s["key"] for s in sanity]
    assert len(keys) == len(set(keys))
    summaries = [e["summary"] for p in pairs for e in (p["older"], p["newer"])]
    summaries += [s["event"]["summary"] for s in sanity] + [d["summary"] for d in distractors]
    assert len(summaries) == len(set(summaries))  # no event written twice
    now = dt.datetime.fromisoformat(data["now"] + "T23:59:59+00:00")
    stamps = [e["ts"] for p in pairs for e in (p["older"], p["newer"])]
    stamps += [s["event"]["ts"] for s in sanity] + [d["ts"] for d in distractors]
    year_before = now - dt.timedelta(days=366)
    assert all(year_before <= dt.datetime.fromisoformat(ts) <= now for ts in stamps)
    leans = Counter(heldout.lean(p) for p in pairs)
    assert all(leans[side] >= len(pairs) // 4 for side in ("older", "even", "newer")), leans
    assert len(sanity) >= 7
    for s in sanity:  # a sanity answer has later events on its subject that do not replace it
        after = [d for d in distractors if d["about"] == s["key"] and d["ts"] > s["event"]["ts"]]
        assert after, s["key"]
    # some newer statements do not repeat a single word of their question
    assert sum(not words(p["query"]) & words(p["newer"]["summary"]) for p in pairs) >= 5
    roles = Counter(d["role"] for d in distractors)
    assert roles["same subject"] >= 80 and roles["other subject"] >= 60
    about = {p["key"]: p for p in pairs} | {s["key"]: s for s in sanity}
    for d in distractors:
        assert (d["about"] is None) == (d["role"] == "other subject")
        assert d["about"] is None or d["about"] in about
    later = [d for d in distractors if d["role"].startswith("later")]
    assert {d["about"] for d in later} == {p["key"] for p in pairs}  # one or more per pair
    for d in later:  # later than the newer statement, and sharing words with the question
        pair = about[d["about"]]
        assert d["ts"] > pair["newer"]["ts"] and words(d["summary"]) & words(pair["query"])


@LATER_UPDATES
def test_later_every_question_shares_its_subject_with_the_events_that_answer_it(
    path: Path,
) -> None:
    """A question the set cannot answer would score noise: each pair's question names its
    subject in one of the pair's statements, and each sanity question in its event (by at
    least two words)."""
    data = heldout.load(path)
    for p in data["pairs"]:
        q = words(p["query"])
        assert q & (words(p["older"]["summary"]) | words(p["newer"]["summary"])), p["key"]
    for s in data["sanity"]:
        assert len(words(s["query"]) & words(s["event"]["summary"])) >= 2, s["key"]


@LATER_LESSONS
def test_later_lessons_roles_are_what_the_issue_describes(path: Path) -> None:
    data = heldout.load(path)
    entries = {e["key"]: e for e in data["entries"]}
    assert len(entries) == len(data["entries"])
    assert len({q["key"] for q in data["queries"]}) == len(data["queries"])
    assert len({e["text"] for e in data["entries"]}) == len(entries)
    kinds = Counter(q["kind"] for q in data["queries"])
    assert kinds["prominent"] >= 12 and kinds["exact"] >= 6
    named_retired = {q["retired"] for q in data["queries"] if q["kind"] == "prominent"}
    assert named_retired == {k for k, e in entries.items() if e["status"] == "retired"}
    for q in data["queries"]:
        task, answer = words(q["query"]), entries[q["answer"]]
        assert all(entries[k]["status"] == "active" for k in q["relevant"])
        if q["kind"] == "prominent":
            weak, retired = entries[q["weak"]], entries[q["retired"]]
            # the weak entry shares more of the task's words than the lesson that answers it
            assert len(task & words(weak["text"])) > len(task & words(answer["text"])), q["key"]
            assert weak["file"] == answer["file"] == retired["file"]
            assert answer["last_reinforced"] > retired["last_reinforced"]
        else:
            neighbour = entries[q["neighbour"]]
            assert len(task & words(answer["text"])) >= len(task & words(neighbour["text"]))
            assert answer["reinforcement_count"] == 0 and answer["importance"] <= 0.35
    for e in entries.values():
        assert e["created"] <= (e["last_reinforced"] or e["created"]) <= data["now"]
        assert (e["reinforcement_count"] == 0) == (e["last_reinforced"] is None), e["key"]


@pytest.mark.parametrize(
    ("updates", "lessons"),
    [
        (heldout.UPDATES2, heldout.LESSONS2),
        (heldout.UPDATES3, heldout.LESSONS3),
        (heldout.UPDATES4, heldout.LESSONS4),
        (heldout.UPDATES5, heldout.LESSONS5),
        (heldout.UPDATES6, heldout.LESSONS6),
    ],
    ids=["v2", "v3", "v4", "v5", "v6"],
)
def test_later_smoke_slice_is_small_and_keeps_every_kind(updates: Path, lessons: Path) -> None:
    upd, les = heldout.smoke(heldout.load(updates), heldout.load(lessons))
    assert (len(upd["pairs"]), len(upd["sanity"]), len(upd["distractors"])) == (3, 1, 20)
    assert [q["kind"] for q in les["queries"]] == ["prominent", "prominent", "exact"]
    events, where = heldout.update_events(upd)
    assert len(events) == 3 * 2 + 1 + 20 and len(where) == 3 * 2 + 1
    names = (heldout2.NAME, heldout3.NAME, heldout4.NAME, heldout5.NAME, heldout6.NAME)
    assert names == ("heldout2", "heldout3", "heldout4", "heldout5", "heldout6")


@pytest.mark.parametrize(
    ("path", "least"),
    [(heldout.UPDATES4, 10), (heldout.UPDATES5, 12), (heldout.UPDATES6, 14)],
    ids=["v4", "v5", "v6"],
)
def test_sanity_questions_are_many_and_each_has_later_events_on_its_subject(
    path: Path, least: int
) -> None:
    """v4 to v6 weigh sanity as much as updates: many questions whose older answer stays
    right, each followed by two or more events on the same subject that do not replace it."""
    data = heldout.load(path)
    assert len(data["sanity"]) >= least
    for s in data["sanity"]:
        after = [
            d
            for d in data["distractors"]
            if d["about"] == s["key"] and d["ts"] > s["event"]["ts"] and d["role"] == "same subject"
        ]
        assert len(after) >= 2, s["key"]


def test_v5_lessons_vary_how_many_task_words_the_prominent_lesson_shares() -> None:
    """v5 asks the ranking to find a prominent lesson that shares one task word as well as
    one that shares several, and to keep the wordier weak entry below both."""
    data = heldout.load(heldout.LESSONS5)
    text = {e["key"]: e["text"] for e in data["entries"]}
    shared = [
        len(words(q["query"]) & words(text[q["answer"]]))
        for q in data["queries"]
        if q["kind"] == "prominent"
    ]
    assert min(shared) == 1 and sum(n == 1 for n in shared) >= 4
    assert sum(n >= 3 for n in shared) >= 2


def test_v6_lessons_range_from_no_shared_task_word_to_several() -> None:
    """v6 asks the ranking to find a prominent lesson that shares no word with its task, as
    well as one that shares one or several, with a wordier weak entry below each; and has
    seven topics where the exact answer is a low-importance entry."""
    data = heldout.load(heldout.LESSONS6)
    text = {e["key"]: e["text"] for e in data["entries"]}
    shared = [
        len(words(q["query"]) & words(text[q["answer"]]))
        for q in data["queries"]
        if q["kind"] == "prominent"
    ]
    assert sum(n == 0 for n in shared) >= 2 and sum(n == 1 for n in shared) >= 3
    assert sum(n >= 3 for n in shared) >= 3
    assert sum(q["kind"] == "exact" for q in data["queries"]) >= 7


def test_v6_sanity_answers_precede_every_event_on_their_subject() -> None:
    """v6 keeps at least 14 sanity questions, and each sanity answer comes before every
    same-subject event about it (three or more), so none of them could be the answer."""
    data = heldout.load(heldout.UPDATES6)
    assert len(data["pairs"]) >= 40 and len(data["sanity"]) >= 14
    for s in data["sanity"]:
        after = [
            d for d in data["distractors"] if d["about"] == s["key"] and d["role"] == "same subject"
        ]
        assert len(after) >= 3 and all(d["ts"] > s["event"]["ts"] for d in after), s["key"]
