"""The in-process MiniLM embedder against the Embedder contract, with the real model."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from sidecar.retrieval.embedders.base import EmbedderError
from sidecar.retrieval.embedders.factory import load_embedder
from sidecar.retrieval.embedders.minilm import DIM, HELPER_NICE, MiniLMEmbedder, model_files


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


def _nice_by_thread() -> dict[int, int]:
    """This process's threads and their nice values (field 19 of /proc/.../stat)."""
    nice = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            nice[int(task.name)] = int(fields[16])
    return nice


def test_helpers_run_at_low_priority_and_the_asking_thread_keeps_its_own(
    embedder: MiniLMEmbedder,
) -> None:
    before = _nice_by_thread()
    other = MiniLMEmbedder(threads=1)
    other.embed(["started"])
    started = {t: n for t, n in _nice_by_thread().items() if t not in before}
    assert list(started.values()) == [HELPER_NICE]  # one helper; the loading thread ended
    assert (
        os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        == before[threading.get_native_id()]
    )


def test_vectors_are_those_of_one_thread_bit_for_bit(embedder: MiniLMEmbedder) -> None:
    """Split across the helper, the matrix products sum in the same order: vectors
    stored by a one-thread version of this model stay valid."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    one = ort.InferenceSession(str(model_files()[0]), options, providers=["CPUExecutionProvider"])
    texts = ["when did the harbour crane fail", "a longer note about the billing service " * 6]
    alone = MiniLMEmbedder.__new__(MiniLMEmbedder)
    alone.__dict__.update(embedder.__dict__)
    alone._session = one
    assert np.array_equal(embedder.embed(texts), alone.embed(texts))
    assert np.array_equal(embedder.embed(texts[:1]), alone.embed(texts[:1]))
