"""Working memory over the real API: recallable at once, promoted by the sleep pass."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.service import MemoryService
from sidecar.working.working import SUMMARY, extractive
from tests.llm_stub import LLMStub


async def remember(client: TestClient, status: int = 201, **body: Any) -> dict[str, Any]:
    resp = await client.post("/memory/remember", json=body)
    answer = await resp.json()
    assert resp.status == status, answer
    return dict(answer)


async def recall(client: TestClient, query: str) -> list[dict[str, Any]]:
    resp = await client.post("/memory/recall", json={"query": query, "k": 10, "mark": False})
    assert resp.status == 200
    return list((await resp.json())["hits"])


def journal_lines(settings: Settings) -> list[dict[str, Any]]:
    """Every line of every day file: a sleep pass run for a moment minutes ahead writes
    into that moment's day, which is tomorrow's when the test runs just before midnight."""
    days = sorted((settings.agent_dir / "journal").glob("*.jsonl"))
    return [json.loads(line) for path in days for line in path.read_text().splitlines()]


async def test_a_working_entry_is_recallable_at_once(client: TestClient) -> None:
    saved = await remember(client, content="The flaky checkout test fails only on ARM runners",
                           session_id="s1", ttl_s=600)  # fmt: skip
    hits = await recall(client, "flaky checkout test ARM")
    assert [h["id"] for h in hits] == [saved["id"]]
    assert hits[0]["type"] == "working.note" and "valid_until" in hits[0]


async def test_the_sleep_pass_promotes_one_episode_per_session_and_source(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    first = [await remember(client, content=text, session_id="s1", source="user", ttl_s=600)
             for text in ("The user wants the report by Friday.",
                          "The report must include the Q3 churn numbers.",
                          "Churn numbers come from the billing warehouse.")]  # fmt: skip
    other = await remember(client, content="Deploy window is 14:00 UTC.", session_id="s2",
                           ttl_s=600)  # fmt: skip
    early = await service.working.sleep("agent", time.time() + 100)
    assert early["promoted"] == []  # none is past half its TTL yet
    done = await service.working.sleep("agent", time.time() + 301)
    assert sorted((p["session_id"], p["summary_of"]) for p in done["promoted"]) == [
        ("s1", 3), ("s2", 1),
    ]  # fmt: skip
    lines = journal_lines(settings)
    summary = next(r for r in lines if r.get("type") == SUMMARY and r["session_id"] == "s1")
    assert summary["summary_of"] == [f["id"] for f in first]
    assert summary["payload"]["summarised_by"] == "extractive"
    assert "report" in summary["summary"] and len(summary["summary"]) <= 600
    marker = next(r for r in lines if r.get("kind") == "summarised" and
                  r["into"] == summary["id"])  # fmt: skip
    assert lines.index(marker) == lines.index(summary) + 1  # one append, in order
    hits = await recall(client, "report churn numbers Friday")
    assert summary["id"] in [h["id"] for h in hits]
    assert not {f["id"] for f in first} & {h["id"] for h in hits}  # the originals left recall
    again = await service.working.sleep("agent", time.time() + 10_000)
    assert again["promoted"] == []  # promoted once
    assert other["id"] not in [h["id"] for h in await recall(client, "deploy window")]


async def test_promotion_survives_a_rebuild(settings: Settings) -> None:
    svc = MemoryService(settings)
    await svc.start()
    async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
        note = await remember(c, content="The VPN drops every 8 hours.", ttl_s=120)
        await svc.working.sleep("agent", time.time() + 61)
    await svc.stop()
    (settings.agent_dir / "journal.sqlite").unlink()
    svc = MemoryService(settings)
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            ids = [h["id"] for h in await recall(c, "VPN drops hours")]
            assert note["id"] not in ids and len(ids) == 1
    finally:
        await svc.stop()


async def test_with_an_llm_the_summary_is_the_llms(settings: Settings) -> None:
    stub = await LLMStub().start()
    stub.script({"summary": "The user reported that the VPN drops every 8 hours."})
    configured = dataclasses.replace(settings, llm_url=stub.url, llm_model="stub-3b")
    svc = MemoryService(configured)
    await svc.start()
    await svc.facts.stop()  # only the sleep pass is under test
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            await remember(c, content="vpn dropped again", ttl_s=120)
            done = await svc.working.sleep("agent", time.time() + 61)
        assert done["promoted"][0]["summarised_by"] == "ollama:stub-3b"
        summary = next(r for r in journal_lines(settings) if r.get("type") == SUMMARY)
        assert summary["summary"] == "The user reported that the VPN drops every 8 hours."
    finally:
        await svc.stop()
        await stub.stop()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "bad_content"),
        ({"content": "   "}, "bad_content"),
        ({"content": "x" * 2001}, "bad_content"),
        ({"content": "x", "ttl_s": 5}, "bad_ttl_s"),
        ({"content": "x", "ttl_s": "1h"}, "bad_ttl_s"),
        ({"content": "x", "session_id": 7}, "bad_session_id"),
        ({"content": "x", "colour": "red"}, "unknown_field"),
    ],
)
async def test_bad_working_entries_are_refused(
    client: TestClient, body: dict[str, Any], error: str
) -> None:
    assert (await remember(client, 400, **body))["error"] == error


def test_extractive_summary_keeps_the_informative_sentences_in_order() -> None:
    texts = [
        "The build failed. The build failed again.",
        "The cause was an expired signing certificate on the release runner.",
        "Renewing the certificate fixed the build.",
    ]
    # The certificate sentence says most; then the repeat that adds a word ("again")
    # ties with the fix and comes first; the fix no longer fits the cap; the bare repeat
    # adds nothing. The order is the notes' own.
    assert extractive(texts, cap=130) == (
        "The build failed again. The cause was an expired signing certificate on the release "
        "runner."
    )
    assert "Renewing the certificate fixed the build." in extractive(texts, cap=200)
