"""latency: search latency over HTTP, in-process, and as a bare FTS5 query, on the same data.

The corpus is LoCoMo dev conversation files replicated until the index holds
10k (then 100k) chunks; the queries are the LoCoMo dev questions. Requests are
sequential and single, after a short warm-up; the three ways of searching are
timed interleaved, so a busy machine slows them alike.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import bare_fts
from bench.context import Context
from bench.corpus import Replicator, source_files
from bench.daemon import Daemon, DaemonError
from bench.locomo_data import Locomo
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.disk.tiers import INDEX_FILENAME
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import search_store
from sidecar.stores.sqlite import SQLiteStore

NAME = "latency"
DESCRIPTION = "search latency at 10k/100k chunks vs bare FTS5"
SIZES = (10_000, 100_000)
QUICK_SIZES = (10_000,)
QUERIES = {10_000: 500, 100_000: 150}  # fewer at 100k, where one query costs ~50 ms
QUICK_QUERIES = 200
LIMIT = 10
WARMUP = 30
RATIO_TARGET = at_most(2.0, "<= 2.00x")
INDEX_TIMEOUT_S = 900.0


@dataclass(slots=True)
class SizeRun:
    target_chunks: int
    status: dict[str, Any]  # the daemon's /memory/status once indexed
    startup_index_s: float
    http: Latency
    inprocess: Latency
    bare: Latency

    @property
    def ratio(self) -> float:
        return self.http.p50 / self.bare.p50

    def to_json(self) -> dict[str, Any]:
        return {
            "target_chunks": self.target_chunks,
            "status": self.status,
            "startup_index_s": round(self.startup_index_s, 3),
            "http": self.http.to_json(),
            "inprocess": self.inprocess.to_json(),
            "bare_fts5": self.bare.to_json(),
            "http_p50_over_bare_p50": round(self.ratio, 3),
        }


Probe = Callable[[str], object]


def measure(probes: dict[str, Probe], queries: list[str]) -> dict[str, Latency]:
    """Time every probe on every query, interleaved and in rotating order, so load from
    anything else on the machine falls on all of them alike."""
    names = list(probes)
    for q in queries[:WARMUP]:
        for probe in probes.values():
            probe(q)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(queries):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            started = time.perf_counter()
            probes[name](q)
            samples[name].append(time.perf_counter() - started)
    return {name: Latency.of_seconds(s) for name, s in samples.items()}


def http_probe(daemon: Daemon) -> Probe:
    client = daemon.client

    def one(q: str) -> None:
        body = json.dumps({"query": q, "limit": LIMIT, "scope": "agent"}).encode()
        status, raw = client.raw("POST", "/memory/search", body)
        if status != 200:
            raise DaemonError(f"search answered {status}: {raw[:200]!r}")

    return one


@contextlib.contextmanager
def inprocess_probe(index_path: Path) -> Iterator[Probe]:
    """The daemon's own code path minus HTTP: plan() + search_store() on its index file."""
    store = SQLiteStore(index_path)

    def one(q: str) -> None:
        planned = plan(q)
        if planned is not None:
            search_store(store, planned, LIMIT)

    try:
        yield one
    finally:
        store.close()


@contextlib.contextmanager
def bare_probe(index_path: Path, bare_path: Path, loc: Locomo) -> Iterator[Probe]:
    """The daemon's chunk texts copied into a plain FTS5 table, queried with MATCH + bm25."""
    src = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    conn = bare_fts.connect(bare_path)
    try:
        bare_fts.create(conn)
        bare_fts.insert_all(conn, src.execute("SELECT path, body FROM chunks ORDER BY id"))
        yield lambda q: bare_fts.query(conn, loc.or_query(q), LIMIT)
    finally:
        src.close()
        conn.close()


def _queries(ctx: Context, loc: Locomo, size: int) -> list[str]:
    usable = [q for q in loc.dev_questions() if plan(q) is not None and loc.or_query(q)]
    if ctx.quick:
        return usable[:QUICK_QUERIES]
    return usable[: QUERIES[size]]


def _run_size(ctx: Context, tmp: Path, replicator: Replicator, size: int) -> SizeRun:
    loc = ctx.locomo()
    grown = replicator.grow_to(size)
    progress(NAME, f"{size:,} chunks: {grown.files:,} files, {grown.bytes / 1e6:.1f} MB")
    agent = replicator.root
    with ctx.daemon(agent, tmp) as daemon:
        status = daemon.wait_indexed(grown.files, timeout=INDEX_TIMEOUT_S)
        index_s = time.monotonic() - daemon.started_at
        queries = _queries(ctx, loc, size)
        progress(NAME, f"{status['total_chunks']:,} chunks indexed; {len(queries)} queries")
        index = agent / INDEX_FILENAME
        with (
            inprocess_probe(index) as inproc,
            bare_probe(index, tmp / f"bare-{size}.sqlite", loc) as bare,
        ):
            got = measure({"http": http_probe(daemon), "inproc": inproc, "bare": bare}, queries)
    return SizeRun(size, status, index_s, got["http"], got["inproc"], got["bare"])


def _figures(runs: list[SizeRun]) -> list[Figure]:
    figures: list[Figure] = []
    for r in runs:
        tag = f"@{r.status['total_chunks'] // 1000}k chunks"
        figures += [
            Figure(f"HTTP p50 {tag}", r.http.p50, "ms"),
            Figure(f"HTTP p99 {tag}", r.http.p99, "ms"),
            Figure(f"in-process p50 {tag}", r.inprocess.p50, "ms"),
            Figure(f"bare FTS5 p50 {tag}", r.bare.p50, "ms"),
            Figure(f"in-process p50 / bare p50 {tag}", r.inprocess.p50 / r.bare.p50, "x"),
            Figure(
                f"HTTP p50 / bare p50 {tag}",
                r.ratio,
                "x",
                target=RATIO_TARGET if r.target_chunks == SIZES[0] else None,
            ),
        ]
    return figures


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "search latency, sequential single requests (LoCoMo dev questions)")
    loc = ctx.locomo()
    runs: list[SizeRun] = []
    with ctx.tempdir(NAME) as tmp:
        replicator = Replicator(source_files(loc.dev_corpora()), tmp / "agent")
        for size in QUICK_SIZES if ctx.quick else SIZES:
            runs.append(_run_size(ctx, tmp, replicator, size))
    result.figures = _figures(runs)
    rows = [
        lat.row(f"{r.status['total_chunks']:,} chunks, {label}")
        for r in runs
        for label, lat in (("HTTP", r.http), ("in-process", r.inprocess), ("bare FTS5", r.bare))
    ]
    result.tables.append(Table("latency distribution", LATENCY_HEADERS, rows))
    result.notes += [
        f"{r.status['total_chunks']:,} chunks in {r.status['total_files']:,} files: the daemon's "
        f"startup scan took {r.startup_index_s:.1f} s "
        + ("from an empty index" if i == 0 else "adding files to the previous size's index")
        for i, r in enumerate(runs)
    ]
    result.notes.append(
        "the three are timed interleaved, query by query in rotating order; "
        "HTTP: http.client keep-alive; in-process: plan() + search_store() on SQLiteStore; "
        "bare: FTS5(porter unicode61) MATCH OR-of-terms ORDER BY bm25 LIMIT 10"
    )
    result.details = {"sizes": [r.to_json() for r in runs]}
    return result
