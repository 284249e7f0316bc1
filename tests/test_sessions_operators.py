"""Operators on every event: the key of a session's operator (or of the ids an event
names) is on each line on disk, indexed, and what distill reads; recalls and searches
name their session and keep it from ending as idle."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.journal.events import check_event, iso
from sidecar.journal.index import Filters
from sidecar.journal.log import day_file
from sidecar.service import MemoryService
from tests.llm_stub import LLMStub

ADA = {"user_id": "ada@example.com", "workspace_id": "acme"}
BOB = {"user_id": "bob@example.com", "workspace_id": "acme"}


async def post(client: TestClient, path: str, status: int = 200, **body: Any) -> dict[str, Any]:
    resp = await client.post(path, json=body)
    answer = await resp.json()
    assert resp.status == status, answer
    return dict(answer)


def on_disk(root: Path) -> dict[str, dict[str, Any]]:
    """Every event line of the tier's journal, by id."""
    lines = [json.loads(line) for f in sorted((root / "journal").glob("*.jsonl"))
             for line in f.read_text().splitlines()]  # fmt: skip
    return {r["id"]: r for r in lines if "id" in r}


async def listed(svc: MemoryService, operator: str) -> set[str]:
    filters = Filters(operator=operator, include_expired=True, include_superseded=True)
    return {e["id"] for e in (await svc.journal.listing("agent", filters, None, 500))["events"]}


async def test_each_event_carries_its_own_operators_key_and_distill_reads_only_theirs(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    """Two operators' sessions interleaved, and events naming an operator without a
    session: each line on disk carries its own operator's key and never the ids; the
    index filters by it, also once rebuilt from the files; distill for Ada is asked
    about none of Bob's events."""
    agent, _ = tier_dirs
    stub = await LLMStub().start()
    stub.script({"fields": {"tone": "formal"}})
    svc = MemoryService(dataclasses.replace(settings, llm_url=stub.url, llm_model="stub-3b"))
    await svc.start()
    await svc.facts.stop()  # only the distillation asks the model here
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            a1 = (await post(c, "/memory/session/start", **ADA))["session_id"]
            b1 = (await post(c, "/memory/session/start", **BOB))["session_id"]
            anon = (await post(c, "/memory/session/start"))["session_id"]  # no operator
            ids: dict[str, list[str]] = {"ada": [], "bob": [], "none": []}
            for n in range(4):
                for sid, who in ((a1, "ada"), (b1, "bob"), (anon, "none")):
                    got = await post(c, "/memory/journal", 201, type="user.said",
                                     session_id=sid, summary=f"{who} says thing {n}")  # fmt: skip
                    ids[who] += got["ids"]
            direct = await post(c, "/memory/journal", 201, events=[
                {"type": "user.said", "summary": "bob says, sessionless", **BOB},
                {"type": "user.said", "summary": "ada says, sessionless", **ADA},
            ])  # fmt: skip
            ids["bob"].append(direct["ids"][0])
            ids["ada"].append(direct["ids"][1])
            # Half a name, or another operator than the session's: refused, nothing written.
            half = await post(c, "/memory/journal", 400, type="x", summary="y", user_id="ada")
            assert half["error"] == "bad_workspace_id"
            clash = await post(c, "/memory/journal", 409, type="x", summary="y",
                               session_id=a1, **BOB)  # fmt: skip
            assert clash["error"] == "session_operator" and "nothing was recorded" in clash[
                "detail"]  # fmt: skip
            control = await post(c, "/memory/journal", 400, type="x", summary="y",
                                 user_id="a\x00b", workspace_id="acme")  # fmt: skip
            assert control["error"] == "bad_user_id"
            answer = await post(c, "/memory/operator", **ADA, messages=30, distill=True)
        assert answer["fields"]["tone"] == "formal"
        keys = {s.operator for s in svc.sessions.sessions.values()}
        ada_key, bob_key = svc.sessions.sessions[a1].operator, svc.sessions.sessions[b1].operator
        assert ada_key and bob_key and ada_key != bob_key and keys == {ada_key, bob_key, None}
        lines = on_disk(agent)
        assert len(lines) == 14  # the refused ones wrote nothing
        for who, key in (("ada", ada_key), ("bob", bob_key), ("none", None)):
            assert {lines[i].get("operator") for i in ids[who]} == {key}
        raw = "".join(f.read_text() for f in (agent / "journal").glob("*.jsonl"))
        assert "ada@example.com" not in raw and "bob@example.com" not in raw
        assert await listed(svc, ada_key) == set(ids["ada"])
        (asked,) = stub.requests
        prompt = asked["messages"][1]["content"]
        assert prompt.count("ada says") == 5 and "bob" not in prompt and "none" not in prompt
        tj = svc.journal.tiers["agent"]
        await tj.run(tj.rebuild)  # from the files alone: the same index
        assert await listed(svc, ada_key) == set(ids["ada"])
        assert await listed(svc, bob_key) == set(ids["bob"])
    finally:
        await svc.stop()
        await stub.stop()


async def test_an_operator_value_that_does_not_fit_reads_as_none_and_is_reported(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    when = time.time() - 3600
    good = check_event({"type": "tool.call", "summary": "kept with its key"}, when, "a1").record
    bad = check_event({"type": "tool.call", "summary": "kept, no key"}, when, "a1").record
    good["operator"], bad["operator"] = "0f" * 16, ["not", "a", "key"]
    (agent / "journal").mkdir()
    (agent / day_file(iso(when)[:10])).write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    svc = MemoryService(settings)
    await svc.start()
    try:
        assert await listed(svc, "0f" * 16) == {good["id"]}
        events = (await svc.journal.listing("agent", Filters(), None, 10))["events"]
        assert {e["id"]: e.get("operator") for e in events} == {good["id"]: "0f" * 16,
                                                                  bad["id"]: None}  # fmt: skip
        problems = (await svc.status("agent"))["journal"]["problems"]
        assert any("'operator'" in json.dumps(p) for p in problems), problems
    finally:
        await svc.stop()


async def test_recalls_and_searches_name_their_session_which_is_then_not_idle(
    client: TestClient, service: MemoryService
) -> None:
    await post(client, "/memory/write", 201, file="daily/today", content="Rolled back api v3.")
    sid = (await post(client, "/memory/session/start", task="rollback"))["session_id"]
    other = (await post(client, "/memory/session/start"))["session_id"]
    sessions = service.sessions.sessions
    for s in (sid, other):
        sessions[s].last_seen -= 3 * 3600  # no event for three hours
    found = await post(client, "/memory/search", query="rolled back", session_id=sid)
    assert found["results"]
    assert await service.sessions.end_idle() == [other]  # the searching one stays open
    sessions[sid].last_seen -= 3 * 3600
    await post(client, "/memory/recall", query="rolled back", session_id=sid)
    assert await service.sessions.end_idle() == []
    bad = await post(client, "/memory/search", 400, query="x", session_id="a\x07b")
    assert bad["error"] == "bad_session_id"
    assert await service.sessions.end_idle(time.time() + 3600) == [sid]


def test_an_older_index_gains_the_operator_column_and_keeps_its_history(
    tmp_path: Path,
) -> None:
    from sidecar.journal.index import JournalIndex

    root = tmp_path / "tier"
    (root / "journal").mkdir(parents=True)
    when = time.time() - 60
    event = check_event({"type": "a.b", "summary": "hello"}, when, "a1").record
    event["operator"] = "ab" * 16
    (root / day_file(iso(when)[:10])).write_text(json.dumps(event) + "\n")
    index = JournalIndex(tmp_path / "j.sqlite")
    index.rebuild(root)
    index.add_snapshot("2026-11-01", {"score": 80.0})
    index.db.writer.execute("DROP INDEX events_by_operator")
    index.db.writer.execute("ALTER TABLE events DROP COLUMN operator")  # as version 4 had it
    index.db.writer.execute("PRAGMA user_version = 4")
    index.close()
    index = JournalIndex(tmp_path / "j.sqlite")
    try:
        assert index.rebuilt and index.rebuild(root) == 1
        assert index.snapshots(30) == [{"day": "2026-11-01", "score": 80.0}]
        (row,) = index.listing(Filters(operator="ab" * 16), time.time(), None, 10)
        assert row.id == event["id"]
    finally:
        index.close()


async def test_an_event_recorded_over_mcp_may_name_its_operator(
    service: MemoryService, settings: Settings
) -> None:
    from mcp import Client

    async with (
        TestServer(create_app(service), host="127.0.0.1") as srv,
        Client(str(srv.make_url("/mcp"))) as mcp,
    ):
        done = await mcp.call_tool("memory.record", {"type": "user.said", "summary": "hi",
                                                     **ADA})  # fmt: skip
        assert not done.is_error
        half = await mcp.call_tool("memory.record", {"type": "user.said", "summary": "hi",
                                                     "user_id": "ada"})  # fmt: skip
        assert half.is_error and "workspace_id" in half.content[0].text
    (line,) = on_disk(settings.agent_dir).values()
    assert len(line["operator"]) == 32 and "ada@example.com" not in json.dumps(line)
