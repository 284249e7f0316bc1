"""memory: resident memory (VmRSS) of the idle daemon, small corpus and 10k chunks,
sparse-only, and over the small corpus with the in-process embedding model loaded.

Read from /proc/PID/status of the daemon subprocess after the index is
complete and the daemon has sat idle for a moment. VmHWM (peak RSS) is shown
beside it: indexing is when the daemon is largest.
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from pathlib import Path

from bench.context import Context
from bench.corpus import Replicator, source_files
from bench.daemon import Daemon
from bench.report import BenchResult, Figure, at_most, progress
from sidecar import demo

NAME = "memory"
DESCRIPTION = "idle resident memory of the daemon"
TARGET = at_most(60.0, "<= 60 MB")
IDLE_S = 1.5
CHUNKS = 10_000
SEARCHES = 200


@dataclass(frozen=True, slots=True)
class Reading:
    rss_mb: float
    hwm_mb: float


def read_memory(daemon: Daemon) -> Reading:
    kb = daemon.memory_kb()
    return Reading(kb["VmRSS"] * 1024 / 1e6, kb["VmHWM"] * 1024 / 1e6)


def idle_reading(daemon: Daemon, expected_files: int | None = None) -> Reading:
    daemon.wait_indexed(expected_files, timeout=300)
    time.sleep(IDLE_S)
    return read_memory(daemon)


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "memory-bench", "version": "1"},
    },
}


def open_mcp_session(daemon: Daemon) -> None:
    """One MCP initialize on /mcp: the daemon loads the SDK on first use."""
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps(MCP_INITIALIZE),
            headers={"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"},
        )  # fmt: skip
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"MCP initialize answered {resp.status}")
    finally:
        conn.close()


def demo_corpus(ctx: Context, tmp: Path) -> tuple[Reading, Reading]:
    """Idle over the demo memory, then idle again after a first MCP session on /mcp."""
    agent, crew = demo.seed(tmp / "demo")
    with ctx.daemon(agent, tmp, crew) as daemon:
        idle = idle_reading(daemon)  # the notes it indexes: not learnings/*.md
        open_mcp_session(daemon)
        time.sleep(IDLE_S)
        return idle, read_memory(daemon)


def demo_hybrid(ctx: Context, tmp: Path) -> Reading:
    """Idle over the demo memory with the in-process model loaded and every chunk embedded."""
    agent, crew = demo.seed(tmp / "demo-hybrid")
    with ctx.daemon(agent, tmp, crew, embedder="minilm") as daemon:
        return idle_reading(daemon)


def large_corpus(ctx: Context, tmp: Path) -> tuple[Reading, Reading, int]:
    """Idle after indexing 10k chunks, then after a run of searches; and the chunk count."""
    loc = ctx.locomo()
    agent = tmp / "large"
    grown = Replicator(source_files(loc.dev_corpora()), agent).grow_to(CHUNKS)
    questions = loc.dev_questions()[:SEARCHES]
    with ctx.daemon(agent, tmp) as daemon:
        idle = idle_reading(daemon, grown.files)
        chunks = int(daemon.client.status()["total_chunks"])
        for q in questions:
            daemon.client.search(q)
        time.sleep(IDLE_S)
        return idle, read_memory(daemon), chunks


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "resident memory of the idle daemon (VmRSS)")
    why = ctx.locomo_missing()  # the 10k corpus is made of LoCoMo conversations
    with ctx.tempdir(NAME) as tmp:
        progress(NAME, "demo corpus")
        small, with_mcp = demo_corpus(ctx, tmp)
        progress(NAME, "demo corpus, hybrid")
        hybrid = demo_hybrid(ctx, tmp)
        large = None
        if why is None:
            progress(NAME, f"{CHUNKS:,}-chunk corpus")
            large = large_corpus(ctx, tmp)
    result.figures = [
        Figure("idle RSS, demo corpus", small.rss_mb, "MB", 1, TARGET),
        Figure(
            "idle RSS, demo corpus, after a /mcp session",
            with_mcp.rss_mb,
            "MB",
            1,
            note="the MCP SDK loads on first /mcp use",
        ),
        Figure(
            "idle RSS, demo corpus, hybrid (MiniLM loaded)",
            hybrid.rss_mb,
            "MB",
            1,
            note=f"peak {hybrid.hwm_mb:.1f} MB while embedding",
        ),
    ]
    result.notes.append(f"MB = 10^6 bytes; read {IDLE_S} s after the index was complete")
    result.details = {
        "demo": {
            "rss_mb": small.rss_mb,
            "hwm_mb": small.hwm_mb,
            "with_mcp_rss_mb": with_mcp.rss_mb,
            "hybrid_rss_mb": hybrid.rss_mb,
            "hybrid_hwm_mb": hybrid.hwm_mb,
        },
    }
    if large is None:
        result.notes.append(f"{CHUNKS:,}-chunk corpus skipped: {why}")
        return result
    idle, searched, chunks = large
    tag = f"{chunks // 1000}k chunks"
    result.figures += [
        Figure(f"idle RSS, {tag} indexed", idle.rss_mb, "MB", 1, TARGET),
        Figure(f"peak RSS (VmHWM), {tag}", idle.hwm_mb, "MB", 1, note="peak since start"),
        Figure(f"idle RSS, {tag} after {SEARCHES} searches", searched.rss_mb, "MB", 1),
    ]
    result.details["large"] = {
        "chunks": chunks,
        "rss_mb": idle.rss_mb,
        "hwm_mb": idle.hwm_mb,
        "after_searches_rss_mb": searched.rss_mb,
    }
    return result
