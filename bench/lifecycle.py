"""lifecycle: a year of daily logs (400 of ~30 KB, 12 MB) archived by the maintenance
engine: how long the pass takes, the bytes before and after, and what the archive costs
an ordinary search.

The logs are written by ``NoteWriter`` (a Zipf-like vocabulary) and indexed by a first
daemon that keeps them all (a retention longer than the year). A second daemon on the
same folder starts with the default 30-day window: its first pass, timed by the engine
itself, archives 370 logs on a warm index. Search p50 is then taken over HTTP against
that tier (30 active logs and 12 MB of archive, which an ordinary search leaves out: it
is indexed apart, searched only with ``archive: true``) and against a copy
of its active logs alone (the bare baseline), queries interleaved one by one so a busy
machine slows both alike. Ordinary searches are about recent work: each query is a few
words of a line from the last 30 days.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.daemon import Daemon
from bench.notes import NoteWriter
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "lifecycle"
DESCRIPTION = "a year of daily logs archived; search with archive vs without"
DAYS, LOG_BYTES = 400, 30_000
RETENTION = 30
RATIO_TARGET = at_most(1.10, "<= 1.10x")  # the issue: the archive slows search <= 10%
WARMUP = 20


def lay_year(agent: Path, days: int, writer: NoteWriter) -> list[str]:
    """``days`` daily logs ending yesterday; the lines of the last ``RETENTION`` days."""
    (agent / "daily").mkdir(parents=True, exist_ok=True)
    today = dt.datetime.now(dt.UTC).date()
    recent: list[str] = []
    for offset in range(1, days + 1):
        day = (today - dt.timedelta(days=offset)).isoformat()
        lines, size = [f"# {day}\n"], 0
        while size < LOG_BYTES:
            line = f"- {' '.join(writer.words(writer.rng.randint(6, 14)))}\n"
            lines.append(line)
            size += len(line)
        (agent / "daily" / f"{day}.md").write_text("".join(lines))
        if offset <= RETENTION:
            recent += lines[1:]
    return recent


def _pass(daemon: Daemon, timeout: float = 600.0) -> dict[str, Any]:
    """The first maintenance pass's record, once it is done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, status = daemon.client.json("GET", "/memory/status?scope=agent")
        lc = status.get("lifecycle") or {}
        if lc.get("last_run") is not None:
            return dict(status)
        time.sleep(0.05)
    raise RuntimeError(f"no maintenance pass within {timeout} s; log:\n{daemon.log_tail()}")


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "a year of daily logs archived; search with the archive vs without")
    days = 120 if ctx.quick else DAYS
    writer = NoteWriter(seed=31)
    with ctx.tempdir(NAME) as tmp:
        agent, bare = tmp / "agent", tmp / "bare"
        recent = lay_year(agent, days, writer)
        keep_all = ["--embedder", "none", "--daily-retention-days", "100000"]
        with Daemon(agent, tmp / "crew", tmp / "index.log", extra_args=keep_all) as d:
            d.wait_ready()
            d.wait_indexed(days, timeout=900.0)
        progress(NAME, f"{days} logs indexed; archiving")
        log = tmp / "daemon.log"
        with Daemon(agent, tmp / "crew", log, extra_args=["--embedder", "none"]) as daemon:
            daemon.wait_ready()
            before = _pass(daemon)
            lc = before["lifecycle"]
            daemon.wait_indexed(timeout=900.0)
            shutil.copytree(agent / "daily", bare / "daily")  # the same active tier, bare
            with Daemon(bare, tmp / "crew2", tmp / "bare.log",
                        extra_args=["--embedder", "none"]) as baseline:  # fmt: skip
                baseline.wait_ready()
                baseline.wait_indexed(timeout=900.0)
                queries = _queries(recent, writer, 200 if ctx.quick else 600)
                timed = _interleaved(daemon, baseline, queries)
    run_ = lc["last_run"]
    daily = run_["steps"]["daily"]
    archived, asked, bare_p = (Latency.of_seconds(timed[k]) for k in ("archive", "asked", "bare"))
    ratio = archived.p50 / bare_p.p50
    result.figures += [
        Figure(f"maintenance pass, {daily['archived']} logs archived", run_["duration_s"], "s"),
        Figure("active bytes before", run_["active_bytes_before"] / 1e6, "MB"),
        Figure("active bytes after", run_["active_bytes_after"] / 1e6, "MB"),
        Figure("archived bytes after", run_["archived_bytes"] / 1e6, "MB"),
        Figure("search p50 with the archive", archived.p50, "ms"),
        Figure("search p50, same active tier, no archive", bare_p.p50, "ms"),
        Figure("search p50 ratio (archive / none)", ratio, "x", target=RATIO_TARGET),
        Figure("search p50 asking for the archive too", asked.p50, "ms"),
    ]
    result.tables.append(
        Table(
            "search latency over HTTP",
            LATENCY_HEADERS,
            [archived.row("with archive"), asked.row("archive: true"), bare_p.row("no archive")],
        )
    )
    result.notes.append(
        f"{days} logs of ~{LOG_BYTES // 1000} KB; retention {RETENTION} days; "
        f"{len(queries)} queries from recent lines, interleaved; the archive is indexed apart and "
        "searched only when asked (archive: true)"
    )
    return result


def _queries(recent: list[str], writer: NoteWriter, n: int) -> list[str]:
    """A few words of a recent line each: what an agent searches for about its work."""
    out = []
    for _ in range(n):
        words = writer.rng.choice(recent)[2:].split()
        k = min(len(words), writer.rng.randint(2, 4))
        start = writer.rng.randrange(0, len(words) - k + 1)
        out.append(" ".join(words[start : start + k]))
    return out


def _interleaved(archive: Daemon, bare: Daemon, queries: list[str]) -> dict[str, list[float]]:
    """Each query on the tier with its archive (as searches ask by default, and asking for
    the archive too) and on the bare tier, in a rotating order."""
    legs = {"archive": (archive, False), "asked": (archive, True), "bare": (bare, False)}
    samples: dict[str, list[float]] = {name: [] for name in legs}
    order = list(legs)
    for i, q in enumerate(queries):
        for name in order[i % 3 :] + order[: i % 3]:
            daemon, asked = legs[name]
            body = json.dumps({"query": q, "limit": 10, "scope": "agent", "archive": asked})
            started = time.perf_counter()
            code, raw = daemon.client.raw("POST", "/memory/search", body.encode())
            if i >= WARMUP:
                samples[name].append(time.perf_counter() - started)
            assert code == 200, raw[:200]
    return samples
