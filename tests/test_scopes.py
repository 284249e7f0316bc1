"""One scope vocabulary (agent, crew, both) across the HTTP API, the MCP tools and the
command line; recall's older words (own, crew_shared) still accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.api.mcp.tools import SPECS
from sidecar.cli import build_parser
from sidecar.config import Settings
from sidecar.disk.tiers import SCOPE_ALIASES, SCOPES
from sidecar.service import MemoryService
from tests.test_http_api import write_and_index


async def test_status_takes_both_and_answers_each_tier(
    client: TestClient, service: MemoryService
) -> None:
    await write_and_index(service, "agent", "AGENT.md", "# Prefs\nterse commits\n")
    await write_and_index(service, "crew", "topics/deploy.md", "# Deploy\nHelm charts.\n")
    resp = await client.get("/memory/status", params={"scope": "both"})
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["scope"] == "both"
    assert set(body["tiers"]) == {"agent", "crew"}
    assert body["tiers"]["crew"]["total_files"] == 1
    assert body["total_files"] == 2


async def recall(client: TestClient, scope: str) -> tuple[int, dict[str, Any]]:
    resp = await client.post("/memory/recall", json={"query": "staging deploy", "scope": scope})
    return resp.status, await resp.json()


async def test_recall_speaks_the_same_words_as_search(client: TestClient) -> None:
    resp = await client.post(
        "/memory/journal",
        json={"type": "deploy.failed", "summary": "staging deploy failed", "scope": "crew",
              "severity": "error", "importance": 0.9},
    )  # fmt: skip
    assert resp.status == 201, await resp.text()
    found = {}
    for scope in (*SCOPES, *SCOPE_ALIASES):
        status, body = await recall(client, scope)
        assert status == 200, (scope, body)
        assert body["scope"] == SCOPE_ALIASES.get(scope, scope)
        found[scope] = {h["tier"] for h in body["hits"]}
    assert found["agent"] == set() and found["own"] == set()
    assert found["crew"] == {"crew"} and found["both"] == {"crew"} == found["crew_shared"]
    status, body = await recall(client, "all")
    assert status == 400 and body["error"] == "bad_scope"
    assert "agent, crew, both" in body["detail"]


async def test_a_bad_scope_names_the_vocabulary_everywhere(client: TestClient) -> None:
    for resp in (
        await client.get("/memory/status", params={"scope": "x"}),
        await client.post("/memory/search", json={"query": "q", "scope": "x"}),
        await client.post("/memory/reindex", params={"scope": "x"}, json={}),
    ):
        assert resp.status == 400
        body = await resp.json()
        assert body["error"] == "bad_scope"
        assert "agent, crew, both" in body["detail"], body


async def test_search_takes_the_old_words_too(client: TestClient, service: MemoryService) -> None:
    await write_and_index(service, "crew", "topics/deploy.md", "# Deploy\nHelm charts.\n")
    resp = await client.post("/memory/search", json={"query": "helm", "scope": "crew_shared"})
    assert resp.status == 200
    assert [r["source"] for r in (await resp.json())["results"]] == ["crew"]


def test_mcp_tools_and_command_line_offer_the_same_words() -> None:
    for name in ("memory.search", "memory.recall", "memory.reindex"):
        enum = SPECS[name].definition.input_schema["properties"]["scope"]["enum"]
        assert list(SCOPES) == enum[: len(SCOPES)], name
    recall = build_parser().parse_args(["recall", "q", "--scope", "both"])
    assert recall.scope == "both"
    assert build_parser().parse_args(["recall", "q"]).scope == "agent"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["recall", "q", "--scope", "everything"])


async def test_an_agent_without_a_crew_answers_crew_scopes_alike(
    tier_dirs: tuple[Path, Path],
) -> None:
    """Status, search and recall refuse the crew tier the same way where there is none."""
    agent, crew = tier_dirs
    svc = MemoryService(Settings(agent_dir=agent, crew_dir=crew, role="agent", embedder="none"))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            for scope in ("crew", "both"):
                answers = [
                    await c.get("/memory/status", params={"scope": scope}),
                    await c.post("/memory/search", json={"query": "x", "scope": scope}),
                ]
                if scope == "crew":  # both recalls the agent's own, with a warning
                    body = {"query": "x", "scope": scope}
                    answers.append(await c.post("/memory/recall", json=body))
                for resp in answers:
                    assert resp.status == 503, (scope, resp.url)
                    assert (await resp.json())["error"] == "tier_unavailable"
            status, body = await recall(c, "both")
            assert status == 200 and body["warnings"]
    finally:
        await svc.stop()


@pytest.mark.parametrize("alias", sorted(SCOPE_ALIASES))
async def test_every_route_that_takes_both_takes_the_old_words(
    client: TestClient, alias: str
) -> None:
    """Search took own and crew_shared but learnings search, its twin, refused them."""
    word = SCOPE_ALIASES[alias]
    for method, path, body in (
        ("POST", "/memory/search", {"query": "helm"}),
        ("POST", "/memory/recall", {"query": "helm"}),
        ("POST", "/memory/learnings/search", {"query": "helm"}),
    ):
        answers = [
            await client.request(method, path, json={**body, "scope": scope})
            for scope in (alias, word)
        ]
        assert [r.status for r in answers] == [200, 200], (path, await answers[0].text())
    resp = await client.get("/memory/status", params={"scope": alias})
    assert resp.status == 200 and (await resp.json())["scope"] == word
