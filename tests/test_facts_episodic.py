"""Which events consolidation takes (episodic ones only: telemetry costs no model call),
and the ``supports`` links from a job's facts to the episodes they rest on, through the
HTTP API against the stand-in LLM server, with history laid down days in the past."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.facts import log as facts_log
from sidecar.facts.consolidation import CONSOLIDATED
from sidecar.journal.events import check_event, iso
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.llm_stub import EPISODES, LLMStub

TELEMETRY = ("exec.output_chunk", "container.metrics")


def when(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat().replace("+00:00", "Z")


def new_fact(text: str, episodes: list[str]) -> dict[str, Any]:
    return {"action": "new", "existing_fact_id": None, "category": "guideline", "fact": text,
            "keywords": text.split()[:3], "episode_ids": episodes}  # fmt: skip


async def serve(settings: Settings, worker: bool) -> tuple[MemoryService, TestClient]:
    svc = MemoryService(settings)
    await svc.start()
    if not worker:  # jobs run only when a test asks
        await svc.facts.stop()
    client = TestClient(TestServer(create_app(svc), host="127.0.0.1"))
    await client.start_server()
    return svc, client


async def shut(svc: MemoryService, client: TestClient) -> None:
    await client.close()
    await svc.stop()


async def record(client: TestClient, events: list[dict[str, Any]]) -> list[str]:
    resp = await client.post("/memory/journal", json={"events": events})
    assert resp.status == 201, await resp.json()
    return list((await resp.json())["ids"])


async def status(client: TestClient) -> dict[str, Any]:
    resp = await client.get("/memory/status", params={"scope": "agent"})
    assert resp.status == 200
    return dict((await resp.json())["facts"])


def telemetry(n: int, days_ago: float = 0.0) -> list[dict[str, Any]]:
    return [{"type": TELEMETRY[i % 2], "summary": f"chunk {i}: build step {i} of the image",
             "ts": when(days_ago)} for i in range(n)]  # fmt: skip


async def test_telemetry_costs_no_model_call_and_three_episodes_still_start_a_job(
    settings: Settings, stub: LLMStub
) -> None:
    stub.default = lambda prompt: {"facts": [new_fact("Build on the fast runner.", [EPISODES])]}
    svc, client = await serve(stub.serving(settings), worker=True)
    try:
        for part in range(0, 300, 100):  # 300 telemetry events, in batches as an agent would
            await record(client, telemetry(300)[part : part + 100])
        # and events of episodic types below their severity, which are not episodes either
        await record(client, [{"type": "keeper.decision", "summary": "kept the cache"}])
        assert (await status(client))["pending_episodes"] == 0
        resp = await client.post("/memory/consolidate", json={"scope": "agent"})
        assert (await resp.json())["jobs"] == {"agent": []} and stub.requests == []
        episodes = await record(client, [
            {"type": "user.correction", "summary": "Use the fast runner for builds"},
            {"type": "keeper.decision", "severity": "warn", "summary": "Slow runner timed out"},
            {"type": "tool.call", "summary": "Built on fast", "refs": {"episodic": True}},
        ])  # fmt: skip

        async def distilled() -> bool:
            return (await status(client))["jobs"] == 1

        await eventually(distilled, "three episodic events to start a job by themselves")
        assert len(stub.requests) == 1  # one model call, for the three episodes only
        prompt = json.dumps(stub.requests[0])
        assert all(e in prompt for e in episodes) and "build step" not in prompt
        assert (await status(client))["pending_episodes"] == 0  # its own event is no episode
    finally:
        await shut(svc, client)
    # At start, the journal's unconsolidated events are read through the same filter.
    svc, client = await serve(stub.serving(settings), worker=False)
    try:
        assert (await status(client))["pending_episodes"] == 0
    finally:
        await shut(svc, client)


async def test_working_memorys_summaries_stay_episodes(settings: Settings, stub: LLMStub) -> None:
    svc, client = await serve(stub.serving(settings), worker=False)
    try:
        stub.default = lambda prompt: {"summary": "The user prefers short replies."}
        resp = await client.post("/memory/remember", json={"content": "keep replies short",
                                                          "ttl_s": 60})  # fmt: skip
        assert resp.status in (200, 201), await resp.json()
        promoted = (await svc.working.sleep("agent", now=time.time() + 3600))["promoted"]
        assert len(promoted) == 1
        assert list(svc.facts.tiers["agent"].pending) == [promoted[0]["id"]]
    finally:
        await shut(svc, client)


async def test_applied_facts_support_their_episodes_in_the_journal(
    settings: Settings, stub: LLMStub
) -> None:
    svc, client = await serve(stub.serving(settings), worker=False)
    try:
        old = [
            {"type": "user.correction", "summary": s, "ts": when(3)}
            for s in ("Never deploy on Fridays", "Friday deploys broke prod", "Lunch at noon")
        ]
        cited = (ids := await record(client, old))[:2]  # fmt: skip
        stub.script({"facts": [new_fact("Never deploy on a Friday.", cited)]})
        resp = await client.post("/memory/consolidate", json={"scope": "agent"})
        (job,) = (await resp.json())["jobs"]["agent"]
        event = job["event"]
        assert event and (await status(client))["pending_episodes"] == 0

        # The journal holds the job's event, linked to the two episodes the fact cites.
        resp = await client.post("/memory/recall", json={"query": "deploy Fridays", "walk": 1,
                                                         "mark": False})  # fmt: skip
        hits = {h["id"]: h for h in (await resp.json())["hits"]}
        for episode in cited:
            links = [n for n in hits[episode]["neighbours"] if n["relation"] == "supports"]
            assert [(n["id"], n["type"], n["weight"]) for n in links] == [
                (event, CONSOLIDATED, 1.0)
            ]
        tj = svc.journal.tiers["agent"]
        assert tj.index is not None
        edges = await svc.journal.on_reader(tj.index.neighbours, [event])
        assert sorted(dst for dst, rel, _ in edges[event] if rel == "supports") == sorted(cited)
        assert ids[2] not in {dst for dst, _, _ in edges[event]}  # the fact does not cite it
        (row,) = await svc.journal.on_reader(tj.index.fetch, "id", [event])
        assert "Never deploy on a Friday." in row.summary

        # The fact's history names the event; the log's marker holds what it supports.
        (fact,) = (await (await client.post("/memory/facts", json={"query": "Friday"})).json())[
            "facts"
        ]
        resp = await client.get(f"/memory/facts/{fact['id']}/history")
        assert (await resp.json())["versions"][0]["evidence"] == event
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sidecar", "facts", "history", fact["id"],
            "--url", str(client.make_url("")).rstrip("/"), stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await cli.communicate()
        assert cli.returncode == 0 and f"evidence: journal event {event}" in out.decode()
        lines = (settings.agent_dir / facts_log.LOG).read_text().splitlines()
        marker = json.loads(lines[-1])
        assert marker["event"] == event and sorted(marker["supports"]) == sorted(cited)
    finally:
        await shut(svc, client)


def lay_down(settings: Settings, days_ago: int) -> tuple[list[str], str]:
    """Three episodes in a past day's journal file, and a facts log whose job applied a
    fact from them but whose event never reached the journal (a crash in between)."""
    at = time.time() - days_ago * 86400
    events = [check_event({"type": "user.correction", "summary": s, "ts": iso(at)}, at, "a").record
              for s in ("Call me Sam", "It is Sam, not Samuel", "Sam here")]  # fmt: skip
    journal = settings.agent_dir / "journal" / f"{iso(at)[:10]}.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text("".join(json.dumps(e) + "\n" for e in events))
    ids = [e["id"] for e in events]
    fact = {"kind": "fact", "id": "f-sam", "category": "identity", "fact": "The user is Sam.",
            "keywords": ["Sam"], "source_episode_ids": ids, "valid_at": iso(at),
            "created_at": iso(at), "job": "job-1"}  # fmt: skip
    event = "0190a3c5-0000-7000-8000-000000000001"
    marker = {"kind": "consolidated", "episode_ids": ids, "at": iso(at), "job": "job-1",
              "model": "stub-3b", "prompt_tokens": 10, "answer_tokens": 5, "event": event,
              "supports": ids, "facts": ["f-sam"]}  # fmt: skip
    log = settings.agent_dir / facts_log.LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps(fact) + "\n" + json.dumps(marker) + "\n")
    return ids, event


def journal_lines(root: Path, event: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted((root / "journal").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if event in (record.get("id"), record.get("src")):
                found.append(record)
    return found


async def test_a_job_whose_event_was_lost_writes_it_at_start_once(
    settings: Settings, stub: LLMStub
) -> None:
    ids, event = lay_down(settings, days_ago=5)
    for _ in range(2):  # a second start finds the event there and writes nothing
        svc, client = await serve(stub.serving(settings), worker=False)
        try:
            assert "unlinked_jobs" not in await status(client)
            tj = svc.journal.tiers["agent"]
            assert tj.index is not None
            edges = await svc.journal.on_reader(tj.index.neighbours, [event])
            assert sorted(dst for dst, rel, _ in edges[event] if rel == "supports") == sorted(ids)
        finally:
            await shut(svc, client)
    written = journal_lines(settings.agent_dir, event)
    events = [r for r in written if r.get("id") == event]
    assert len(events) == 1 and events[0]["type"] == CONSOLIDATED
    assert events[0]["ts"][:10] == iso(time.time() - 5 * 86400)[:10]  # when the job ran
    assert sorted(r["dst"] for r in written if r.get("kind") == "relation") == sorted(ids)
    assert stub.requests == []  # the episodes were consolidated: no job ran again


async def test_a_marker_whose_links_do_not_fit_is_read_with_defaults(
    settings: Settings, stub: LLMStub
) -> None:
    ids, _ = lay_down(settings, days_ago=2)
    log = settings.agent_dir / facts_log.LOG
    bad = {"kind": "consolidated", "episode_ids": ids, "at": iso(time.time()), "job": "job-2",
           "event": "e-" + "x" * 100, "supports": "all of them", "facts": [7]}  # fmt: skip
    with log.open("a") as f:
        f.write(json.dumps(bad) + "\n")
    svc, client = await serve(stub.serving(settings), worker=False)
    try:
        body = await status(client)
        assert body["jobs"] == 2 and body["unparsed_lines"] == 1
        assert "'event'" in body["problems"][0]["error"] and body["problems"][0]["line"] == 3
        assert "unlinked_jobs" not in body  # read as no event: nothing to write
    finally:
        await shut(svc, client)
