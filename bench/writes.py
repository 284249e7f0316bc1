"""writes: latency of a durable 200-byte append through the API, and throughput.

Each API write is fsynced, renamed into place, directory-fsynced and reindexed
before it answers. The headline is its p50 against the floor every API write
pays, measured in the same run, interleaved, on the same disk and daemon: a bare
``write + fsync + rename + directory fsync`` of the same bytes plus an empty
HTTP round trip (``POST /memory/write`` with a same-sized JSON array, which the
daemon answers ``400 invalid_json`` before touching disk). What is left above
the floor is the daemon's own work: the lock, reading the file, the reindex.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.context import Context
from bench.daemon import Client, Daemon, DaemonError
from bench.report import BenchResult, Figure, Table, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "writes"
DESCRIPTION = "durable append latency and throughput"
ENTRY = ("- " + "durable append benchmark entry " * 7)[:199] + "\n"  # 200 bytes
CONCURRENCY = 8


def api_append(client: Client, file: str) -> float:
    started = time.perf_counter()
    status, body = client.json(
        "POST", "/memory/write", {"scope": "agent", "file": file, "content": ENTRY}
    )
    elapsed = time.perf_counter() - started
    if status != 201 or not body.get("indexed"):
        raise DaemonError(f"write answered {status}: {body}")
    return elapsed


def empty_round_trip(client: Client, file: str) -> float:
    """The same route, headers and body size as a write, refused before any disk access."""
    body = json.dumps(["agent", file, ENTRY]).encode()  # a JSON array, not an object
    started = time.perf_counter()
    status, raw = client.raw("POST", "/memory/write", body)
    elapsed = time.perf_counter() - started
    if status != 400 or json.loads(raw).get("error") != "invalid_json":
        raise DaemonError(f"empty round trip answered {status}: {raw[:200]!r}")
    return elapsed


def bare_append(path: Path, content: bytes, sync_dir: bool = False) -> float:
    """The same bytes made durable the plain way: temp file, write, fsync, rename
    (and, with ``sync_dir``, the directory fsync that makes the rename itself durable)."""
    started = time.perf_counter()
    tmp = path.with_name(f".{path.name}.bare-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync_dir:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return time.perf_counter() - started


@dataclass(frozen=True, slots=True)
class Sequential:
    api: Latency  # POST /memory/write, durable and indexed
    bare: Latency  # write + fsync + rename
    bare_dir: Latency  # write + fsync + rename + directory fsync
    http: Latency  # an empty round trip to the same daemon

    @property
    def floor_p50(self) -> float:
        """What every API write pays at least: durable bytes plus an HTTP round trip."""
        return self.bare_dir.p50 + self.http.p50


def sequential(daemon: Daemon, agent: Path, n: int) -> Sequential:
    """Interleave API appends, bare appends and empty round trips so all see the same
    disk and daemon conditions."""
    bare_path = agent.parent / "bare" / "log.md"
    bare_path.parent.mkdir(parents=True)
    content = b""
    api, bare, bare_dir, http = [], [], [], []
    for i in range(n):
        # A fresh daily file every 100 appends keeps the file under its cap.
        file = f"daily/2020-01-{1 + i // 100:02d}.md"
        api.append(api_append(daemon.client, file))
        http.append(empty_round_trip(daemon.client, file))
        content = content + ENTRY.encode() if i % 100 else ENTRY.encode()
        bare.append(bare_append(bare_path, content))
        bare_dir.append(bare_append(bare_path, content, sync_dir=True))
    return Sequential(*(Latency.of_seconds(x) for x in (api, bare, bare_dir, http)))


def throughput(daemon: Daemon, seconds: float) -> tuple[float, int]:
    """Writes per second with CONCURRENCY clients, each appending to its own file."""
    deadline = time.perf_counter() + seconds

    def client_loop(k: int) -> int:
        client, done = Client(daemon.port), 0
        try:
            while time.perf_counter() < deadline:
                api_append(client, f"daily/2021-{k + 1:02d}-{1 + done // 100:02d}.md")
                done += 1
        finally:
            client.close()
        return done

    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        total = sum(pool.map(client_loop, range(CONCURRENCY)))
    return total / (time.perf_counter() - started), total


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "durable 200-byte appends through POST /memory/write")
    n = 100 if ctx.quick else 400
    with ctx.tempdir(NAME) as tmp:
        agent = tmp / "agent"
        with ctx.daemon(agent, tmp) as daemon:
            progress(NAME, f"{n} sequential appends: API, empty round trip and bare, in turn")
            seq = sequential(daemon, agent, n)
            progress(NAME, f"{CONCURRENCY} concurrent clients")
            rate, total = throughput(daemon, 2.0 if ctx.quick else 5.0)
        progress(NAME, f"{n // 2} appends with hybrid search on (embedding in the background)")
        hybrid_agent = tmp / "hybrid" / "agent"
        with ctx.daemon(hybrid_agent, tmp / "hybrid", embedder="minilm") as daemon:
            hybrid = sequential(daemon, hybrid_agent, n // 2).api
    api, bare, bare_dir, http = seq.api, seq.bare, seq.bare_dir, seq.http
    result.figures = [
        Figure(
            "API p50 / floor p50",
            api.p50 / seq.floor_p50,
            "x",
            note=f"floor = bare + directory fsync + empty HTTP round trip = {seq.floor_p50:.2f} ms",
        ),
        Figure("API append p50", api.p50, "ms"),
        Figure("API append p99", api.p99, "ms"),
        Figure("API p50 - floor p50", api.p50 - seq.floor_p50, "ms", note="the daemon's own work"),
        Figure("bare write+fsync+rename p50", bare.p50, "ms"),
        Figure("bare write+fsync+rename p99", bare.p99, "ms"),
        Figure("bare + directory fsync p50", bare_dir.p50, "ms"),
        Figure("empty HTTP round trip p50", http.p50, "ms", note="400 invalid_json, no disk"),
        Figure("API p50 / bare p50", api.p50 / bare.p50, "x", note="retired ratio, context only"),
        Figure(
            "API append p50, hybrid on",
            hybrid.p50,
            "ms",
            note="embedding runs after the answer, on its own thread",
        ),
        Figure(
            f"writes/s, {CONCURRENCY} concurrent clients",
            rate,
            "/s",
            digits=0,
            note=f"{total} writes",
        ),
    ]
    result.tables.append(
        Table(
            "append latency",
            LATENCY_HEADERS,
            [
                api.row("API (fsync+reindex)"),
                bare.row("bare"),
                bare_dir.row("bare + directory fsync"),
                http.row("empty HTTP round trip"),
                hybrid.row("API, hybrid on"),
            ],
        )
    )
    result.notes += [
        "API: HTTP keep-alive, each append fsynced, renamed, directory-fsynced and reindexed "
        "before the answer; bare: temp file, write, fsync, rename of the same bytes",
        "floor: bare + directory fsync p50 plus the empty round trip p50, the least any durable "
        "API write can cost; the empty round trip is POST /memory/write on the same keep-alive "
        "connection with a same-sized JSON array, answered 400 invalid_json before any disk "
        "access (GET /healthz is not used: it checks free disk and tier folders)",
    ]
    result.details = {
        "api": api.to_json(),
        "bare": bare.to_json(),
        "bare_dir_fsync": bare_dir.to_json(),
        "empty_round_trip": http.to_json(),
        "floor_p50_ms": round(seq.floor_p50, 4),
        "api_hybrid": hybrid.to_json(),
        "writes_per_s": rate,
    }
    return result
