"""OllamaEmbedder against a stub speaking Ollama's /api/embed over real loopback HTTP."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import numpy as np
import pytest

from sidecar.retrieval.embedders.base import EmbedderError, EmbedderRefused, normalize
from sidecar.retrieval.embedders.ollama import OllamaEmbedder
from tests.ollama_stub import OllamaStub, hashed_vector

MODEL = "nomic-embed-text"


@pytest.fixture
def stub() -> Iterator[OllamaStub]:
    with OllamaStub(dim=64, models=(MODEL,)) as s:
        yield s


@pytest.fixture
def embedder(stub: OllamaStub) -> OllamaEmbedder:
    return OllamaEmbedder(url=stub.url, model=MODEL)


def expected(texts: list[str], dim: int = 64) -> np.ndarray:
    return normalize(np.array([hashed_vector(t, dim) for t in texts]))


def test_defaults_and_empty_input_needs_no_server() -> None:
    emb = OllamaEmbedder()
    assert (emb.url, emb.model_id, emb.dim) == (
        "http://127.0.0.1:11434",
        "ollama:nomic-embed-text:0",
        0,
    )
    out = emb.embed([])
    assert out.shape == (0, 0)
    assert out.dtype == np.float32


def test_request_is_what_ollama_expects(stub: OllamaStub, embedder: OllamaEmbedder) -> None:
    embedder.embed(["why is the sky blue?", "why is the grass green?"])
    assert stub.requests == [
        {
            "model": MODEL,
            "input": ["why is the sky blue?", "why is the grass green?"],
            "truncate": True,
        }
    ]


def test_vectors_are_unit_float32_rows_in_order(stub: OllamaStub, embedder: OllamaEmbedder) -> None:
    texts = ["alpha beta gamma", "the quick brown fox", "memory sidecar daemon"]
    # several buckets per row: no per-row rescaling but a true L2 norm makes these unit length
    assert all(np.count_nonzero(hashed_vector(t, 64)) >= 2 for t in texts)
    out = embedder.embed(texts)
    assert out.dtype == np.float32
    assert out.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)
    assert embedder.dim == 64


def test_probe_learns_dim(stub: OllamaStub, embedder: OllamaEmbedder) -> None:
    assert embedder.dim == 0
    assert embedder.probe() == 64
    assert (embedder.dim, embedder.model_id) == (64, f"ollama:{MODEL}:64")
    assert [r["input"] for r in stub.requests] == [["probe"]]
    assert embedder.embed([]).shape == (0, 64)
    assert len(stub.requests) == 1  # empty input sent nothing


def test_large_input_is_batched_in_order(stub: OllamaStub) -> None:
    texts = [f"note {i} about topic{i % 7}" for i in range(70)]
    out = OllamaEmbedder(url=stub.url, model=MODEL, batch_size=32).embed(texts)
    sent = [r["input"] for r in stub.requests]
    assert [len(batch) for batch in sent] == [32, 32, 6]
    assert [t for batch in sent for t in batch] == texts
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)


def test_similar_texts_score_higher(embedder: OllamaEmbedder) -> None:
    query, near, far = embedder.embed(
        ["the cat sat on the mat", "a cat sat on a mat", "quarterly tax filing deadline"]
    )
    assert float(query @ near) > float(query @ far) + 0.3


@pytest.mark.parametrize(
    ("mode", "needles"),
    [
        ("error", ["HTTP 500", "llama runner process has terminated", "server log"]),
        ("malformed", ["not JSON"]),
        ("wrong_count", ["returned 2 embeddings for 3 texts"]),
        ("ragged", ["mixed or empty lengths"]),
        ("non_numeric", ["non-numeric"]),
    ],
)
def test_bad_replies_raise_embedder_error(
    stub: OllamaStub, embedder: OllamaEmbedder, mode: str, needles: list[str]
) -> None:
    stub.mode = mode
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["one", "two", "three"])
    for needle in needles:
        assert needle in str(info.value)
    assert stub.url in str(info.value)
    assert embedder.dim == 0  # nothing learned from a bad reply


def test_unknown_model_says_to_pull_it(stub: OllamaStub) -> None:
    with pytest.raises(EmbedderError) as info:
        OllamaEmbedder(url=stub.url, model="mxbai-embed-large").probe()
    msg = str(info.value)
    assert "HTTP 404" in msg
    assert 'model "mxbai-embed-large" not found' in msg
    assert "`ollama pull mxbai-embed-large`" in msg


def test_non_ollama_endpoint_quotes_plain_text_error(stub: OllamaStub) -> None:
    with pytest.raises(EmbedderError) as info:
        OllamaEmbedder(url=stub.url + "/not-ollama", model=MODEL).probe()
    assert "HTTP 404" in str(info.value)
    assert "404 page not found" in str(info.value)
    assert stub.requests == []  # the request went to /not-ollama/api/embed


def test_dimension_change_is_refused(stub: OllamaStub, embedder: OllamaEmbedder) -> None:
    embedder.probe()
    stub.dim = 32
    with pytest.raises(EmbedderError, match="32-dimensional vectors, earlier ones had 64"):
        embedder.embed(["hello"])
    assert embedder.dim == 64


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound but not listening: connects are refused, port stays ours
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(EmbedderError) as info:
            OllamaEmbedder(url=url, timeout=2.0).embed(["hello"])
    msg = str(info.value)
    assert f"cannot reach Ollama at {url}" in msg
    assert "ollama serve" in msg


def test_timeout_is_reported_and_recoverable(stub: OllamaStub) -> None:
    stub.mode = "hang"
    emb = OllamaEmbedder(url=stub.url, model=MODEL, timeout=0.3)
    with pytest.raises(EmbedderError, match=r"did not answer within 0\.3s"):
        emb.embed(["hello"])
    # The server still holds the request (until released), so the client gave up on its own.
    assert stub.hanging.is_set() and not stub.release.is_set()
    stub.release.set()
    stub.mode = "ok"
    assert emb.embed(["hello"]).shape == (1, 64)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:11434", "127.0.0.1:11434", "http://"])
def test_bad_url_is_refused_up_front(url: str) -> None:
    with pytest.raises(EmbedderError, match="not http"):
        OllamaEmbedder(url=url)


def test_only_an_answer_can_be_a_refusal_of_the_texts(stub: OllamaStub) -> None:
    """The sync sets texts aside only when the server answered about them; a server
    that is slow or gone says nothing about the input."""
    emb = OllamaEmbedder(url=stub.url, model=MODEL, timeout=0.3)
    stub.refuse_word = "zebrafish"
    with pytest.raises(EmbedderRefused, match="NaN"):
        emb.embed(["the zebrafish tank"])
    stub.mode = "hang"
    with pytest.raises(EmbedderError) as info:
        emb.embed(["hello"])
    assert not isinstance(info.value, EmbedderRefused)
    stub.release.set()
