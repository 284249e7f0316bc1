"""context: time to assemble the system-prompt memory block over a 2 MB agent tier.

The tier holds AGENT.md and about 700 daily logs (2 MB in all); the crew tier
a CREW.md and its own logs. GET /memory/context is timed without and with a
query (which adds a two-tier search for the leftover budget).
"""

from __future__ import annotations

import datetime as dt
import random
import time
import urllib.parse
from pathlib import Path

from bench.context import Context
from bench.daemon import Daemon, DaemonError
from bench.notes import _WORDS
from bench.report import BenchResult, Figure, Table, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "context"
DESCRIPTION = "assembling the system-prompt memory block"
TIER_BYTES = 2_000_000
DAILY_FILES = 700


def _lines(rng: random.Random, n: int) -> str:
    return "".join(f"- {' '.join(rng.choices(_WORDS, k=rng.randint(6, 18)))}\n" for _ in range(n))


def write_tier(root: Path, core: str, seed: int) -> int:
    """AGENT.md/CREW.md plus daily logs up to today, about TIER_BYTES in all."""
    rng = random.Random(seed)
    (root / "daily").mkdir(parents=True)
    (root / core).write_text(f"# Memory\n{_lines(rng, 40)}")
    today = dt.datetime.now(dt.UTC).date()
    per_file = TIER_BYTES // DAILY_FILES
    written = 0
    for i in range(DAILY_FILES):
        day = today - dt.timedelta(days=i)
        text = f"# {day.isoformat()}\n"
        while len(text) < per_file:
            text += f"\n## Session {len(text) % 7}\n{_lines(rng, 8)}"
        (root / "daily" / f"{day.isoformat()}.md").write_text(text)
        written += len(text)
    return written


def timed(daemon: Daemon, params: dict[str, str], n: int) -> Latency:
    path = "/memory/context?" + urllib.parse.urlencode(params)
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        status, body = daemon.client.raw("GET", path)
        samples.append(time.perf_counter() - started)
        if status != 200:
            raise DaemonError(f"context answered {status}: {body[:200]!r}")
    return Latency.of_seconds(samples)


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "assembling the memory block over a 2 MB tier")
    n = 50 if ctx.quick else 200
    with ctx.tempdir(NAME) as tmp:
        agent_bytes = write_tier(tmp / "agent", "AGENT.md", 1)
        write_tier(tmp / "crew", "CREW.md", 2)
        with ctx.daemon(tmp / "agent", tmp, tmp / "crew") as daemon:
            daemon.wait_indexed(DAILY_FILES + 1, timeout=300)
            progress(NAME, f"agent tier {agent_bytes / 1e6:.1f} MB; {n} requests each")
            plain = timed(daemon, {"budget": "15000"}, n)
            query = timed(daemon, {"budget": "15000", "query": "database migration rollback"}, n)
    result.figures = [
        Figure("block p50", plain.p50, "ms"),
        Figure("block p99", plain.p99, "ms"),
        Figure("block with query p50", query.p50, "ms"),
        Figure("block with query p99", query.p99, "ms"),
    ]
    result.tables.append(
        Table(
            "GET /memory/context, budget 15,000",
            LATENCY_HEADERS,
            [plain.row("no query"), query.row("with query")],
        )
    )
    result.details = {"plain": plain.to_json(), "query": query.to_json()}
    return result
