"""A member's client for the lead, against the lead's real crew app on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from sidecar.api.crew import create_crew_app
from sidecar.crew.client import LeadClient, LeadError
from sidecar.service import MemoryService
from tests.conftest import eventually

TOKEN = "crew-token"


@pytest.fixture
async def lead_client(service: MemoryService) -> AsyncIterator[LeadClient]:
    async with TestServer(create_crew_app(service, TOKEN), host="127.0.0.1") as server:
        client = LeadClient(str(server.make_url("")), TOKEN, probe_interval=0.02)
        await client.start()
        try:
            yield client
        finally:
            await client.close()


async def test_a_lead_whose_health_fails_is_not_reported_reachable(
    service: MemoryService, lead_client: LeadClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await eventually(lambda: _reachable(lead_client, True), "the first probe")

    async def broken() -> dict[str, Any]:
        raise RuntimeError("crew index is wedged")

    monkeypatch.setattr(service, "health", broken)
    await eventually(lambda: _reachable(lead_client, False), "the probe to see the failure")
    assert "answered 500" in (lead_client.last_error or "")

    monkeypatch.undo()
    await eventually(lambda: _reachable(lead_client, True), "the probe to see it back")


async def test_a_leads_refusal_is_passed_on_and_keeps_it_reachable(
    lead_client: LeadClient,
) -> None:
    await eventually(lambda: _reachable(lead_client, True), "the first probe")
    with pytest.raises(LeadError) as info:  # dense, but this lead has no embedder
        await lead_client.request(
            "POST", "/memory/search", {"query": "x", "scope": "crew", "mode": "dense"}
        )
    assert (info.value.status, info.value.body["error"]) == (503, "dense_unavailable")
    assert lead_client.reachable is True


async def _reachable(client: LeadClient, expected: bool) -> bool:
    return client.reachable is expected
