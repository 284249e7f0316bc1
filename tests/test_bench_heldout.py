"""The held-out sets hold what issue 33 asks of them, and their scoring counts what it says.

No daemon here: the bench part runs the sets against one; these check the data's
composition (so a later edit cannot quietly shrink or skew it) and the scoring functions
on rankings whose answers are known.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from bench import heldout


def test_updates_set_has_the_composition_the_issue_asks_for() -> None:
    data = heldout.load(heldout.UPDATES)
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


def test_update_events_place_every_named_event_once_in_time_order() -> None:
    data = heldout.load(heldout.UPDATES)
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


def test_lessons_set_has_every_role_for_every_topic() -> None:
    data = heldout.load(heldout.LESSONS)
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
