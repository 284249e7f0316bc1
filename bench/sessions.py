"""sessions: what a session's start and end cost.

A start is timed beside a bare ``GET /memory/context`` for the same task, in the same
run (the block is what a start answers, so the ratio is the session's bookkeeping); an
end is timed for sessions of 40 events and one working note, with the extractive summary
(no LLM), against recording those 40 events.
"""

from __future__ import annotations

import time
import urllib.parse
from typing import Any

from bench.context import Context
from bench.daemon import Daemon, DaemonError
from bench.prompt_block import write_tier
from bench.report import BenchResult, Figure, Table, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "sessions"
DESCRIPTION = "a session's start (with its block) and end (40 events)"
TASK = "database migration rollback"
EVENTS = 40


def _call(daemon: Daemon, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    status, answer = daemon.client.json(method, path, body)
    if status >= 300:
        raise DaemonError(f"{path} answered {status}: {answer}")
    return answer


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "a session's start (with its block) and end (40 events)")
    n = 30 if ctx.quick else 100
    starts, contexts, ends, records = [], [], [], []
    with ctx.tempdir(NAME) as tmp:
        write_tier(tmp / "agent", "AGENT.md", 1)
        write_tier(tmp / "crew", "CREW.md", 2)
        with ctx.daemon(tmp / "agent", tmp, tmp / "crew") as daemon:
            daemon.wait_indexed(timeout=300)
            progress(NAME, f"{n} sessions of {EVENTS} events")
            path = "/memory/context?" + urllib.parse.urlencode({"query": TASK})
            for i in range(n):
                t0 = time.perf_counter()
                status, _ = daemon.client.raw("GET", path)
                contexts.append(time.perf_counter() - t0)
                if status != 200:
                    raise DaemonError(f"context answered {status}")
                t0 = time.perf_counter()
                sid = _call(daemon, "POST", "/memory/session/start", {"task": TASK})["session_id"]
                starts.append(time.perf_counter() - t0)
                events = [{"type": "tool.call", "session_id": sid,
                           "summary": f"step {k} of run {i}: applied migration {k}"}
                          for k in range(EVENTS)]  # fmt: skip
                t0 = time.perf_counter()
                _call(daemon, "POST", "/memory/journal", {"events": events})
                records.append(time.perf_counter() - t0)
                _call(
                    daemon,
                    "POST",
                    "/memory/remember",
                    {"session_id": sid, "content": "lock held by vacuum"},
                )
                t0 = time.perf_counter()
                _call(daemon, "POST", "/memory/session/end", {"session_id": sid})
                ends.append(time.perf_counter() - t0)
    start, context, end, record = (Latency.of_seconds(s) for s in (starts, contexts, ends, records))
    result.figures = [
        Figure("start p50", start.p50, "ms"),
        Figure("start / bare context p50", start.p50 / context.p50, "x"),
        Figure("end p50 (40 events, 1 note)", end.p50, "ms"),
        Figure("end / recording its 40 events p50", end.p50 / record.p50, "x"),
    ]
    result.tables.append(Table("per session", LATENCY_HEADERS, [
        context.row("GET /memory/context (bare)"), start.row("POST /memory/session/start"),
        record.row(f"POST /memory/journal ({EVENTS} events)"),
        end.row("POST /memory/session/end")]))  # fmt: skip
    timings = {"start": start, "context": context, "end": end, "record": record}
    result.details = {k: v.to_json() for k, v in timings.items()}
    return result
