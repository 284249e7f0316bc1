"""Hybrid retrieval through the real service: vectors in the background, modes, restarts,
degradation. Most tests use a local server speaking Ollama's embed protocol (fast,
and it counts what was embedded); one uses the in-process model end to end."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub

MODEL = "nomic-embed-text"


@pytest.fixture
def stub() -> Iterator[OllamaStub]:
    with OllamaStub(dim=64, models=(MODEL, "other-model")) as s:
        yield s


@pytest.fixture
def hybrid_settings(settings: Settings, stub: OllamaStub) -> Settings:
    return dataclasses.replace(
        settings, role="agent", embedder="ollama", ollama_url=stub.url, ollama_model=MODEL
    )


async def started(settings: Settings) -> MemoryService:
    svc = MemoryService(settings)
    await svc.start()
    await svc.indexes.queue.wait_idle()
    assert svc.embeddings.vectors is not None, svc.embeddings.embedder_error
    await svc.embeddings.vectors.wait_idle()
    return svc


@pytest.fixture
async def hybrid(hybrid_settings: Settings) -> AsyncIterator[MemoryService]:
    svc = await started(hybrid_settings)
    try:
        yield svc
    finally:
        await svc.stop()


def embedded_texts(stub: OllamaStub) -> list[str]:
    return [t for r in stub.requests for t in r["input"]]


def seed(root: Path, files: int) -> None:
    for i in range(files):
        (root / "daily" / f"2026-01-{i + 1:02d}.md").write_text(
            f"# Day {i}\n- walrus note number {i} about the harbour\n- second line {i}\n"
        )


async def paths(svc: MemoryService, query: str, mode: str | None = None) -> list[str]:
    return [r.hit.path for r in (await svc.search.search(query, "agent", 10, mode)).results]


async def test_new_text_is_searchable_by_words_at_once_and_by_vector_once_embedded(
    hybrid: MemoryService, stub: OllamaStub
) -> None:
    stub.mode = "hang"  # hold the background embedding, and with it the vector
    try:
        await hybrid.notes.write("agent", "AGENT.md", "- the harbour master is Ingrid", "append")
        assert await paths(hybrid, "harbour master", "sparse") == ["AGENT.md"]
        assert stub.hanging.wait(10)
        status = await hybrid.status("agent")
        assert status["pending"] == 1
        assert status["embeddings"]["state"] == "embedding"
    finally:
        stub.release.set()
    stub.mode = "ok"
    assert hybrid.embeddings.vectors is not None
    await eventually(lambda: _no_pending(hybrid), "the vector to land")
    assert await paths(hybrid, "harbour master Ingrid", "dense") == ["AGENT.md"]


async def _no_pending(svc: MemoryService) -> bool:
    return (await svc.status("agent"))["pending"] == 0


async def test_vectors_survive_restart_and_unchanged_chunks_are_never_re_embedded(
    hybrid_settings: Settings, stub: OllamaStub
) -> None:
    seed(hybrid_settings.agent_dir, 5)
    svc = await started(hybrid_settings)
    try:
        first = embedded_texts(stub)
        assert sum("walrus note number" in t for t in first) == 10  # 5 chunks + 5 lines
        assert (await svc.status("agent"))["embeddings"]["vectors"] == 5
    finally:
        await svc.stop()

    stub.requests.clear()
    svc = await started(hybrid_settings)
    try:
        assert embedded_texts(stub) == [t for t in embedded_texts(stub) if t == "probe"]
        status = await svc.status("agent")
        assert (status["embeddings"]["vectors"], status["pending"]) == (5, 0)
        assert len(await paths(svc, "walrus harbour", "dense")) == 5

        stub.requests.clear()
        await svc.notes.write("agent", "daily/2026-01-03.md", "- a new line about otters", "append")
        await svc.embeddings.vectors.wait_idle()  # type: ignore[union-attr]
        texts = embedded_texts(stub)
        assert all("walrus note number 0" not in t for t in texts)  # other files untouched
        assert any("otters" in t for t in texts)
    finally:
        await svc.stop()


async def test_a_model_change_re_embeds_lazily(hybrid_settings: Settings, stub: OllamaStub) -> None:
    seed(hybrid_settings.agent_dir, 3)
    svc = await started(hybrid_settings)
    await svc.stop()
    stub.requests.clear()
    svc = await started(dataclasses.replace(hybrid_settings, ollama_model="other-model"))
    try:
        assert {r["model"] for r in stub.requests} == {"other-model"}
        assert sum("walrus note number" in t for t in embedded_texts(stub)) == 6
        assert svc.embeddings.vectors is not None
        assert svc.embeddings.vectors.embedder.model_id == "ollama:other-model:64"
    finally:
        await svc.stop()


async def test_embedder_failing_mid_run_degrades_to_sparse_and_recovers(
    hybrid: MemoryService, stub: OllamaStub
) -> None:
    assert hybrid.embeddings.retrieval() == "hybrid"
    stub.mode = "error"
    await hybrid.notes.write("agent", "AGENT.md", "- the lighthouse keeper is Sven", "append")
    assert hybrid.embeddings.vectors is not None
    await hybrid.embeddings.vectors.wait_idle()

    health = await hybrid.health()
    assert health["retrieval"] == "sparse-only"
    assert health["status"] == "degraded"
    assert any("embedder failed" in r for r in health["reasons"])
    embeddings = (await hybrid.status("agent"))["embeddings"]
    assert embeddings["state"] == "failed"
    assert "refused" not in embeddings  # a server that is down refuses no text in particular
    asked = len(stub.requests)
    response = await hybrid.search.search("lighthouse keeper", "agent", 5)
    assert response.mode == "sparse"
    assert [r.hit.path for r in response.results] == ["AGENT.md"]
    assert any("embedder failed" in d for d in response.degraded)
    assert len(stub.requests) == asked  # known down: the search did not wait on it

    stub.mode = "ok"
    await hybrid.notes.write("agent", "AGENT.md", "- the ferry leaves at noon", "append")
    await hybrid.embeddings.vectors.wait_idle()
    assert hybrid.embeddings.retrieval() == "hybrid"
    assert (await hybrid.health())["status"] == "ok"
    response = await hybrid.search.search("lighthouse keeper", "agent", 5)
    assert (response.mode, response.degraded) == ("hybrid", [])


async def test_a_query_the_embedder_cannot_embed_turns_search_sparse_until_it_recovers(
    hybrid: MemoryService, stub: OllamaStub
) -> None:
    stub.mode = "error"
    response = await hybrid.search.search("harbour", "agent", 5)
    assert response.mode == "sparse"
    assert any("embedder failed" in d for d in response.degraded)
    assert hybrid.embeddings.retrieval() == "sparse-only"
    asked = len(stub.requests)
    await hybrid.search.search("harbour", "agent", 5)
    assert len(stub.requests) <= asked + 1  # at most the background probe, never the query

    stub.mode = "ok"
    assert hybrid.embeddings.vectors is not None
    hybrid.embeddings.vectors.notify()
    await eventually(lambda: _is_hybrid(hybrid), "the probe to find the embedder back")
    assert (await hybrid.search.search("harbour", "agent", 5)).mode == "hybrid"


async def test_only_a_probe_clears_a_failure_reported_while_a_sync_runs(
    hybrid: MemoryService, stub: OllamaStub
) -> None:
    assert hybrid.embeddings.vectors is not None
    stub.mode = "hang"  # hold a sync pass in flight
    await hybrid.notes.write("agent", "AGENT.md", "- the tug is yellow", "append")
    assert await asyncio.to_thread(stub.hanging.wait, 10)
    hybrid.embeddings.vectors.embedder_failed("a search could not embed its query")
    stub.mode = "ok"
    before = len(stub.requests)
    stub.release.set()
    await eventually(lambda: _is_hybrid(hybrid), "recovery")
    assert ["probe"] in [r["input"] for r in stub.requests[before:]]


async def test_a_hung_embedder_never_holds_up_sparse_searches_or_status(
    hybrid: MemoryService, stub: OllamaStub
) -> None:
    await hybrid.notes.write("agent", "AGENT.md", "- the pilot boat is red", "append")
    assert hybrid.embeddings.vectors is not None
    await hybrid.embeddings.vectors.wait_idle()
    stub.mode = "hang"
    waiting = [
        asyncio.create_task(hybrid.search.search("pilot boat", "agent", 5)) for _ in range(2)
    ]
    try:
        assert await asyncio.to_thread(stub.hanging.wait, 10)
        response = await hybrid.search.search("pilot boat", "agent", 5, "sparse")
        assert [r.hit.path for r in response.results] == ["AGENT.md"]
        assert (await hybrid.status("agent"))["pending"] == 0
        assert not any(t.done() for t in waiting)  # both still wait on the embedder
    finally:
        stub.mode = "ok"
        stub.release.set()
    assert [(await t).mode for t in waiting] == ["hybrid", "hybrid"]


async def test_a_chunk_the_embedder_refuses_holds_back_no_other_chunk(
    hybrid_settings: Settings, stub: OllamaStub
) -> None:
    seed(hybrid_settings.agent_dir, 3)
    (hybrid_settings.agent_dir / "AGENT.md").write_text("- the zebrafish tank is cursed\n")
    stub.refuse_word = "zebrafish"
    svc = await started(hybrid_settings)
    try:
        status = await svc.status("agent")
        embeddings = status["embeddings"]
        assert (status["pending"], embeddings["vectors"], embeddings["refused"]) == (0, 3, 1)
        assert svc.embeddings.retrieval() == "hybrid"
        health = await svc.health()
        assert health["status"] == "degraded"  # never silent, though search stays hybrid
        assert any("refused 1 chunk(s)" in r and "NaN" in r for r in health["reasons"])
        assert len(await paths(svc, "walrus harbour", "dense")) == 3
        assert await paths(svc, "zebrafish tank") == ["AGENT.md"]  # by its words

        await svc.notes.write("agent", "AGENT.md", "- the goldfish tank is fine", "replace")
        await svc.embeddings.vectors.wait_idle()  # type: ignore[union-attr]
        status = await svc.status("agent")
        assert (status["embeddings"]["vectors"], "refused" in status["embeddings"]) == (4, False)
        assert (await svc.health())["status"] == "ok"
    finally:
        await svc.stop()


async def test_a_tier_whose_vectors_fail_holds_back_neither_other_tiers_nor_hybrid(
    hybrid_settings: Settings, stub: OllamaStub
) -> None:
    svc = await started(dataclasses.replace(hybrid_settings, role="lead"))
    try:
        assert svc.embeddings.vectors is not None

        def broken(stop: Any) -> None:
            raise RuntimeError("a stored vector is corrupt")

        svc.embeddings.vectors.tiers["agent"].sync = broken  # type: ignore[method-assign]
        await svc.notes.write("agent", "AGENT.md", "- the agent keeps kelp notes", "append")
        await svc.notes.write("crew", "CREW.md", "- the crew farms kelp", "append")

        async def crew_embedded() -> bool:
            crew = (await svc.status("crew"))["pending"] == 0
            return crew and "agent" in svc.embeddings.vectors.state.tier_errors  # type: ignore[union-attr]

        await eventually(crew_embedded, "the crew tier's vectors despite the agent tier")
        assert svc.embeddings.retrieval() == "hybrid"
        health = await svc.health()
        assert (
            "agent: vectors not up to date: RuntimeError: a stored vector is corrupt"
            in (health["reasons"])
        )
        assert (await svc.status("agent"))["embeddings"]["state"] == "failed"
        response = await svc.search.search("kelp farms", "crew", 5, "dense")
        assert [r.hit.path for r in response.results] == ["CREW.md"]
    finally:
        await svc.stop()


async def test_a_model_of_another_width_under_the_same_name_is_re_embedded(
    hybrid_settings: Settings,
) -> None:
    seed(hybrid_settings.agent_dir, 2)
    await (await started(hybrid_settings)).stop()
    with OllamaStub(dim=48, models=(MODEL,)) as narrow:
        svc = await started(dataclasses.replace(hybrid_settings, ollama_url=narrow.url))
        try:
            assert sum("walrus note number" in t for t in embedded_texts(narrow)) == 4
            health = await svc.health()
            assert health["status"] == "ok", health
            assert len(await paths(svc, "walrus harbour", "dense")) == 2
        finally:
            await svc.stop()


async def test_http_modes_ranks_and_errors(hybrid: MemoryService) -> None:
    await hybrid.notes.write("agent", "AGENT.md", "- the harbour crane is blue", "append")
    await hybrid.notes.write(
        "agent", "daily/2026-01-01.md", "- crane maintenance on friday", "append"
    )
    assert hybrid.embeddings.vectors is not None
    await hybrid.embeddings.vectors.wait_idle()
    async with TestClient(TestServer(create_app(hybrid), host="127.0.0.1")) as client:
        for mode, legs in (("hybrid", {"sparse", "dense"}), ("sparse", {"sparse"}),
                           ("dense", {"dense"})):  # fmt: skip
            resp = await client.post("/memory/search", json={"query": "crane", "mode": mode})
            body = await resp.json()
            assert resp.status == 200, body
            assert body["mode"] == mode
            assert body["count"] == 2
            assert set(body["results"][0]["ranks"]) == legs
        resp = await client.post("/memory/search", json={"query": "crane"})
        assert (await resp.json())["mode"] == "hybrid"
        resp = await client.post("/memory/search", json={"query": "crane", "mode": "fuzzy"})
        assert (resp.status, (await resp.json())["error"]) == (400, "bad_mode")
        health = await (await client.get("/healthz")).json()
        assert health["retrieval"] == "hybrid"
        assert health["embedder"]["model"] == f"ollama:{MODEL}:64"


async def test_sparse_only_service_says_so_and_refuses_dense(client: TestClient) -> None:
    health = await (await client.get("/healthz")).json()
    assert health["retrieval"] == "sparse-only"
    assert health["status"] == "ok"  # configured that way: not a fault
    resp = await client.post("/memory/search", json={"query": "anything", "mode": "dense"})
    assert (resp.status, (await resp.json())["error"]) == (503, "dense_unavailable")
    resp = await client.post("/memory/search", json={"query": "anything", "mode": "hybrid"})
    body = await resp.json()
    assert (body["mode"], body["degraded"]) == ("sparse", ["dense: no embedder configured"])


async def test_in_process_model_finds_a_paraphrase_bm25_cannot(settings: Settings) -> None:
    (settings.agent_dir / "AGENT.md").write_text(
        "# People\n- Alice adopted a puppy named Rex last spring.\n"
        "- The staging cluster runs in eu-west-2.\n"
    )
    (settings.agent_dir / "daily").mkdir(exist_ok=True)
    (settings.agent_dir / "daily" / "2026-11-24.md").write_text(
        "# Agent memory\n\n## User preferences\n"
        "- Prefers terse commit subjects (at most 70 characters).\n"
        "- Wants CHANGELOG entries in the same pull request, never as a follow-up.\n"
    )
    svc = await started(dataclasses.replace(settings, embedder="auto"))
    try:
        assert svc.embeddings.retrieval() == "hybrid"
        assert await paths(svc, "who got a dog?", "sparse") == []
        assert await paths(svc, "who got a dog?") == ["AGENT.md"]
        # Nothing in memory is about it: no word shared, and the nearest note (the commit
        # style, 0.2 to 0.3 similar) is not a filler hit that costs budget and answers nothing.
        assert await paths(svc, "redis eviction") == []
        status = await svc.status("agent")
        assert status["embeddings"]["model"].startswith("all-MiniLM-L6-v2")
    finally:
        await svc.stop()


def doctor(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar", "doctor", "--url", url],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


async def test_doctor_exit_codes(hybrid: MemoryService, stub: OllamaStub, tmp_path: Path) -> None:
    async with TestServer(create_app(hybrid), host="127.0.0.1") as good:
        done = await asyncio.to_thread(doctor, str(good.make_url("/")))
    assert done.returncode == 0, done.stdout
    assert "retrieval: hybrid" in done.stdout
    assert f"model: ollama:{MODEL}" in done.stdout
    assert "0 waiting for embeddings" in done.stdout

    own = tmp_path / "sparse"  # its own tree: two daemons never share a folder
    (own / "agent").mkdir(parents=True)
    sparse_only = dataclasses.replace(
        hybrid.settings, agent_dir=own / "agent", crew_dir=own / "crew", embedder="none"
    )
    service = MemoryService(sparse_only)
    await service.start()
    try:
        async with TestServer(create_app(service), host="127.0.0.1") as sparse:
            done = await asyncio.to_thread(doctor, str(sparse.make_url("/")))
    finally:
        await service.stop()
    assert done.returncode == 1
    assert "retrieval: sparse-only" in done.stdout
    assert "to enable hybrid" in done.stdout

    done = await asyncio.to_thread(doctor, "http://127.0.0.1:9")
    assert done.returncode == 1
    assert "unreachable" in done.stdout

    done = await asyncio.to_thread(doctor, stub.url)  # a server, but not a sidecar
    assert done.returncode == 1
    assert "answered HTTP 501" in done.stdout and "unreachable" not in done.stdout


SPARSE_ONLY_RUN = """
import asyncio, sys, tempfile
from pathlib import Path
from sidecar.config import Settings
from sidecar.service import MemoryService
import sidecar.api.crew, sidecar.api.http  # the apps a daemon serves, the crew port's too

async def main():
    root = Path(tempfile.mkdtemp())
    (root / "agent").mkdir()
    (root / "agent" / "AGENT.md").write_text("- the walrus sleeps\\n")
    svc = MemoryService(Settings(root / "agent", root / "crew", embedder="none"))
    await svc.start()
    await svc.indexes.queue.wait_idle()
    assert (await svc.search.search("walrus", "agent", 5)).results
    await svc.notes.write("agent", "AGENT.md", "- and snores", "append")
    await svc.stop()
    print("numpy loaded:", "numpy" in sys.modules)

asyncio.run(main())
"""


def test_a_sparse_only_daemon_never_loads_numpy() -> None:
    """numpy (and the model) cost about 14 MB resident: only a hybrid daemon pays it."""
    done = subprocess.run(
        [sys.executable, "-c", SPARSE_ONLY_RUN], capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "numpy loaded: False" in done.stdout


async def test_an_unreachable_ollama_is_asked_again_until_hybrid_starts(
    hybrid_settings: Settings, stub: OllamaStub
) -> None:
    stub.mode = "error"
    svc = MemoryService(dataclasses.replace(hybrid_settings, embed_retry=0.05))
    await svc.start()
    try:
        health = await svc.health()
        assert (health["retrieval"], health["status"]) == ("sparse-only", "degraded")
        assert any("embedder unavailable" in r for r in health["reasons"])
        stub.mode = "ok"
        await eventually(lambda: _is_hybrid(svc), "hybrid search to start")
        assert svc.embeddings.vectors is not None
        await svc.embeddings.vectors.wait_idle()
        assert (await svc.health())["status"] == "ok"
    finally:
        await svc.stop()


async def _is_hybrid(svc: MemoryService) -> bool:
    return svc.embeddings.retrieval() == "hybrid"


async def test_a_vector_row_the_sync_has_not_caught_up_with_is_never_returned(
    hybrid: MemoryService,
) -> None:
    await hybrid.notes.write("agent", "AGENT.md", "- the harbour crane is blue", "append")
    assert hybrid.embeddings.vectors is not None
    await hybrid.embeddings.vectors.wait_idle()
    index = hybrid.embeddings.vectors.tiers["agent"].index
    (chunk_id,) = index.keys()
    # As if the chunk's text changed under the same id and the sync had not run yet.
    index.upsert([chunk_id], ["stale-hash"], index_row(hybrid, "crane"))
    assert await paths(hybrid, "crane", "dense") == []
    index.upsert([chunk_id], [hybrid.indexes.tiers["agent"].store.chunk_keys()[chunk_id]],
                 index_row(hybrid, "crane"))  # fmt: skip
    assert await paths(hybrid, "crane", "dense") == ["AGENT.md"]

    # Nor does it take the place of a current one.
    await hybrid.notes.write("agent", "daily/2026-01-02.md", "- the crane inspection", "append")
    await hybrid.embeddings.vectors.wait_idle()
    index.upsert([chunk_id], ["stale-hash"], index_row(hybrid, "crane"))
    found = await hybrid.search.search("crane", "agent", 1, "dense")
    assert [r.hit.path for r in found.results] == ["daily/2026-01-02.md"]


def index_row(svc: MemoryService, text: str) -> Any:
    assert svc.embeddings.embedder is not None
    return svc.embeddings.embedder.embed([text])
