"""Updates are local: the later of two hits about one subject comes first, nothing else moves.

The rule alone (``retrieval.updates``), then journal recall over a real server and real
day files, with the events dated weeks apart in the past.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.index.dates import hit_date
from sidecar.retrieval.updates import later_first, stems
from sidecar.service import MemoryService
from tests.conftest import eventually


def iso(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")


def order(texts: list[str], ages: list[float | None], query: str, cos: Any = None) -> list[int]:
    words = [stems(t) for t in texts]
    asked = stems(query)
    when = [None if a is None else -a for a in ages]
    return later_first(when, [w & asked for w in words], words, cos or (lambda i, j: None))


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


def test_dense_closeness_decides_when_vectors_exist() -> None:
    texts = ["Errors go to Sentry.", "Error tracking moved to Rollbar."]  # few words shared
    assert order(texts, [50, 2], "error tracking tool") == [0, 1]  # one word in six: not alike
    assert order(texts, [50, 2], "error tracking tool", lambda i, j: 0.69) == [1, 0]
    assert order(texts, [50, 2], "error tracking tool", lambda i, j: 0.2) == [0, 1]


def test_closeness_is_not_chained_through_a_third_hit() -> None:
    # b is close to a and to c, but a and c are not close: a's group is {a, b}; c stays.
    sims = {(0, 1): 0.8, (0, 2): 0.1, (1, 2): 0.8}
    texts = ["cache ttl five minutes", "cache ttl one hour", "cache warmup job"]
    got = order(texts, [30, 20, 1], "cache", lambda i, j: sims[(min(i, j), max(i, j))])
    assert got == [1, 0, 2]


async def record(client: TestClient, summary: str, days: float) -> str:
    resp = await client.post("/memory/journal",
                             json={"type": "agent.observation", "summary": summary,
                                   "ts": iso(days), "refs": {"episodic": True}})  # fmt: skip
    body = await resp.json()
    assert resp.status == 201, body
    return str(body["ids"][0])


async def recall(client: TestClient, query: str, **extra: Any) -> list[dict[str, Any]]:
    resp = await client.post("/memory/recall", json={"query": query, "mark": False, **extra})
    body = await resp.json()
    assert resp.status == 200, body
    return list(body["hits"])


async def test_recall_puts_the_newer_statement_first_and_shows_both_dates(
    client: TestClient,
) -> None:
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
