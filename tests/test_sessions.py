"""Sessions end to end over the real API: a start answers the memory block, an end
promotes, summarises, records what changed and tells the learnings' extraction, once."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from mcp import Client

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.journal.events import check_event, iso
from sidecar.journal.index import Filters
from sidecar.journal.log import day_file
from sidecar.service import MemoryService
from sidecar.sessions.tools import END, START
from tests.llm_stub import LLMStub
from tests.sidecar_process import SidecarProcess

WHO = {"user_id": "ada@example.com", "workspace_id": "acme"}


async def post(client: TestClient, path: str, status: int = 200, **body: Any) -> dict[str, Any]:
    resp = await client.post(path, json=body)
    answer = await resp.json()
    assert resp.status == status, answer
    return dict(answer)


async def tool_calls(client: TestClient, session_id: str, word: str, count: int) -> None:
    """``count`` tool calls journaled for the session in one batch, summaries "WORD n"."""
    calls = [{"type": "tool.call", "summary": f"{word} {n}", "session_id": session_id}
             for n in range(count)]  # fmt: skip
    await post(client, "/memory/journal", 201, events=calls)


def session_log(settings: Settings) -> list[dict[str, Any]]:
    path = settings.agent_dir / "sessions" / "log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_start_answers_the_block_for_its_task_and_is_idempotent(
    client: TestClient, service: MemoryService, settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    (agent / "AGENT.md").write_text("# Agent\n\nDeploys go through the staging gate first.\n")
    await post(client, "/memory/write", 201, file="daily/today", content="Rolled back api v3.")
    await post(client, "/memory/journal", 201, type="deploy.failed",
               summary="api v3 deploy failed: migration lock", severity="error")  # fmt: skip
    started = await post(client, "/memory/session/start", task="deploy api v3", **WHO)
    sid = started["session_id"]
    assert len(sid) == 36 and started["started"] is True  # a UUIDv7, assigned
    expected = await (await client.get("/memory/context", params={
        "query": "deploy api v3", "session_id": sid, **WHO})).text()  # fmt: skip
    assert started["context"] == expected
    assert "staging gate" in started["context"] and "migration lock" in started["context"]
    again = await post(client, "/memory/session/start", session_id=sid, task="deploy api v3",
                       **WHO)  # fmt: skip
    assert (again["session_id"], again["started"]) == (sid, False)
    assert again["started_at"] == started["started_at"]
    (line,) = session_log(settings)
    assert (line["kind"], line["session_id"], line["task"]) == ("started", sid, "deploy api v3")
    assert WHO["user_id"] not in json.dumps(line) and len(line["operator"]) >= 16  # keyed


async def journal(service: MemoryService, session_id: str, *types: str) -> list[dict[str, Any]]:
    """Every event of the session, promoted and expired ones too."""
    filters = Filters(session_id=session_id, types=types, include_expired=True,
                      include_superseded=True)  # fmt: skip
    return list((await service.journal.listing("agent", filters, None, 500))["events"])


SCRIPT = [
    *({"type": "tool.call", "summary": f"kubectl rollout status api step {n}"} for n in range(30)),
    {"type": "deploy.failed", "summary": "api v3 deploy failed: the migration held a table lock",
     "severity": "error"},
    *({"type": "tool.call", "summary": f"retry with lock timeout, attempt {n}"} for n in range(7)),
    {"type": "deploy.succeeded", "summary": "api v3 deployed after running the migration first"},
    {"type": "user.correction", "summary": "Always run migrations before the rollout, not after"},
]  # fmt: skip


async def test_a_scripted_session_ends_once_with_every_step(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    told: list[tuple[str, dict[str, Any]]] = []
    service.hooks.session_ended.append(lambda tier, s: told.append((tier, s)))
    sid = (await post(client, "/memory/session/start", task="deploy api v3", **WHO))["session_id"]
    assert len(SCRIPT) == 40
    await post(client, "/memory/journal", 201, events=[{**e, "session_id": sid} for e in SCRIPT])
    note = await post(client, "/memory/remember", 201, session_id=sid,
                      content="The migration lock comes from the nightly vacuum.")  # fmt: skip
    ended = await post(client, "/memory/session/end", session_id=sid)
    assert (ended["ended"], ended["already_ended"], ended["events"]) == (True, False, 41)
    (promoted,) = ended["promoted"]
    (summary,) = await journal(service, sid, "working.summary")  # the note, promoted now
    assert summary["id"] == promoted and note["id"] in summary["payload"]["summary_of"]
    (episode,) = await journal(service, sid, "summary.generated")
    assert episode["id"] == ended["summary_id"] and episode["session_id"] == sid
    assert episode["payload"]["summarised_by"] == "extractive"  # no LLM configured
    assert "migration" in episode["summary"]
    (updated,) = await journal(service, sid, "memory.updated")
    assert updated["id"] == ended["memory_updated"]
    assert updated["payload"]["changed"] == ["working notes promoted"]
    ((tier, told_session),) = told
    assert tier == "agent"
    assert {k: told_session[k] for k in ("session_id", "events", "summary_id", "task")} == {
        "session_id": sid,
        "events": 41,
        "summary_id": episode["id"],
        "task": "deploy api v3",
    }
    assert told_session["operator"] and WHO["user_id"] not in json.dumps(told_session)
    assert episode["payload"]["operator"] == told_session["operator"] == session_log(
        settings)[0]["operator"]  # fmt: skip
    before = await journal(service, sid)

    again = await post(client, "/memory/session/end", session_id=sid)
    assert (again["already_ended"], again["summary_id"]) == (True, episode["id"])
    assert await journal(service, sid) == before and len(told) == 1  # nothing twice
    kinds = [(r["kind"], r.get("step")) for r in session_log(settings)]
    assert kinds == [("started", None), ("step", "reinforced"), ("step", "promoted"),
                     ("step", "summarised"), ("ended", None)]  # fmt: skip
    restarted = await post(client, "/memory/session/start", 409, session_id=sid)
    assert restarted["error"] == "session_ended"


async def test_a_session_that_wrote_a_note_records_memory_updated_and_resets_the_nudge(
    client: TestClient, service: MemoryService
) -> None:
    quiet = (await post(client, "/memory/session/start", task="read logs"))["session_id"]
    await post(client, "/memory/journal", 201, type="tool.call", summary="tail", session_id=quiet)
    busy = (await post(client, "/memory/session/start", task="fix the deploy"))["session_id"]
    await tool_calls(client, busy, "step", 60)
    block = (await post(client, "/memory/session/start", session_id=busy))["context"]
    assert "60 new journal entries since your last memory update" in block
    await post(client, "/memory/write", 201, file="AGENT.md", content="Run migrations first.")
    ended = await post(client, "/memory/session/end", session_id=busy)
    (updated,) = await journal(service, busy, "memory.updated")
    assert updated["id"] == ended["memory_updated"]
    assert updated["payload"]["changed"] == ["agent notes written"]
    await tool_calls(client, quiet, "more", 59)
    block = (await post(client, "/memory/session/start", session_id=quiet))["context"]
    assert "NUDGE" not in block  # 60 events in all, but only 59 since memory was updated
    await post(client, "/memory/journal", 201, type="tool.call", summary="one", session_id=quiet)
    block = (await post(client, "/memory/session/start", session_id=quiet))["context"]
    assert "60 new journal entries" in block
    quiet_end = await post(client, "/memory/session/end", session_id=quiet)
    assert quiet_end["memory_updated"] is None and quiet_end["summary_id"]  # wrote no memory
    assert await journal(service, quiet, "memory.updated") == []


def lay_down(root: Path, records: list[dict[str, Any]]) -> None:
    (root / "sessions").mkdir(exist_ok=True)
    with (root / "sessions" / "log.jsonl").open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def past_events(root: Path, session_id: str, hours_ago: float, summaries: list[str]) -> None:
    when = time.time() - hours_ago * 3600
    records = [check_event({"type": "tool.call", "summary": s, "session_id": session_id},
                           when, "a1").record for s in summaries]  # fmt: skip
    (root / "journal").mkdir(exist_ok=True)
    with (root / day_file(iso(when)[:10])).open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


async def test_idle_sessions_end_by_themselves_after_a_restart(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    """Left open by a daemon that died three hours ago: the first sweep ends it; one
    started five minutes ago stays open."""
    agent, _ = tier_dirs
    old, recent, busy = "run-old", "run-recent", "run-busy"
    lay_down(agent, [
        {"kind": "started", "session_id": old, "at": iso(time.time() - 3 * 3600), "task": "t"},
        {"kind": "started", "session_id": busy, "at": iso(time.time() - 3 * 3600)},
        {"kind": "started", "session_id": recent, "at": iso(time.time() - 300)},
        {"kind": "step", "session_id": "nobody", "step": "promoted", "at": iso(time.time())},
        {"kind": "started", "session_id": "bad\x07id", "at": iso(time.time())},
    ])  # fmt: skip
    (agent / "sessions" / "log.jsonl").open("a").write("{torn\n")
    past_events(agent, old, 3, ["opened the runbook", "restarted the api pods"])
    past_events(agent, busy, 0.1, ["still at it"])  # recorded before the daemon died
    svc = MemoryService(settings)
    await svc.start()
    told: list[dict[str, Any]] = []
    svc.hooks.session_ended.append(lambda tier, s: told.append(s))
    try:
        status = await svc.status("agent")
        assert status["sessions"]["open"] == 3
        problems = status["sessions"]["problems"]
        assert [p.split(": ", 1)[0] for p in problems] == [
            "sessions/log.jsonl line 4",
            "sessions/log.jsonl line 5",
            "sessions/log.jsonl line 6",
        ]
        assert "no 'started' line" in problems[0] and "printable" in problems[1]
        assert "not JSON" in problems[2]
        assert await svc.sessions.end_idle() == [old]
        (episode,) = await journal(svc, old, "summary.generated")
        assert "restarted the api pods" in episode["summary"]
        assert [t["session_id"] for t in told] == [old] and told[0]["events"] == 2
        assert await svc.sessions.end_idle() == []
        assert (await svc.status("agent"))["sessions"]["open"] == 2  # recent, and busy
        assert sorted(await svc.sessions.end_idle(time.time() + 3600)) == [busy, recent]
    finally:
        await svc.stop()


async def test_an_end_cut_short_by_a_crash_runs_only_the_steps_left(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    """The daemon died after the summary episode was appended and before its step was
    written: the end finds the episode instead of writing a second one."""
    agent, _ = tier_dirs
    sid, now = "cut-short", time.time()
    lay_down(agent, [
        {"kind": "started", "session_id": sid, "at": iso(now - 7200)},
        {"kind": "step", "session_id": sid, "step": "reinforced", "at": iso(now - 60),
         "reinforced": {}},
        {"kind": "step", "session_id": sid, "step": "promoted", "at": iso(now - 60),
         "promoted": []},
    ])  # fmt: skip
    past_events(agent, sid, 2, ["checked the queue depth"])
    summary = check_event(
        {
            "type": "summary.generated",
            "summary": "Checked the queue.",
            "session_id": sid,
            "source": "sessions",
        },
        now - 30,
        "a1",
    ).record
    with (agent / day_file(iso(now - 30)[:10])).open("a") as f:
        f.write(json.dumps(summary) + "\n")
    svc = MemoryService(settings)
    await svc.start()
    told: list[dict[str, Any]] = []
    svc.hooks.session_ended.append(lambda tier, s: told.append(s))
    try:
        ended = await svc.sessions.end(sid)
        assert ended["summary_id"] == summary["id"] and ended["events"] == 1
        assert len(await journal(svc, sid, "summary.generated")) == 1
        assert [t["summary_id"] for t in told] == [summary["id"]]
        steps = [(r["kind"], r.get("step")) for r in session_log(settings)]
        assert steps[3:] == [("step", "summarised"), ("ended", None)]  # none run twice
    finally:
        await svc.stop()


async def test_bad_starts_and_ends_are_refused_and_start_nothing(
    client: TestClient, settings: Settings
) -> None:
    for body, code in (
        ({"task": "x", "mood": "great"}, "unknown_field"),
        ({"session_id": "run\x07one"}, "bad_session_id"),
        ({"session_id": "run\u202eeno"}, "bad_session_id"),  # a bidi override
        ({"session_id": ""}, "bad_session_id"),
        ({"user_id": "ada"}, "bad_workspace_id"),  # the model is kept per user and workspace
        ({"workspace_id": "acme"}, "bad_user_id"),
        ({"user_id": "ada\x00", "workspace_id": "acme"}, "bad_user_id"),
        ({"task": "q" * 5000}, "query_too_long"),
        ({"budget": 10}, "bad_budget"),
        ({"agent_id": 7}, "bad_agent_id"),
    ):
        answer = await post(client, "/memory/session/start", 400, **body)
        assert answer["error"] == code, (body, answer)
        assert answer["detail"]
    resp = await client.post("/memory/session/start", data="[1]",
                             headers={"Content-Type": "application/json"})  # fmt: skip
    assert resp.status == 400
    for body, code in (({}, "bad_session_id"), ({"session_id": "a\nb"}, "bad_session_id"),
                       ({"session_id": "s", "x": 1}, "unknown_field")):  # fmt: skip
        assert (await post(client, "/memory/session/end", 400, **body))["error"] == code
    assert not (settings.agent_dir / "sessions").exists()  # nothing was started
    # An id never started here ends as it always has: its reinforcement, nothing else.
    unknown = await post(client, "/memory/session/end", session_id="never-started")
    assert unknown == {"session_id": "never-started", "reinforced": {}, "started": False,
                       "ended": False}  # fmt: skip
    assert not (settings.agent_dir / "sessions").exists()


async def test_distill_reads_only_the_operators_own_sessions(settings: Settings) -> None:
    """Two operators' sessions interleaved: what the LLM is asked about one holds none
    of the other's events."""
    stub = await LLMStub().start()
    stub.script({"summary": "Ada said things."}, {"fields": {"tone": "formal"}})
    svc = MemoryService(dataclasses.replace(settings, llm_url=stub.url, llm_model="stub-3b"))
    await svc.start()
    await svc.facts.stop()  # only the distillation is under test
    bob = {"user_id": "bob@example.com", "workspace_id": "acme"}
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            a1 = (await post(c, "/memory/session/start", **WHO))["session_id"]
            b1 = (await post(c, "/memory/session/start", **bob))["session_id"]
            a2 = (await post(c, "/memory/session/start", **WHO))["session_id"]
            for n in range(6):
                for sid, who in ((a1, "ada"), (b1, "bob"), (a2, "ada")):
                    await post(c, "/memory/journal", 201, type="user.said", session_id=sid,
                               summary=f"{who} says thing {n}")  # fmt: skip
            await post(c, "/memory/journal", 201, type="user.said", summary="bob, sessionless")
            await post(c, "/memory/session/end", session_id=a1)  # ended sessions count too
            answer = await post(c, "/memory/operator", **WHO, messages=30, distill=True)
        assert answer["written"] and answer["fields"]["tone"] == "formal"
        summary_asked, asked = stub.requests  # a1's summary episode, then the distillation
        assert "bob" not in summary_asked["messages"][1]["content"]
        prompt = asked["messages"][1]["content"]
        assert prompt.count("ada says") == 12 and "bob" not in prompt
    finally:
        await svc.stop()
        await stub.stop()


def test_a_session_open_when_the_daemon_is_killed_ends_once_after_the_restart(
    tmp_path: Path,
) -> None:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    daemon = SidecarProcess(agent, crew).start()
    try:
        started = json.loads(cli(daemon, "start", "--task", "rotate keys", "--json"))
        sid = started["session_id"]
        for n in range(3):
            daemon.request("POST", "/memory/journal", {"type": "tool.call", "session_id": sid,
                                                       "summary": f"rotated key {n}"})  # fmt: skip
        daemon.request("POST", "/memory/remember", {"session_id": sid, "content": "keys: vault"})
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(10)
        daemon.start()
        again = daemon.request("POST", "/memory/session/start", {"session_id": sid})
        assert again["started"] is False  # still open after the crash
        ended = daemon.request("POST", "/memory/session/end", {"session_id": sid})
        assert (ended["ended"], ended["events"], len(ended["promoted"])) == (True, 4, 1)
        twice = daemon.request("POST", "/memory/session/end", {"session_id": sid})
        assert twice["already_ended"] is True and twice["summary_id"] == ended["summary_id"]
        assert "had already ended" in cli(daemon, "end", sid)
    finally:
        daemon.kill()
    records = [json.loads(line) for f in sorted((agent / "journal").glob("*.jsonl"))
               for line in f.read_text().splitlines()]  # fmt: skip
    summaries = [r for r in records if r.get("type") == "summary.generated"]
    assert [s["id"] for s in summaries] == [ended["summary_id"]]


def cli(daemon: SidecarProcess, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "sidecar", "session", *args, "--url", daemon.url],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return done.stdout


async def test_a_session_over_mcp(service: MemoryService) -> None:
    app = create_app(service)
    async with TestServer(app, host="127.0.0.1") as srv, Client(str(srv.make_url("/mcp"))) as mcp:
        started = await mcp.call_tool(START, {"task": "deploy api v3", "session_id": "mcp-1"})
        assert not started.is_error
        assert started.structured_content["session_id"] == "mcp-1"
        assert "Started session mcp-1" in started.content[0].text
        await mcp.call_tool("memory.record", {"type": "tool.call", "summary": "helm upgrade",
                                              "session_id": "mcp-1"})  # fmt: skip
        ended = await mcp.call_tool(END, {"session_id": "mcp-1"})
        assert ended.structured_content["events"] == 1
        again = await mcp.call_tool(END, {"session_id": "mcp-1"})
        assert "already ended" in again.content[0].text
        bad = await mcp.call_tool(START, {"session_id": "a\x07b"})
        assert bad.is_error


async def test_an_idle_end_that_fails_degrades_health_until_one_succeeds(
    service: MemoryService, client: TestClient, settings: Settings
) -> None:
    sid = (await post(client, "/memory/session/start", task="t"))["session_id"]
    await post(client, "/memory/journal", 201, type="tool.call", summary="ls", session_id=sid)
    log_file = settings.agent_dir / "sessions" / "log.jsonl"
    kept = log_file.read_bytes()
    log_file.unlink()
    log_file.mkdir()  # the log cannot be appended to
    later = time.time() + 3600
    assert await service.sessions.end_idle(later) == [sid]
    health = await (await client.get("/healthz")).json()
    assert health["status"] == "degraded" and health["sessions"]["last_error"]
    assert any(r.startswith(f"sessions: ending session '{sid}' failed") for r in health["reasons"])
    log_file.rmdir()
    log_file.write_bytes(kept)
    assert await service.sessions.end_idle(later) == [sid]  # tried again, and done
    health = await (await client.get("/healthz")).json()
    assert health["sessions"]["last_error"] is None and "reasons" not in health
    assert len(await journal(service, sid, "summary.generated")) == 1


async def test_unfit_values_in_the_log_read_as_their_defaults(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    now = time.time()
    lay_down(agent, [
        {"kind": "started", "session_id": "edited", "at": iso(now - 60), "operator": "a\x07b"},
        {"kind": "ended", "session_id": "edited", "at": iso(now), "events": "many",
         "summary_id": 7, "memory_updated": ["x"]},
        {"kind": "started", "session_id": "half", "at": iso(now - 60)},
        {"kind": "step", "session_id": "half", "step": "reinforced", "at": iso(now),
         "reinforced": "lots"},
        {"kind": "step", "session_id": "half", "step": "promoted", "at": iso(now),
         "promoted": {"not": "a list"}},
        {"kind": "step", "session_id": "half", "step": "summarised", "at": iso(now),
         "events": True, "summary_id": None},
    ])  # fmt: skip
    svc = MemoryService(settings)
    await svc.start()
    try:
        assert svc.sessions.sessions["edited"].operator is None  # not a label: no operator
        edited = await svc.sessions.end("edited")
        assert (edited["already_ended"], edited["events"], edited["summary_id"],
                edited["memory_updated"]) == (True, 0, None, None)  # fmt: skip
        half = await svc.sessions.end("half")
        assert (half["reinforced"], half["promoted"], half["events"]) == ({}, [], 0)
        assert half["ended"] and session_log(settings)[-1]["kind"] == "ended"
    finally:
        await svc.stop()


async def test_a_session_searching_learnings_is_not_idle(
    client: TestClient, service: MemoryService
) -> None:
    await post(client, "/memory/learnings", 201, text="Run migrations before the rollout.",
               type="procedural", file="deploys")  # fmt: skip
    sid = (await post(client, "/memory/session/start"))["session_id"]
    service.sessions.sessions[sid].last_seen -= 3 * 3600  # no event for three hours
    hits = await post(client, "/memory/learnings/search", query="migrations rollout",
                      session_id=sid)  # fmt: skip
    assert hits["hits"]  # the search named the session, and it was shown a learning
    assert await service.sessions.end_idle() == []
    assert await service.sessions.end_idle(time.time() + 3600) == [sid]


def test_a_task_too_long_is_refused_by_its_own_name() -> None:
    """The 400 said 'query' is limited, to a caller that sent no query."""
    import pytest

    from sidecar.errors import ApiError
    from sidecar.sessions import ops

    with pytest.raises(ApiError) as exc:
        ops.START.parse({"task": "a" * 5000})
    assert exc.value.status == 400 and exc.value.detail.startswith("'task' is limited")
