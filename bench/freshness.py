"""freshness: time from a file write to the new text being searchable through the daemon.

Two kinds of write: a plain append (open, append, close, like ``echo >>``) and
an editor-style atomic replace (write a hidden temp file in the same folder,
then ``os.replace``). The clock starts just before the write; the new unique
token is then searched in a tight loop until it is found or 5 s pass.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path

from bench import bare_fts
from bench.context import Context
from bench.daemon import Client, Daemon
from bench.notes import write_notes
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "freshness"
DESCRIPTION = "time from a file write to searchable"
TARGET = at_most(300.0, "<= 300 ms")
CORPUS_FILES = 300
CORPUS_BYTES = 600_000
TIMEOUT_S = 5.0
POLL_SLEEP_S = 0.002
SETTLE_TIMEOUT_S = 10.0

Writer = Callable[[Path, str], None]


def append_line(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)


def atomic_replace(path: Path, line: str) -> None:
    text = path.read_text(encoding="utf-8") + line
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def wait_searchable(client: Client, token: str, started: float) -> float | None:
    """Seconds from ``started`` until a search for ``token`` finds it; None on timeout."""
    while True:
        if client.search(token, limit=1):
            return time.perf_counter() - started
        if time.perf_counter() - started > TIMEOUT_S:
            return None
        time.sleep(POLL_SLEEP_S)


def settle(client: Client) -> None:
    """Let the daemon finish whatever the last write queued, so trials do not overlap."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while client.status().get("queue_depth") and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.02)


def trials(daemon: Daemon, root: Path, write: Writer, label: str, n: int) -> list[float | None]:
    rng = random.Random(f"{NAME}-{label}")
    rels = bare_fts.markdown_files(root)
    out: list[float | None] = []
    for i in range(n):
        token = f"fresh{label}{i}x{rng.randrange(16**8):08x}"
        path = root / rng.choice(rels)
        started = time.perf_counter()
        write(path, f"- {token} written by the freshness benchmark\n")
        out.append(wait_searchable(daemon.client, token, started))
        settle(daemon.client)
    return out


def _latency(samples: list[float | None]) -> Latency:
    """Misses count as the full timeout, so they can only raise the percentiles."""
    return Latency.of_seconds([TIMEOUT_S if s is None else s for s in samples])


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "time from a file write to searchable over HTTP")
    n = 15 if ctx.quick else 50
    measured: dict[str, list[float | None]] = {}
    with ctx.tempdir(NAME) as tmp:
        agent = tmp / "agent"
        size = write_notes(agent, CORPUS_FILES, CORPUS_BYTES, seed=5)
        with ctx.daemon(agent, tmp) as daemon:
            status = daemon.wait_indexed(size.files)
            progress(NAME, f"{status['total_chunks']:,} chunks indexed; {n} trials per kind")
            measured["append"] = trials(daemon, agent, append_line, "append", n)
            measured["replace"] = trials(daemon, agent, atomic_replace, "replace", n)
    stats = {kind: _latency(s) for kind, s in measured.items()}
    misses = {kind: sum(s is None for s in samples) for kind, samples in measured.items()}
    for kind, label in (("append", "append (echo >>)"), ("replace", "atomic replace")):
        lat = stats[kind]
        result.figures += [
            Figure(f"{label} p50", lat.p50, "ms"),
            Figure(
                f"{label} p99",
                lat.p99,
                "ms",
                target=TARGET,
                note=f"{misses[kind]} of {lat.n} not found within {TIMEOUT_S:.0f} s",
            ),
        ]
    rows = [stats[k].row(k) for k in ("append", "replace")]
    result.tables.append(Table("time to searchable", LATENCY_HEADERS, rows))
    result.notes.append(
        f"corpus: {size.files} notes, {size.bytes / 1e6:.2f} MB; polling POST /memory/search "
        f"every {POLL_SLEEP_S * 1000:.0f} ms over keep-alive; clock starts before the write"
    )
    result.details = {k: {"latency": stats[k].to_json(), "misses": misses[k]} for k in stats}
    return result
