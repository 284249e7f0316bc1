"""writes: latency of a durable 200-byte append through the API, and throughput.

Each API write is fsynced, renamed into place, directory-fsynced and reindexed
before it answers. Beside it, in the same run and on the same disk, a bare
``write + fsync + rename`` of the same bytes (no directory fsync, no index)
shows what durability alone costs here.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.context import Context
from bench.daemon import Client, Daemon, DaemonError
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "writes"
TARGET_RATIO = at_most(3.0, "<= 3.00x")
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


def sequential(daemon: Daemon, agent: Path, n: int) -> tuple[Latency, Latency, Latency]:
    """Interleave API and bare appends so all see the same disk conditions."""
    bare_path = agent.parent / "bare" / "log.md"
    bare_path.parent.mkdir(parents=True)
    content = b""
    api, bare, bare_dir = [], [], []
    for i in range(n):
        # A fresh daily file every 100 appends keeps the file under its cap.
        api.append(api_append(daemon.client, f"daily/2020-01-{1 + i // 100:02d}.md"))
        content = content + ENTRY.encode() if i % 100 else ENTRY.encode()
        bare.append(bare_append(bare_path, content))
        bare_dir.append(bare_append(bare_path, content, sync_dir=True))
    return Latency.of_seconds(api), Latency.of_seconds(bare), Latency.of_seconds(bare_dir)


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
            progress(NAME, f"{n} sequential appends, API and bare alternately")
            api, bare, bare_dir = sequential(daemon, agent, n)
            progress(NAME, f"{CONCURRENCY} concurrent clients")
            rate, total = throughput(daemon, 2.0 if ctx.quick else 5.0)
        progress(NAME, f"{n // 2} appends with hybrid search on (embedding in the background)")
        hybrid_agent = tmp / "hybrid" / "agent"
        with ctx.daemon(hybrid_agent, tmp / "hybrid", embedder="minilm") as daemon:
            hybrid, _, _ = sequential(daemon, hybrid_agent, n // 2)
    result.figures = [
        Figure("API append p50", api.p50, "ms"),
        Figure("API append p99", api.p99, "ms"),
        Figure("bare write+fsync+rename p50", bare.p50, "ms"),
        Figure("bare write+fsync+rename p99", bare.p99, "ms"),
        Figure("bare + directory fsync p50", bare_dir.p50, "ms"),
        Figure("API p50 / bare p50", api.p50 / bare.p50, "x", target=TARGET_RATIO),
        Figure("API p50 / (bare + directory fsync) p50", api.p50 / bare_dir.p50, "x"),
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
            [api.row("API (fsync+reindex)"), bare.row("bare"), hybrid.row("API, hybrid on")],
        )
    )
    result.notes.append(
        "API: HTTP keep-alive, each append fsynced, renamed, directory-fsynced and reindexed "
        "before the answer; bare: temp file, write, fsync, rename of the same bytes"
    )
    result.details = {
        "api": api.to_json(),
        "bare": bare.to_json(),
        "bare_dir_fsync": bare_dir.to_json(),
        "api_hybrid": hybrid.to_json(),
        "writes_per_s": rate,
    }
    return result
