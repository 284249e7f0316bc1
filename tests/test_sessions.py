"""Sessions end to end over the real API: a start answers the memory block, an end
promotes, summarises, records what changed and tells the learnings' extraction, once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from sidecar.config import Settings
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
