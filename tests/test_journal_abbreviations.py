"""A subject written short ("LB", "DB") is the subject the question spells out."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from sidecar.journal.change import reports_change
from sidecar.retrieval.updates import expands, fold, later_first, spelled_out, stems
from tests.test_journal import recall
from tests.test_journal_updates import FILLER, ids, lay_down


def test_a_short_form_stands_for_initials_or_one_words_letters() -> None:
    assert expands("lb", ["load", "balancer", "idle"]) == ["load", "balancer"]
    assert expands("rpm", ["requests", "per", "minute"]) == ["requests", "per", "minute"]
    assert expands("db", ["database", "refresh"]) == ["database"]
    assert expands("s", ["seconds"]) == ["seconds"]
    assert expands("db", ["dashboard"]) == ["dashboard"]  # letters in order: d...b
    assert expands("lb", ["balancer", "load"]) == []  # initials in their order only
    assert expands("qa", ["queue"]) == []  # no "a" after its "q"
    assert expands("", ["load"]) == [] and expands("lbxyz", ["load"]) == []
    assert expands("db", ["db"]) == []  # the word itself is no abbreviation of it


def test_only_capitals_are_read_as_short_forms() -> None:
    query = "What is the load balancer idle timeout?"
    assert spelled_out("Raised LB idle timeout to 350 s.", query) == {"load", "balan"}
    assert spelled_out("Raised lb idle timeout to 350 s.", query) == set()
    assert spelled_out("Raised the LBs idle timeout.", query) == {"load", "balan"}
    assert spelled_out("Staging DB refresh runs nightly.", "staging database refresh") == {"datab"}
    assert spelled_out("Kofi runs QA.", query) == set()  # stands for none of its words


async def test_an_update_writing_the_subject_short_comes_above_the_older(
    client: TestClient,
) -> None:
    """Weeks apart; the later writes "LB" where the question and the earlier write "load
    balancer": relevance puts the earlier first, recall the later. (The link the two rare
    words "idle timeout" make finds this pair too; the restated-pairs benchmark, among 200
    distractors sharing such words, is where the spelled-out words alone decide.)"""
    older, newer = await lay_down(
        client,
        [(70, "The Kestrel load balancer idle timeout is 60 seconds."),
         (12, "Raised LB idle timeout to 350 s: long-polling clients kept dropping during "
              "the websocket migration, support said.")],
    )  # fmt: skip
    await lay_down(client, [(60 - 5 * i, text) for i, text in enumerate(FILLER)])
    question = "What is the Kestrel load balancer idle timeout?"
    by_relevance = ids((await recall(client, question, k=5, ranking="relevance"))["hits"])
    assert by_relevance.index(older) < by_relevance.index(newer)
    order = ids((await recall(client, question, k=5, mark=False))["hits"])
    assert order.index(newer) < order.index(older)


def test_inflections_of_one_word_fold_together() -> None:
    assert fold("refreshed") == fold("refresh") == fold("refreshes") == fold("refreshing")
    assert fold("update") == fold("updated") and fold("dashboards") == fold("dashboard")
    assert fold("glass") == "glass" and fold("bus") == "bus"  # no plural to fold
    assert stems("Staging DB refresh runs nightly.") & stems("staging database refreshed") == {
        fold("staging"),
        fold("refresh"),
    }


def test_a_short_subject_and_an_inflected_verb_still_make_one_subject() -> None:
    """Sparse: the later writes "DB" and "refresh" where the earlier and the question write
    "database" and "refreshed"; spelled out and folded, it shares the question's words
    with the earlier, reports a change (weekly -> every night) and comes first."""
    query = "How often is the staging database refreshed?"
    texts = [
        "The staging database is refreshed from prod weekly.",
        "Staging DB refresh runs every night since QA asked for it.",
    ]
    words = [stems(t) | spelled_out(t, query) for t in texts]
    args = ([-60.0, -5.0], [w & stems(query) for w in words], words, lambda i, j: None)
    replaces = lambda i, j: reports_change(texts[i], texts[j])  # noqa: E731
    assert later_first(*args, replaces=replaces) == [1, 0]
    bare = [stems(t) for t in texts]  # without the spelled-out words: two subjects
    assert later_first([-60.0, -5.0], [w & stems(query) for w in bare], bare,
                       lambda i, j: None, replaces=replaces) == [0, 1]  # fmt: skip
