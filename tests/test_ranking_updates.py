"""Updates are local: the later of two hits about one subject comes first, nothing else moves.

The rule alone (``retrieval.updates``), then journal recall over a real server and real
day files, with the events dated weeks apart in the past.
"""

from __future__ import annotations

import dataclasses
import statistics
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.index.dates import hit_date
from sidecar.journal.change import reports_change
from sidecar.journal.recall import usual_closeness
from sidecar.journal.tier import EventVectors
from sidecar.retrieval.updates import later_first, stems, usual_overlap
from sidecar.service import MemoryService
from tests.conftest import eventually


def iso(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")


def order(
    texts: list[str],
    ages: list[float | None],
    query: str,
    cos: Any = None,
    **extra: Any,
) -> list[int]:
    words = [stems(t) for t in texts]
    asked = stems(query)
    when = [None if a is None else -a for a in ages]
    return later_first(when, [w & asked for w in words], words, cos or (lambda i, j: None),
                       **extra)  # fmt: skip


def test_the_later_statement_of_a_subject_takes_the_earlier_ones_place() -> None:
    texts = [
        "The staging deploy target region is eu-west-1.",  # older, most relevant
        "Lunch order for the offsite is pizza.",  # unrelated: keeps its place
        "Staging deploy target region changed to eu-west-2.",  # newer
    ]
    assert order(texts, [60, 1, 3], "staging deploy target region") == [2, 1, 0]


def test_unrelated_hits_keep_their_relevance_order_whatever_their_dates() -> None:
    texts = ["Nightly backups run at 02:00 UTC.", "Design review is on Tuesdays.",
             "The CI pipeline builds with Node 18."]  # fmt: skip
    assert order(texts, [90, 30, 1], "backups review pipeline") == [0, 1, 2]


def test_a_hit_without_a_date_or_without_the_querys_words_never_moves() -> None:
    texts = ["Log retention is 14 days.", "We keep logs for 90 days now.", "Retention: 90 days."]
    # The undated restatement stays below; the one not naming "logs" is not about them.
    assert order(texts, [40, None, 1], "how long are logs kept") == [0, 1, 2]


def test_without_vectors_a_shared_word_the_query_lacks_makes_two_hits_one_subject() -> None:
    older = "Nightly backups run at two in the morning from the storage cluster."
    query = "when do nightly backups run"
    # Both share the question's words with the older statement, which every hit does; the
    # move also names the same cluster (3 words in 21), the dashboard nothing else.
    moved = ("Nightly backups now start at half past four, once the cluster batch jobs and "
             "the weekly reindex of archive tables finish, Omar says.")  # fmt: skip
    chatter = ("Nightly backup dashboard redesign drafted by Omar with fresh colours and "
               "several charts.")  # fmt: skip
    assert order([older, moved], [60, 2], query) == [1, 0]
    assert order([older, chatter], [60, 2], query) == [0, 1]
    # Unless the candidates usually share that much beyond the query (every turn of a
    # conversation names its speakers).
    assert order([older, moved], [60, 2], query, usual_words=lambda: 0.5) == [0, 1]


def test_without_vectors_a_later_hit_sharing_less_of_the_earlier_than_the_question_stays() -> None:
    """A restatement is as near the earlier as the question is: the question names three
    of its words, a later hit naming two of them (and one more) is not its restatement."""
    older = "Nightly backups run at two in the morning from the storage cluster."
    later = "Backups now start at half past four, after the cluster batch jobs finish."
    assert order([older, later], [60, 2], "when do nightly backups run") == [0, 1]
    assert order([older, later], [60, 2], "when do backups run") == [1, 0]


FLUSHING = "Hydrant flushing for the north zone happens every April and October, overnight."
FOLLOW_UP = ("North zone hydrant flushing overnight left brown water on Birch Rd; crews "
             "advised running cold taps.")  # fmt: skip
MOVED = "North zone hydrant flushing now happens every May and November, overnight."


def test_without_vectors_a_later_hit_restating_no_value_of_the_earlier_stays_below() -> None:
    """Shared words say two hits share a topic; only a value given differently (the months
    here) says the later replaces the earlier. A follow-up keeps its relevance place."""
    texts = [FLUSHING, FOLLOW_UP, MOVED]
    query = "When does north zone hydrant flushing happen?"

    def replaces(i: int, j: int) -> bool:
        return reports_change(texts[i], texts[j])

    assert order(texts[:2], [300, 30], query) == [1, 0]  # words alone: one subject
    assert order(texts[:2], [300, 30], query, replaces=replaces) == [0, 1]
    assert order(texts, [300, 30, 10], query, replaces=replaces) == [2, 1, 0]


def test_a_later_hit_giving_nothing_of_the_kind_asked_stays_below_with_or_without_vectors() -> None:
    """Two hits alike in words or in meaning are one subject, but the question asks for a
    kind of value (``journal.answers``) and the later gives none: it keeps its place."""
    texts = ["Rooftop bar closes for the season on 31 October.",
             "Rooftop bar closes early for the season party: 14 events booked."]  # fmt: skip
    query = "When does the rooftop bar close for the season?"
    assert order(texts, [300, 30], query) == [1, 0]  # words alone: one subject
    assert order(texts, [300, 30], query, answers=[True, False]) == [0, 1]
    assert order(texts, [300, 30], query, answers=[False, True]) == [1, 0]  # the later gives it
    close = {"cos": lambda i, j: 0.9, "to_query": [0.5, 0.5]}
    assert order(texts, [300, 30], query, **close) == [1, 0]
    assert order(texts, [300, 30], query, answers=[True, False], **close) == [0, 1]


def test_usual_overlap_is_what_candidates_share_beyond_the_query() -> None:
    asked = stems("support group")
    turns = [stems(t) for t in ("Caroline: the support group met again.",
                                "Melanie: Caroline, how was the support group?",
                                "Caroline: Melanie, it was moving.",
                                "Melanie: painting with the kids today.")]  # fmt: skip
    apart = [stems(t) for t in ("Support group moved to Mondays.", "Group chat is muted.",
                                "Payroll is paid on Friday.", "Backups run nightly.")]  # fmt: skip
    assert usual_overlap(turns, asked) > 0.2 > usual_overlap(apart, asked) == 0.0
    assert usual_overlap(turns[:2], asked) is None  # one pair says nothing of usual


def test_dense_closeness_decides_when_vectors_exist() -> None:
    texts = ["Errors go to Sentry.", "Error tracking moved to Rollbar instead of the old tool."]
    near = [0.5, 0.5]  # each hit's cosine to the query
    query = "which error tracker"
    assert order(texts, [50, 2], query) == [0, 1]  # one word in eight: not alike
    assert order(texts, [50, 2], query, lambda i, j: 0.69, to_query=near) == [1, 0]
    assert order(texts, [50, 2], query, lambda i, j: 0.2, to_query=near) == [0, 1]


def test_closeness_the_query_explains_is_not_one_subject() -> None:
    # Two hits each 0.8 from the query are 0.64 alike through it alone: at 0.66 they share
    # almost nothing else (partial cosine 0.06); at 0.5 from the query, 0.66 is a lot.
    texts = ["Passport expires in March 2031.", "Passport photos for the kids are done."]
    cos = lambda i, j: 0.66  # noqa: E731
    assert order(texts, [300, 20], "passport", cos, to_query=[0.8, 0.8]) == [0, 1]
    assert order(texts, [300, 20], "passport", cos, to_query=[0.5, 0.5]) == [1, 0]


def test_hits_no_closer_than_the_querys_candidates_usually_are_stay_apart() -> None:
    # Turns of one conversation are all alike: 0.66 means one subject only where the
    # candidates are usually further apart than that.
    texts = ["Caroline went to the support group.", "Caroline: the support group was great."]
    cos, near = (lambda i, j: 0.66), [0.5, 0.5]
    assert order(texts, [30, 2], "support group", cos, to_query=near, usual=lambda: 0.55) == [1, 0]
    assert order(texts, [30, 2], "support group", cos, to_query=near, usual=lambda: 0.7) == [0, 1]


def test_usual_closeness_is_read_from_the_pools_vectors() -> None:
    vectors = EventVectors("test-model", 2)
    unit = [[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]]
    vectors.add(["a", "b", "c", "d"], np.array(unit, np.float32))
    pool = [SimpleNamespace(id=i) for i in ("a", "b", "c", "d", "no-vector")]
    sims = [0.8, 0.6, 0.0, 0.96, 0.6, 0.8]  # the six pairs of a, b, c, d
    got = usual_closeness(vectors, pool)  # type: ignore[arg-type]
    assert got == pytest.approx(statistics.fmean(sims) + statistics.pstdev(sims), abs=1e-6)
    assert usual_closeness(vectors, pool[:2] + pool[4:]) is None  # type: ignore[arg-type]
    assert usual_closeness(None, pool) is None  # type: ignore[arg-type]


def test_a_far_less_relevant_later_hit_does_not_displace_the_answer() -> None:
    texts = ["The staging deploy target region is eu-west-1.",
             "Staging deploy target region changed to eu-west-2."]  # fmt: skip
    query = "staging deploy target region"
    assert order(texts, [60, 3], query, relevance=[0.9, 0.5]) == [1, 0]
    assert order(texts, [60, 3], query, relevance=[0.9, 0.2]) == [0, 1]


def test_closeness_is_not_chained_through_a_third_hit() -> None:
    # b is close to a and to c, but a and c are not close: a's group is {a, b}; c stays.
    sims = {(0, 1): 0.8, (0, 2): 0.1, (1, 2): 0.8}
    texts = ["cache ttl five minutes", "cache ttl one hour", "cache warmup job"]
    got = order(texts, [30, 20, 1], "cache", lambda i, j: sims[(min(i, j), max(i, j))],
                to_query=[0.5, 0.5, 0.5])  # fmt: skip
    assert got == [1, 0, 2]


async def record(client: TestClient, summary: str, days: float) -> str:
    resp = await client.post("/memory/journal",
                             json={"type": "agent.observation", "summary": summary,
                                   "ts": iso(days), "refs": {"episodic": True}})  # fmt: skip
    body = await resp.json()
    assert resp.status == 201, body
    return str(body["ids"][0])


BACKGROUND = ("Lunch order for the offsite is pizza.", "Design review moved to Thursday.",
              "The CI pipeline builds with Node 18.", "Standup is at 9:30 every weekday.",
              "Nightly backups run at 02:00 UTC.")  # fmt: skip


async def recall(client: TestClient, query: str, **extra: Any) -> list[dict[str, Any]]:
    resp = await client.post("/memory/recall", json={"query": query, "mark": False, **extra})
    body = await resp.json()
    assert resp.status == 200, body
    return list(body["hits"])


async def test_recall_puts_the_newer_statement_first_and_shows_both_dates(
    client: TestClient,
) -> None:
    for i, chatter in enumerate(BACKGROUND):  # so the question's words are rare, as in a journal
        await record(client, chatter, 30 + i)
    # The older statement shares more words with the question, so relevance puts it first.
    older = await record(client, "Postgres primary database server runs version 14.9", 20)
    newer = await record(client, "Upgraded the Postgres primary database to 16.2", 2)
    other = await record(client, "Postgres primary version bump meeting moved to Friday", 10)
    query = "Postgres primary database server version"
    by_relevance = [h["id"] for h in await recall(client, query, ranking="relevance")]
    assert by_relevance.index(older) < by_relevance.index(newer)
    hits = await recall(client, query)
    ids = [h["id"] for h in hits]
    assert ids.index(newer) < ids.index(older)
    assert set(ids) == set(by_relevance) == {older, newer, other}  # the same hits
    when = {h["id"]: h["ts"] for h in hits}
    assert when[newer] > when[older]
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)  # a moved hit took its place's score


async def test_an_old_answer_never_updated_stays_first_above_later_chatter(
    client: TestClient,
) -> None:
    """The default ranking has no age decay: a ten-month-old answer nobody replaced stays
    above later events sharing its words. The reference's ordering (``importance``, age
    decay included) is still there to ask for, and puts it last."""
    for i, chatter in enumerate(BACKGROUND):
        await record(client, chatter, 40 + i)
    answer = await record(client, "Alex's passport number ends in 4471 and it expires in "
                          "March 2031.", 300)  # fmt: skip
    await record(client, "Passport photos for the kids are done; forms go in next week.", 20)
    await record(client, "Processing fee for the expedited passport renewal was $60.", 10)
    query = "When does Alex's passport expire?"
    hits = await recall(client, query)
    assert hits[0]["id"] == answer
    assert hits[0]["importance"] < hits[1]["importance"]  # decayed, shown, not ranked by
    reference = await recall(client, query, ranking="importance")
    assert [h["id"] for h in reference][-1] == answer


async def test_a_later_follow_up_sharing_the_answers_words_stays_below_it(
    client: TestClient,
) -> None:
    """Sparse recall: the follow-up is about the answer's subject and later, but states
    no value of its own for the answer's slot, so the old answer keeps first place."""
    for i, chatter in enumerate(BACKGROUND):
        await record(client, chatter, 40 + i)
    answer = await record(client, FLUSHING, 300)
    later = await record(client, FOLLOW_UP, 30)
    query = "When does north zone hydrant flushing happen?"
    by_relevance = [h["id"] for h in await recall(client, query, ranking="relevance")]
    assert by_relevance[:2] == [answer, later]
    assert [h["id"] for h in await recall(client, query)][:2] == [answer, later]


async def test_recall_with_vectors_puts_a_reworded_update_first(settings: Settings) -> None:
    svc = MemoryService(dataclasses.replace(settings, embedder="minilm"))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            older = await record(client, "Infra alerts are posted to the infra-alerts Slack "
                                 "channel for the platform team.", 12)  # fmt: skip
            newer = await record(client, "Infra alerts now go to platform-oncall on Slack.", 2)
            other = await record(client, "Renamed my Slack display name to include pronouns.", 6)
            query = "infra alerts slack channel"

            async def embedded() -> bool:
                hits = await recall(client, query)
                return len(hits) == 3 and all(h["cosine"] is not None for h in hits)

            await eventually(embedded, "the three events embedded", within=60)
            by_relevance = [h["id"] for h in await recall(client, query, ranking="relevance")]
            assert by_relevance == [older, newer, other]
            # The rename is later than the older statement but not about it (cosine 0.54):
            # it stays where relevance put it.
            assert [h["id"] for h in await recall(client, query)] == [newer, older, other]
    finally:
        await svc.stop()


@pytest.mark.parametrize(
    ("path", "heading", "expected"),
    [
        ("daily/2023-05-08.md", "Session 1 (1:56 pm on 8 May, 2023)", "2023-05-08"),
        ("daily/2023-05-08.md", "Session 2 (10:00 am on 9 May, 2023)", "2023-05-09"),
        ("notes/standups.md", "Standup > May 3rd, 2024", "2024-05-03"),
        ("daily/2026-11-21.md", "Decisions > Database", "2026-11-21"),
        ("daily/2023-02-30.md", "", None),  # not a day: no date, no error
        ("AGENT.md", "Session 9 (on 31 June, 2023)", None),
        ("AGENT.md", "Decisions", None),
    ],
)
def test_a_hits_date_is_its_headings_else_its_file_names(
    path: str, heading: str, expected: str | None
) -> None:
    assert hit_date(path, heading) == expected


async def test_search_hits_carry_the_day_they_are_about(
    client: TestClient, settings: Settings
) -> None:
    daily = settings.agent_dir / "daily"
    daily.mkdir(parents=True, exist_ok=True)
    (daily / "2026-03-02.md").write_text("# Standup\n\nThe ingest queue moved to Redis.\n")
    (daily / "2025-12-01.md").write_text(
        "## Session 4 (9:05 am on 28 November, 2025)\n\nThe ingest queue runs on RabbitMQ.\n"
    )
    (settings.agent_dir / "AGENT.md").write_text("# Notes\n\nThe ingest queue has alerts.\n")

    async def indexed() -> bool:
        resp = await client.post("/memory/search", json={"query": "ingest queue"})
        return (await resp.json())["count"] == 3

    await eventually(indexed, "the three notes indexed")
    resp = await client.post("/memory/search", json={"query": "ingest queue"})
    dates = {r["file"]: r.get("date") for r in (await resp.json())["results"]}
    assert dates == {"daily/2026-03-02.md": "2026-03-02", "daily/2025-12-01.md": "2025-11-28",
                     "AGENT.md": None}  # fmt: skip
