"""hooks: what a Claude Code hook costs the agent, process start included.

Each sample runs ``python -m sidecar hook <event>`` as the harness does (a new process,
the recorded payload on stdin) and waits for it to exit. With the daemon up, over a
2 MB agent tier; with it down (nothing listening on the port), where session start
builds the block from the files. The bare baseline is the same interpreter starting
and exiting (``python -c pass``), measured in the same run: a hook's floor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.daemon import free_port
from bench.prompt_block import DAILY_FILES, write_tier
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "hooks"
DESCRIPTION = "harness hooks: latency with process start, daemon up and down"
PAYLOADS = Path(__file__).resolve().parent.parent / "tests" / "harness_payloads"
EVENTS = {
    "session-start": "session_start.json",
    "user-prompt": "user_prompt.json",
    "post-tool-use": "post_tool_use_bash.json",
    "stop": "stop.json",
}
BUDGET_MS = 1000.0  # a hook with the daemon down, slow or refusing: the target


def _timed(argv: list[str], data: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, input=data, capture_output=True, env=env, timeout=30)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr[-500:]!r}")
    return took


def _hooks(env: dict[str, str], n: int, what: str) -> dict[str, Latency]:
    """Each event's samples, and the bare start's, taken in turns: on a shared machine
    the load moves, and the ratio must compare like with like."""
    payloads = {event: json.loads((PAYLOADS / name).read_text()) for event, name in EVENTS.items()}
    took: dict[str, list[float]] = {"bare": [], **{event: [] for event in EVENTS}}
    for k in range(n):
        took["bare"].append(_timed([sys.executable, "-c", "pass"], b"", env))
        for event, body in payloads.items():  # a new session each round, as in real use
            data = json.dumps({**body, "session_id": f"bench-{what}-{k}"}).encode()
            argv = [sys.executable, "-m", "sidecar", "hook", event]
            took[event].append(_timed(argv, data, env))
    out = {name: Latency.of_seconds(samples) for name, samples in took.items()}
    progress(NAME, f"{what}: " + ", ".join(f"{k} p50 {v.p50:.0f} ms" for k, v in out.items()))
    return out


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "hook latency with process start, daemon up and down")
    n = 15 if ctx.quick else 60
    with ctx.tempdir(NAME) as tmp:
        agent, crew = tmp / "agent", tmp / "crew"
        write_tier(agent, "AGENT.md", 1)
        write_tier(crew, "CREW.md", 2)
        base = {**os.environ, "SIDECAR_AGENT_DIR": str(agent), "SIDECAR_CREW_DIR": str(crew),
                "SIDECAR_HOOK_LOG": str(tmp / "hooks.log")}  # fmt: skip
        with ctx.daemon(agent, tmp, crew) as daemon:
            daemon.wait_indexed(DAILY_FILES + 1, timeout=300)
            up = _hooks({**base, "SIDECAR_URL": daemon.url}, n, "up")
        log = tmp / "hooks.log"
        # With the daemon up, a line is a request that missed its deadline (a loaded machine)
        missed = log.read_text().count("\n") if log.exists() else 0
        down = _hooks({**base, "SIDECAR_URL": f"http://127.0.0.1:{free_port()}"}, n, "down")
        logged = log.read_text().count("\n") - missed
    budget = at_most(BUDGET_MS, f"<= {BUDGET_MS:.0f} ms")
    hooks_down = [v for k, v in down.items() if k != "bare"]
    result.figures = [
        Figure("bare interpreter start p50, daemon up phase", up["bare"].p50, "ms"),
        Figure("post-tool-use p50, daemon up", up["post-tool-use"].p50, "ms"),
        Figure("post-tool-use p99, daemon up", up["post-tool-use"].p99, "ms"),
        Figure("post-tool-use p50 / bare start", up["post-tool-use"].p50 / up["bare"].p50, "x"),
        Figure("hooks that missed the deadline, daemon up", missed, digits=0),
        Figure("session-start p50, daemon up", up["session-start"].p50, "ms"),
        Figure("session-start p99, daemon up", up["session-start"].p99, "ms"),
        Figure("user-prompt p99, daemon up", up["user-prompt"].p99, "ms"),
        Figure("post-tool-use p99, daemon down", down["post-tool-use"].p99, "ms", target=budget),
        Figure(
            "session-start p99, daemon down (offline block)",
            down["session-start"].p99,
            "ms",
            target=budget,
        ),
        Figure(
            "session-start p50 / bare start, daemon down",
            down["session-start"].p50 / down["bare"].p50,
            "x",
        ),
        Figure("worst p99, daemon down", max(v.p99 for v in hooks_down), "ms", target=budget),
    ]
    rows = [lat.row(f"{event}, daemon up") for event, lat in up.items()]
    rows += [lat.row(f"{event}, daemon down") for event, lat in down.items()]
    result.tables.append(
        Table("one process, start to exit (bare: python -c pass)", LATENCY_HEADERS, rows)
    )
    details: dict[str, Any] = {"log_lines_daemon_up": missed, "log_lines_daemon_down": logged}
    details |= {f"up_{e}": lat.to_json() for e, lat in up.items()}
    details |= {f"down_{e}": lat.to_json() for e, lat in down.items()}
    result.details = details
    return result
