"""OpenAIEmbedder against a stub speaking /v1/embeddings over real loopback HTTP."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sidecar.config import Settings
from sidecar.retrieval.embedders.base import EmbedderError, EmbedderRefused, normalize
from sidecar.retrieval.embedders.factory import load_embedder
from sidecar.retrieval.embedders.openai import OpenAIEmbedder
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub, hashed_vector

MODEL = "text-embedding-3-small"


@pytest.fixture
def stub() -> Iterator[OllamaStub]:
    with OllamaStub(dim=64, models=(MODEL,)) as s:
        yield s


@pytest.fixture
def embedder(stub: OllamaStub) -> OpenAIEmbedder:
    return OpenAIEmbedder(stub.url + "/v1", MODEL)


def expected(texts: list[str]) -> np.ndarray:
    return normalize(np.array([hashed_vector(t, 64) for t in texts]))


def test_the_request_and_vectors_follow_the_openai_protocol(
    stub: OllamaStub, embedder: OpenAIEmbedder
) -> None:
    texts = [f"note {i} about topic{i % 7}" for i in range(70)]
    out = OpenAIEmbedder(stub.url, MODEL, batch_size=32).embed(texts)  # bare server URL too
    assert [r["input"] for r in stub.requests] == [texts[:32], texts[32:64], texts[64:]]
    assert {r["model"] for r in stub.requests} == {MODEL}
    assert out.dtype == np.float32 and out.shape == (70, 64)
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)
    assert embedder.model_id == f"openai:{MODEL}:0"
    assert embedder.probe() == 64 and embedder.model_id == f"openai:{MODEL}:64"


def test_a_thread_keeps_its_connection_alive(stub: OllamaStub, embedder: OpenAIEmbedder) -> None:
    for text in ("one query", "another", "and a third"):
        embedder.embed([text])
    assert (len(stub.requests), stub.connections) == (3, 1)
    embedder.close()
    embedder.embed(["after close"])
    assert stub.connections == 2


def test_rows_are_placed_by_their_index(stub: OllamaStub, embedder: OpenAIEmbedder) -> None:
    stub.mode = "shuffled"
    texts = ["alpha beta", "gamma delta", "epsilon"]
    np.testing.assert_allclose(embedder.embed(texts), expected(texts), rtol=1e-6)


def test_the_api_key_comes_from_the_named_variable(
    stub: OllamaStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub.api_key = "sk-test"
    with pytest.raises(EmbedderError, match=r"HTTP 401: Incorrect API key.*--embed-api-key-env"):
        load_embedder("openai", embed_url=stub.url + "/v1", embed_model=MODEL)
    emb = load_embedder("openai", embed_url=stub.url + "/v1", embed_model=MODEL, api_key="sk-test")
    assert emb is not None and emb.dim == 64


@pytest.mark.parametrize(
    ("mode", "needle", "refused"),
    [
        ("error", "HTTP 500: llama runner process has terminated", False),
        ("malformed", "not JSON", False),
        ("wrong_count", "returned 2 embeddings for 3 texts", False),
        ("ragged", "mixed, empty or huge lengths", False),
        ("non_numeric", "non-numeric", True),
        ("nan", "non-numeric", True),
        ("huge", "sent more than", False),
    ],
)
def test_bad_answers_are_errors_that_say_what_went_wrong(
    stub: OllamaStub, embedder: OpenAIEmbedder, mode: str, needle: str, refused: bool
) -> None:
    stub.mode = mode
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["one", "two", "three"])
    assert needle in str(info.value) and stub.url in str(info.value)
    assert isinstance(info.value, EmbedderRefused) is refused
    assert embedder.dim == 0  # nothing learned from a bad answer


def test_a_change_of_width_is_refused(stub: OllamaStub, embedder: OpenAIEmbedder) -> None:
    embedder.probe()
    stub.dim = 32
    with pytest.raises(EmbedderError, match="restart this sidecar to re-embed"):
        embedder.embed(["hello", "world"])
    assert embedder.model_id == f"openai:{MODEL}:64"


def test_a_query_waits_briefly_a_batch_longer(stub: OllamaStub) -> None:
    stub.mode = "hang"
    emb = OpenAIEmbedder(stub.url, MODEL, timeout=5.0, query_timeout=0.2)
    with pytest.raises(EmbedderError, match=r"did not answer within 0\.2s"):
        emb.embed(["a search's query"])
    assert stub.hanging.is_set() and not stub.release.is_set()  # it gave up, not the server
    stub.release.set()
    stub.mode = "ok"
    assert emb.embed(["a", "b"]).shape == (2, 64)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1", "127.0.0.1:1", "http://"])
def test_a_bad_url_is_refused_up_front(url: str) -> None:
    with pytest.raises(EmbedderError, match="not http"):
        OpenAIEmbedder(url, MODEL)


def test_settings_name_what_openai_and_lead_need(tmp_path: Path) -> None:
    base = {"agent_dir": tmp_path / "a", "crew_dir": tmp_path / "c"}
    with pytest.raises(ValueError, match="--embed-url and --embed-model"):
        Settings(**base, embedder="openai", embed_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="--embedder lead is for a crew member"):
        Settings(**base, embedder="lead")


async def test_a_daemon_embeds_through_the_server_and_degrades_visibly(
    tmp_path: Path, stub: OllamaStub
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "NOTES.md").write_text("- the crane is blue\n- the dock is wet\n")
    settings = Settings(
        agent_dir=tmp_path / "a", crew_dir=tmp_path / "c", embedder="openai",
        embed_url=stub.url + "/v1", embed_model=MODEL,
    )  # fmt: skip
    svc = MemoryService(dataclasses.replace(settings, embed_retry=0.05))
    await svc.start()
    try:
        assert svc.embeddings.vectors is not None
        await svc.embeddings.vectors.wait_idle()
        body = (await svc.search.search("crane", "agent", 5)).to_json()
        assert body["mode"] == "hybrid" and "dense" in body["results"][0]["ranks"]
        stub.mode = "wrong_count"  # a query gets 0 rows for its 1 text
        body = (await svc.search.search("crane", "agent", 5)).to_json()
        assert body["mode"] == "sparse" and "returned 0 embeddings" in body["degraded"][0]
        health = await svc.health()
        assert health["retrieval"] == "sparse-only"
        assert any("returned 0 embeddings for 1 texts" in r for r in health["reasons"])
        stub.mode = "ok"

        async def hybrid() -> bool:
            return svc.embeddings.retrieval() == "hybrid"

        await eventually(hybrid, "the retry's probe")
        assert (await svc.health())["status"] == "ok"
        stub.mode = "hang"  # a slow server: the query waits half a second, not the batch's 30
        body = (await svc.search.search("crane", "agent", 5)).to_json()
        assert body["mode"] == "sparse" and "did not answer within 0.5s" in body["degraded"][0]
        assert body["results"] and stub.hanging.is_set()
        stub.release.set()
        stub.mode = "ok"
        await eventually(hybrid, "the retry's probe after the slow answer")
    finally:
        await svc.stop()
