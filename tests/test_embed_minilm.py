"""The in-process MiniLM embedder against the Embedder contract, with the real model."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.retrieval.embedders.base import EmbedderError
from sidecar.retrieval.embedders.factory import load_embedder
from sidecar.retrieval.embedders.minilm import DIM, MiniLMEmbedder


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=1)


def test_contract_shape_dtype_and_unit_rows(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["first note", "a much longer second note " * 20, "x"])
    assert vectors.shape == (3, DIM) == (3, embedder.dim)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, DIM)
    assert embedder.model_id.startswith("all-MiniLM-L6-v2-int8:")


def test_similar_texts_score_above_unrelated_ones(embedder: MiniLMEmbedder) -> None:
    query, close, far = embedder.embed(
        [
            "Which database do we use for the billing service?",
            "Billing runs on PostgreSQL 16 since the migration.",
            "Alice adopted a puppy last spring and named him Rex.",
        ]
    )
    assert float(query @ close) > float(query @ far) + 0.2


def test_order_and_batching_do_not_change_vectors(embedder: MiniLMEmbedder) -> None:
    texts = [f"note {i}: " + "word " * (i * 7 % 40) for i in range(20)]
    together = embedder.embed(texts)
    one_by_one = np.concatenate([embedder.embed([t]) for t in reversed(texts)])[::-1]
    assert np.allclose(together, one_by_one, atol=1e-4)


def test_long_text_is_truncated_not_refused(embedder: MiniLMEmbedder) -> None:
    (vector,) = embedder.embed(["token " * 5000])
    assert np.isfinite(vector).all()


def test_load_embedder_kinds() -> None:
    assert load_embedder("none") is None
    assert isinstance(load_embedder("auto"), MiniLMEmbedder)
    with pytest.raises(EmbedderError, match="unknown embedder"):
        load_embedder("word2vec")
    with pytest.raises(EmbedderError, match="Ollama"):
        load_embedder("ollama", ollama_url="http://127.0.0.1:9")  # nothing listens there
