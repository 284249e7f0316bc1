"""dense: cosine top-10 over 100k vectors, and the in-process model's throughput.

Top-k is the daemon's own ``VectorIndex`` (one matrix-vector product and an
argpartition) over random unit vectors of the model's width, BLAS pinned to
one thread as in the daemon. Throughput embeds real LoCoMo chunks the way the
daemon does: each chunk and, when it has several, each of its lines.
"""

from __future__ import annotations

import time

import numpy as np

from bench.context import Context
from bench.corpus import source_files
from bench.report import BenchResult, Figure, at_most, progress
from bench.timing import Latency
from sidecar.index.chunking import chunk_markdown
from sidecar.retrieval.embedders.base import normalize
from sidecar.retrieval.embedders.minilm import DIM, MiniLMEmbedder
from sidecar.retrieval.vector_sync import texts_to_embed
from sidecar.retrieval.vectors import VectorIndex

NAME = "dense"
DESCRIPTION = "dense top-k over 100k vectors, embedding throughput"
TARGET_TOPK = at_most(20.0, "<= 20 ms")
VECTORS = 100_000
QUERIES = 200


def top_k_latency(n: int, queries: int) -> Latency:
    rng = np.random.default_rng(0)
    index = VectorIndex(DIM)
    for start in range(0, n, 10_000):  # as the daemon fills it: in batches
        rows = normalize(rng.standard_normal((10_000, DIM), dtype=np.float32))
        index.upsert(range(start, start + 10_000), ["k"] * 10_000, rows)
    probes = normalize(rng.standard_normal((queries, DIM), dtype=np.float32))
    index.top_k(probes[0], 10)  # warm the caches once
    times = []
    for q in probes:
        started = time.perf_counter()
        index.top_k(q, 10)
        times.append(time.perf_counter() - started)
    return Latency.of_seconds(times)


def locomo_chunks(ctx: Context, limit: int) -> list[str]:
    """Chunk bodies of the dev conversations, cut as the daemon cuts them."""
    bodies = [
        c.text
        for f in source_files(ctx.locomo().dev_corpora())
        for c in chunk_markdown(f.text).chunks
        if c.text
    ]
    return bodies[:limit]


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "dense top-k latency and embedding throughput")
    n = 20_000 if ctx.quick else VECTORS
    progress(NAME, f"top-10 over {n:,} x {DIM} vectors")
    topk = top_k_latency(n, QUERIES)
    figures = [
        Figure(f"top-10 over {n:,} x {DIM}, p50", topk.p50, "ms", target=TARGET_TOPK),
        Figure(f"top-10 over {n:,} x {DIM}, p99", topk.p99, "ms"),
    ]
    result.notes.append("one BLAS thread (OPENBLAS_NUM_THREADS=1, set by the sidecar package)")
    result.details = {"topk": topk.to_json()}
    why = ctx.locomo_missing()
    if why is not None:  # top-k needs no data; the embedding figures embed LoCoMo text
        result.figures = figures
        result.notes.append(f"embedding throughput and query embedding skipped: {why}")
        return result
    chunks = locomo_chunks(ctx, 60 if ctx.quick else 240)
    texts = sum(len(texts_to_embed(c)) for c in chunks)
    for threads in (1, 2):
        progress(NAME, f"embedding {len(chunks)} LoCoMo chunks ({texts} texts), {threads} thr")
        model = MiniLMEmbedder(threads)
        started = time.perf_counter()
        for start in range(0, len(chunks), 32):
            model.embed([t for c in chunks[start : start + 32] for t in texts_to_embed(c)])
        rate = len(chunks) / (time.perf_counter() - started)
        figures.append(
            Figure(
                f"embedding throughput, {threads} thread{'s' if threads > 1 else ''}",
                rate,
                "chunks/s",
                digits=1,
                note=f"{texts / len(chunks):.1f} texts per chunk (chunk + lines)",
            )
        )
    query_times = []
    for question in ctx.locomo().dev_questions()[:100]:
        started = time.perf_counter()
        model.embed([question])
        query_times.append(time.perf_counter() - started)
    query = Latency.of_seconds(query_times)
    figures.append(Figure("query embedding p50", query.p50, "ms", note="2 threads"))
    result.figures = figures
    result.details["query_embedding"] = query.to_json()
    return result
