"""The HTTP API over a real aiohttp server on loopback, backed by real SQLite indexes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.index.queue import FILE, JobKey
from sidecar.service import MemoryService
from sidecar.web import MAX_BODY_BYTES


async def write_and_index(service: MemoryService, tier: str, rel: str, text: str) -> None:
    root = service.indexes.tiers[tier].tier.root
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    await service.indexes.queue.submit(JobKey(tier, FILE, rel))


async def search(client: TestClient, **body: Any) -> dict[str, Any]:
    resp = await client.post("/memory/search", json=body)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_search_finds_yesterdays_note(client: TestClient, service: MemoryService) -> None:
    await write_and_index(
        service,
        "agent",
        "daily/2026-11-21.md",
        "# 2026-11-21\n\n## Decisions\n### Database\nWe moved billing to PostgreSQL 16.\n",
    )
    body = await search(client, query="Which database did we pick for billing?")
    assert body["count"] == 1
    assert body["query_mode"] == "terms"
    (hit,) = body["results"]
    assert hit["file"] == "daily/2026-11-21.md"
    assert hit["source"] == "agent"
    # The bare headings above join the chunk (their words find it); the hit points below
    # them, at the line that says something, and names them in "heading".
    assert (hit["start_line"], hit["end_line"]) == (5, 5)
    assert hit["heading"] == "2026-11-21 > Decisions > Database"
    assert "PostgreSQL 16" in hit["snippet"]
    assert hit["score"] > 0


async def test_scores_are_higher_is_better(client: TestClient, service: MemoryService) -> None:
    await write_and_index(
        service,
        "agent",
        "AGENT.md",
        "# A\nkiwi kiwi kiwi mango\n\n# B\nkiwi apple pear plum grape melon lime\n",
    )
    results = (await search(client, query="kiwi mango"))["results"]
    assert [r["heading"] for r in results] == ["A", "B"]
    assert results[0]["score"] > results[1]["score"]


async def test_scope_both_fuses_by_rank(client: TestClient, service: MemoryService) -> None:
    await write_and_index(service, "agent", "AGENT.md", "# Pets\nThe otter is called Pip.\n")
    await write_and_index(service, "crew", "CREW.md", "# Zoo\notter otter otter enclosure rules\n")
    results = (await search(client, query="otter", scope="both"))["results"]
    assert {r["source"] for r in results} == {"agent", "crew"}
    # Both are rank 1 in their own tier, so both get 1/(60+1), whatever BM25 said.
    assert results[0]["score"] == results[1]["score"] == pytest.approx(1 / 61, abs=1e-6)


async def test_explicit_fts5_syntax_is_honoured(client: TestClient, service: MemoryService) -> None:
    await write_and_index(
        service,
        "agent",
        "AGENT.md",
        "# One\nred apple pie\n\n# Two\napple red pie\n\n# Three\nbanana split\n",
    )
    body = await search(client, query='"red apple"')
    assert body["query_mode"] == "fts5"
    assert [r["heading"] for r in body["results"]] == ["One"]
    body = await search(client, query="appl* NOT red")
    assert body["query_mode"] == "fts5"
    assert body["results"] == []
    body = await search(client, query="NEAR(banana split, 2)")
    assert [r["heading"] for r in body["results"]] == ["Three"]


@pytest.mark.parametrize(
    "query", ['"unbalanced apple', "apple AND", "(apple", "NEAR(apple", "body: AND apple"]
)
async def test_broken_fts5_falls_back_to_terms(
    client: TestClient, service: MemoryService, query: str
) -> None:
    await write_and_index(service, "agent", "AGENT.md", "# Fruit\napple orchard notes\n")
    body = await search(client, query=query)
    assert body["query_mode"] == "terms_fallback"
    assert [r["heading"] for r in body["results"]] == ["Fruit"]


async def test_limit_caps_results(client: TestClient, service: MemoryService) -> None:
    text = "".join(f"# Note {i}\nshared token {i}\n\n" for i in range(30))
    await write_and_index(service, "agent", "AGENT.md", text)
    assert (await search(client, query="shared token", limit=7))["count"] == 7
    assert (await search(client, query="shared token"))["count"] == 10


async def test_snippets_are_whole_lines(client: TestClient, service: MemoryService) -> None:
    lines = [f"line {i} " + "filler ñ " * 9 + "filler ñ" for i in range(12)]
    lines[7] = "line 7 the needle is here ✓"
    await write_and_index(service, "agent", "AGENT.md", "# Long\n" + "\n".join(lines) + "\n")
    # first the chunk holding the needle; its neighbours follow, found by their context
    hit = (await search(client, query="needle"))["results"][0]
    assert "needle" in hit["snippet"]
    for line in hit["snippet"].split("\n"):
        assert line in ["# Long", *lines]


BAD_SEARCHES: list[tuple[Any, int, str]] = [
    (b"{not json", 400, "invalid_json"),
    (b"\xff\xfe", 400, "invalid_json"),
    (b"[1, 2]", 400, "invalid_json"),
    (b"", 400, "invalid_json"),
    ({}, 400, "missing_query"),
    ({"query": ""}, 400, "missing_query"),
    ({"query": "   "}, 400, "missing_query"),
    ({"query": 42}, 400, "missing_query"),
    ({"query": "x" * 5000}, 400, "query_too_long"),
    ({"query": "?!?"}, 400, "empty_query"),
    ({"query": "ok", "limit": 0}, 400, "bad_limit"),
    ({"query": "ok", "limit": 51}, 400, "bad_limit"),
    ({"query": "ok", "limit": "5"}, 400, "bad_limit"),
    ({"query": "ok", "limit": 2.5}, 400, "bad_limit"),
    ({"query": "ok", "limit": True}, 400, "bad_limit"),
    ({"query": "ok", "scope": "everything"}, 400, "bad_scope"),
    ({"query": "ok", "scope": None}, 400, "bad_scope"),
    ({"query": "ok", "limt": 3}, 400, "unknown_field"),
]


@pytest.mark.parametrize(("body", "status", "error"), BAD_SEARCHES)
async def test_bad_search_input(client: TestClient, body: Any, status: int, error: str) -> None:
    if isinstance(body, bytes):
        resp = await client.post("/memory/search", data=body)
    else:
        resp = await client.post("/memory/search", json=body)
    assert resp.status == status
    payload = await resp.json()
    assert payload["error"] == error
    assert payload["detail"]


async def test_oversized_body_is_413(client: TestClient) -> None:
    resp = await client.post("/memory/search", data=b"x" * (MAX_BODY_BYTES + 1))
    assert resp.status == 413
    assert (await resp.json())["error"] == "body_too_large"


async def test_unknown_endpoint_and_method_are_json(client: TestClient) -> None:
    resp = await client.get("/nope")
    assert resp.status == 404
    assert (await resp.json())["error"] == "not_found"
    resp = await client.get("/memory/search")
    assert resp.status == 405
    assert (await resp.json())["error"] == "method_not_allowed"


@pytest.mark.parametrize("host", ["evil.example", "attacker.com:9119", "10.0.0.1", "[fe80::1]"])
async def test_non_loopback_host_header_is_refused(client: TestClient, host: str) -> None:
    resp = await client.get("/healthz", headers={"Host": host})
    assert resp.status == 403
    assert (await resp.json())["error"] == "forbidden_host"


@pytest.mark.parametrize("host", ["localhost", "localhost:9119", "127.0.0.1:9119", "[::1]:9119"])
async def test_loopback_host_header_is_accepted(client: TestClient, host: str) -> None:
    resp = await client.get("/healthz", headers={"Host": host})
    assert resp.status == 200


async def test_status_reports_the_index(client: TestClient, service: MemoryService) -> None:
    # The watcher queues the file again once it sees the write: wait for that, then for
    # the queue to drain, so the depth read below is not a race with it.
    seen = asyncio.Event()
    service.indexes.hooks.watched.append(
        lambda tier, rel: seen.set() if (tier, rel) == ("crew", "topics/deploy.md") else None
    )
    await write_and_index(service, "crew", "topics/deploy.md", "# Deploy\nHelm charts.\n")
    await asyncio.wait_for(seen.wait(), 60)
    await service.indexes.queue.wait_idle()
    resp = await client.get("/memory/status", params={"scope": "crew"})
    assert resp.status == 200
    body = await resp.json()
    assert body["total_files"] == 1
    assert body["total_chunks"] == 1
    assert body["search_ready"] is True
    assert body["queue_depth"] == 0
    assert body["indexed_at"].endswith("+00:00")
    assert set(body) >= {"total_files", "total_chunks", "indexed_at", "total_size_kb"}


@pytest.mark.parametrize("path", ["/memory/status?scope=all", "/memory/status?scope=x"])
async def test_status_bad_scope(client: TestClient, path: str) -> None:
    resp = await client.get(path)
    assert resp.status == 400
    assert (await resp.json())["error"] == "bad_scope"


async def test_reindex_rebuilds_from_markdown(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    (agent / "AGENT.md").write_text("# Facts\nthe walrus sings\n")
    resp = await client.post("/memory/reindex", params={"scope": "agent"}, json={})
    assert resp.status == 202
    await service.indexes.queue.wait_idle()
    assert (await search(client, query="walrus"))["count"] == 1


async def test_reindex_refuses_a_scope_given_in_the_body(client: TestClient) -> None:
    """The scope is a query parameter; one in the body was ignored and the agent tier
    rebuilt instead of the tier asked for."""
    resp = await client.post("/memory/reindex", json={"scope": "crew"})
    assert resp.status == 400
    body = await resp.json()
    assert body["error"] == "unknown_field" and "?scope=" in body["detail"]
    resp = await client.post(
        "/memory/reindex", data=b"", headers={"Content-Type": "application/json"}
    )
    assert resp.status == 202


async def test_healthz(client: TestClient) -> None:
    resp = await client.get("/healthz")
    body = await resp.json()
    assert body["status"] == "ok", body
    assert body["role"] == "lead"
    assert body["retrieval"] == "sparse-only"
    assert body["watcher"] == "ready"
    assert set(body["tiers"]) == {"agent", "crew"}


async def test_agent_role_has_no_crew_tier(tier_dirs: tuple[Path, Path]) -> None:
    agent, crew = tier_dirs
    svc = MemoryService(Settings(agent_dir=agent, crew_dir=crew, role="agent", embedder="none"))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            for body in ({"query": "x", "scope": "crew"}, {"query": "x", "scope": "both"}):
                resp = await c.post("/memory/search", json=body)
                assert resp.status == 503
                payload = await resp.json()
                assert payload["error"] == "tier_unavailable"
                assert "crew" in payload["detail"]
            resp = await c.get("/memory/status", params={"scope": "crew"})
            assert resp.status == 503
    finally:
        await svc.stop()


@pytest.mark.parametrize(
    "url",
    [
        "/memory/status?scop=crew",
        "/memory/read?file=AGENT.md&lines=2",
        "/memory/context?budjet=2000",
        "/memory/files?scope=agent&x=1",
        "/memory/files/read?file=AGENT.md&x=1",
        "/memory/health?scop=crew",
        "/healthz?verbose=1",
    ],
)
async def test_a_misspelt_query_parameter_is_refused(client: TestClient, url: str) -> None:
    """Ignored, ``?scop=crew`` answered about the agent tier as if it had been asked."""
    resp = await client.get(url)
    assert resp.status == 400
    body = await resp.json()
    assert body["error"] == "unknown_parameter"
    assert "allowed: " in body["detail"] or "it takes none" in body["detail"]


async def test_415_says_when_no_content_type_was_sent(client: TestClient) -> None:
    bare = await client.post(
        "/memory/write", data=b'{"file": "AGENT.md", "content": "x"}',
        skip_auto_headers={"Content-Type"},
    )  # fmt: skip
    assert bare.status == 415
    detail = (await bare.json())["detail"]
    assert "no Content-Type was sent" in detail and "octet-stream" not in detail
    plain = await client.post(
        "/memory/write", data=b"{}", headers={"Content-Type": "text/plain; charset=utf-8"}
    )
    assert plain.status == 415
    assert "got 'text/plain; charset=utf-8'" in (await plain.json())["detail"]
