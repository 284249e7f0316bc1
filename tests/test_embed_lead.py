"""Members that borrow the lead's model: the lead's ``/v1/embeddings`` crew route, and a
real member process with ``--embedder lead`` against a real lead process."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.crew import MAX_INPUT_CHARS, create_crew_app
from sidecar.config import Settings
from sidecar.retrieval.embedders.base import MAX_INPUTS
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub
from tests.sidecar_process import SidecarProcess, free_port, wait_for

TOKEN = "crew-token-for-embeddings"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEAD_MODEL = "ollama:nomic-embed-text:64"  # the stub's model, as the lead names it


@pytest.fixture
async def crew_port(settings: Settings) -> AsyncIterator[tuple[TestClient, OllamaStub]]:
    """The lead's crew app, its model an Ollama stub (a real one over loopback)."""
    with OllamaStub() as stub:
        lead = dataclasses.replace(settings, role="lead", embedder="ollama", ollama_url=stub.url)
        svc = MemoryService(lead)
        await svc.start()
        server = TestServer(create_crew_app(svc, TOKEN), host="127.0.0.1")
        try:
            async with TestClient(server) as client:
                yield client, stub
        finally:
            await svc.stop()


async def test_the_lead_embeds_for_members_in_the_openai_format(
    crew_port: tuple[TestClient, OllamaStub],
) -> None:
    client, stub = crew_port
    texts = ["the crane is blue", "the dock is wet", "the crane is blue"]
    resp = await client.post("/v1/embeddings", json={"model": "x", "input": texts}, headers=AUTH)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["model"] == LEAD_MODEL and body["object"] == "list"
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    rows = [d["embedding"] for d in body["data"]]
    assert len(rows[0]) == 64 and rows[0] == rows[2] != rows[1]
    assert stub.requests[-1]["input"] == texts  # the lead's own model embedded them
    resp = await client.post("/v1/embeddings", json={"input": "one text"}, headers=AUTH)
    assert resp.status == 200 and len((await resp.json())["data"]) == 1


@pytest.mark.parametrize(
    ("headers", "body", "status", "error"),
    [
        ({}, {"input": ["x"]}, 401, "unauthorized"),
        ({"Authorization": "Bearer wrong"}, {"input": ["x"]}, 401, "unauthorized"),
        (AUTH, {"input": ["x"] * (MAX_INPUTS + 1)}, 400, "too_many_inputs"),
        (AUTH, {"input": ["x" * (MAX_INPUT_CHARS + 1)]}, 400, "input_too_long"),
        (AUTH, {"input": []}, 400, "invalid_input"),
        (AUTH, {"input": [1, 2]}, 400, "invalid_input"),
        (AUTH, {"input": ["x"], "model": 7}, 400, "invalid_model"),
    ],
)
async def test_bad_or_unauthenticated_requests_are_refused_with_a_reason(
    crew_port: tuple[TestClient, OllamaStub],
    headers: dict[str, str],
    body: dict[str, Any],
    status: int,
    error: str,
) -> None:
    client, stub = crew_port
    seen = len(stub.requests)
    resp = await client.post("/v1/embeddings", json=body, headers=headers)
    answer = await resp.json()
    assert (resp.status, answer["error"]) == (status, error) and answer["detail"]
    assert len(stub.requests) == seen  # nothing reached the model


async def test_what_the_leads_model_refuses_or_fails_is_said_to_the_member(
    crew_port: tuple[TestClient, OllamaStub],
) -> None:
    client, stub = crew_port
    stub.refuse_word = "zebrafish"  # the model answers NaN for it: about these texts
    texts = ["the zebrafish tank", *(f"note {i}" for i in range(10))]  # a batch
    resp = await client.post("/v1/embeddings", json={"input": texts}, headers=AUTH)
    body = await resp.json()
    assert (resp.status, body["error"]) == (400, "embedding_refused") and "NaN" in body["detail"]
    stub.mode = "wrong_count"  # the model itself is broken: the lead has no embedder now
    for _ in range(2):
        resp = await client.post("/v1/embeddings", json={"input": ["x"]}, headers=AUTH)
        body = await resp.json()
        assert (resp.status, body["error"]) == (503, "embedder_unavailable")
        assert "returned 0 embeddings for 1 texts" in body["detail"]


async def test_a_lead_without_an_embedder_answers_503(service: MemoryService) -> None:
    async with TestClient(TestServer(create_crew_app(service, TOKEN), host="127.0.0.1")) as c:
        resp = await c.post("/v1/embeddings", json={"input": ["x"]}, headers=AUTH)
        body = await resp.json()
    assert (resp.status, body["error"]) == (503, "embedder_unavailable")
    assert "sparse-only" in body["detail"]


def _embeddings_status(member: SidecarProcess) -> dict[str, Any]:
    return dict(member.get("/memory/status?scope=agent")["embeddings"])


def _write(member: SidecarProcess, file: str, content: str) -> None:
    status, body = member.call(
        "POST", "/memory/write", {"scope": "agent", "file": file, "content": content}
    )
    assert status == 201, body


def _mapped_libraries(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def _no_token_refused(crew_url: str) -> None:
    """The real lead's crew port: this route is crew traffic and needs the token too."""
    request = urllib.request.Request(
        f"{crew_url}/v1/embeddings", data=json.dumps({"input": ["x"]}).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 401
    assert json.loads(info.value.read())["error"] == "unauthorized"


def test_a_member_borrows_the_leads_model_falls_back_and_catches_up(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / ".memory"
    shared.mkdir(parents=True)
    crew_port = free_port()
    crew_url = f"http://127.0.0.1:{crew_port}"
    auth = {"SIDECAR_CREW_TOKEN": TOKEN}
    with OllamaStub() as stub:
        lead = SidecarProcess(
            tmp_path / "lead" / ".memory", shared, "lead",
            ["--crew-listen", f"127.0.0.1:{crew_port}"],
            {**auth, "SIDECAR_EMBEDDER": "ollama", "SIDECAR_OLLAMA_URL": stub.url},
        )  # fmt: skip
        member = SidecarProcess(
            tmp_path / "member" / ".memory", shared, "agent",
            ["--lead-url", crew_url, "--embed-retry", "0.1"],
            {**auth, "SIDECAR_EMBEDDER": "lead"},  # from the environment, as documented
        )  # fmt: skip
        try:
            lead.start()
            member.start()
            _write(member, "AGENT.md", "- the crane is blue\n- the dock is wet\n")
            wait_for(lambda: _embeddings_status(member).get("state") == "ready",
                     what="the member's vectors")  # fmt: skip
            assert _embeddings_status(member)["model"] == LEAD_MODEL  # the lead's vectors
            status, body = member.call("POST", "/memory/search",
                                       {"query": "crane", "scope": "agent"})  # fmt: skip
            assert status == 200 and body["mode"] == "hybrid", body
            assert set(body["results"][0]["ranks"]) == {"sparse", "dense"}
            assert member.get("/healthz")["retrieval"] == "hybrid"
            assert member.proc is not None
            maps = _mapped_libraries(member.proc.pid)
            assert "onnxruntime" not in maps and "torch" not in maps  # no model of its own
            _no_token_refused(crew_url)

            lead.kill()  # the lead goes away: searches go on, by their words
            status, body = member.call("POST", "/memory/search",
                                       {"query": "crane", "scope": "agent"})  # fmt: skip
            assert status == 200 and body["mode"] == "sparse", body
            assert any("crew lead" in d for d in body["degraded"])
            health = member.get("/healthz")
            assert (health["status"], health["retrieval"]) == ("degraded", "sparse-only")
            assert any("embedder failed" in r for r in health["reasons"])
            _write(member, "daily/2026-11-20.md", "- the harbour closes at dusk\n")  # a backlog
            wait_for(lambda: _embeddings_status(member).get("pending", 0) > 0,
                     what="the new note to wait for a vector")  # fmt: skip

            lead.start()  # back: the member catches up with no restart of its own
            wait_for(lambda: _embeddings_status(member).get("state") == "ready",
                     timeout=20, what="the backlog embedded through the lead")  # fmt: skip
            health = member.get("/healthz")
            assert (health["status"], health["retrieval"]) == ("ok", "hybrid"), health
            status, body = member.call("POST", "/memory/search",
                                       {"query": "harbour dusk", "scope": "agent"})  # fmt: skip
            assert body["mode"] == "hybrid" and body["results"][0]["file"] == "daily/2026-11-20.md"
            assert "dense" in body["results"][0]["ranks"]
        finally:
            member.kill()
            lead.kill()


async def test_a_member_started_before_its_lead_is_sparse_until_the_lead_answers(
    tmp_path: Path, settings: Settings
) -> None:
    port = free_port()
    (tmp_path / "member").mkdir()
    (tmp_path / "member" / "AGENT.md").write_text("- the crane is blue\n")
    member = MemoryService(Settings(
        agent_dir=tmp_path / "member", crew_dir=settings.crew_dir, reconcile_interval=3600,
        embedder="lead", lead_url=f"http://127.0.0.1:{port}", crew_token=TOKEN, embed_retry=0.05,
    ))  # fmt: skip
    await member.start()
    try:
        health = await member.health()
        assert (health["status"], health["retrieval"]) == ("degraded", "sparse-only")
        assert any("embedder unavailable" in r and "crew lead" in r for r in health["reasons"])
        with OllamaStub() as stub:
            lead = MemoryService(dataclasses.replace(
                settings, embedder="ollama", ollama_url=stub.url))  # fmt: skip
            await lead.start()
            server = TestServer(create_crew_app(lead, TOKEN), host="127.0.0.1", port=port)
            await server.start_server()
            try:

                async def embedded() -> bool:
                    status = await member.embeddings.status("agent")
                    return bool(status["embeddings"].get("state") == "ready")

                await eventually(embedded, "the member's vectors, once its lead answers")
                status = await member.embeddings.status("agent")
                assert status["embeddings"]["model"] == LEAD_MODEL
                assert (await member.health())["retrieval"] == "hybrid"
            finally:
                await server.close()
                await lead.stop()
    finally:
        await member.stop()
