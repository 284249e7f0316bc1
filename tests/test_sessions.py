"""Sessions end to end over the real API: a start answers the memory block, an end
promotes, summarises, records what changed and tells the learnings' extraction, once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from sidecar.config import Settings
from sidecar.journal.index import Filters
from sidecar.service import MemoryService

WHO = {"user_id": "ada@example.com", "workspace_id": "acme"}


async def post(client: TestClient, path: str, status: int = 200, **body: Any) -> dict[str, Any]:
    resp = await client.post(path, json=body)
    answer = await resp.json()
    assert resp.status == status, answer
    return dict(answer)


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
    before = await journal(service, sid)

    again = await post(client, "/memory/session/end", session_id=sid)
    assert (again["already_ended"], again["summary_id"]) == (True, episode["id"])
    assert await journal(service, sid) == before and len(told) == 1  # nothing twice
    kinds = [(r["kind"], r.get("step")) for r in session_log(settings)]
    assert kinds == [("started", None), ("step", "reinforced"), ("step", "promoted"),
                     ("step", "summarised"), ("ended", None)]  # fmt: skip
    restarted = await post(client, "/memory/session/start", 409, session_id=sid)
    assert restarted["error"] == "session_ended"
