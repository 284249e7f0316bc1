"""The service runs what it declares: each capability opened and started in order, stopped
and closed in reverse, and its health and status parts in the real HTTP answers."""

from __future__ import annotations

import time
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.capability import Capability, Health
from sidecar.config import Settings
from sidecar.service import MemoryService


class Probe(Capability):
    """A capability that writes down each step the service runs on it."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def open(self) -> None:
        self.log.append(f"{self.name}.open")

    async def start(self) -> None:
        self.log.append(f"{self.name}.start")

    async def stop(self) -> None:
        self.log.append(f"{self.name}.stop")

    async def close(self) -> None:
        self.log.append(f"{self.name}.close")

    async def health(self) -> Health:
        return Health([f"{self.name}: degraded on purpose"], {self.name: "down"})

    async def status(self, scope: str) -> dict[str, Any]:
        return {self.name: scope}


async def test_declared_capabilities_run_in_order_and_answer_in_health_and_status(
    settings: Settings,
) -> None:
    svc = MemoryService(settings)
    steps: list[str] = []
    svc.capabilities = (Probe("first", steps), *svc.capabilities, Probe("last", steps))
    await svc.start()
    try:
        assert steps == ["first.open", "last.open", "first.start", "last.start"]
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            health = await (await client.get("/healthz")).json()
            status = await (await client.get("/memory/status", params={"scope": "agent"})).json()
        assert health["status"] == "degraded"
        assert health["reasons"][0] == "first: degraded on purpose"
        assert health["reasons"][-1] == "last: degraded on purpose"
        assert health["first"] == health["last"] == "down"
        assert health["write_path"] == {"ok": True, "reason": None}  # the others' parts too
        assert status["first"] == status["last"] == "agent"
        assert "journal" in status and "learnings" in status and "facts" in status
    finally:
        await svc.stop()
    assert steps[4:] == ["last.stop", "first.stop", "last.close", "first.close"]


async def test_a_failing_listener_does_not_stop_the_sleep_pass_or_the_others(
    client: TestClient, service: MemoryService
) -> None:
    """Working memory's sleep pass tells ``recorded`` listeners as the journal does: one that
    fails is logged, the summary is recorded and every other listener hears of it."""

    def broken(tier: str, records: list[dict[str, Any]]) -> None:
        raise RuntimeError("a listener with a bug")

    heard: list[str] = []
    service.hooks.recorded.insert(0, broken)
    service.hooks.recorded.append(lambda tier, records: heard.extend(r["id"] for r in records))
    resp = await client.post(
        "/memory/remember", json={"content": "The VPN drops every 8 hours.", "ttl_s": 120}
    )
    assert resp.status == 201
    done = await service.working.sleep("agent", time.time() + 61)
    assert [p["id"] for p in done["promoted"]] == heard[-1:]
