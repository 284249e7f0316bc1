"""Run the benchmark suite: ``python -m bench --locomo DIR [--only NAME ...] [--quick]``.

Prints one figures table per benchmark (target and status beside each figure)
and writes everything to bench-results/latest.json. Exits 1 only when a
benchmark crashed; a missed target is a measurement, not a failure. A
benchmark whose data is absent (no LoCoMo folder) is skipped with one line
saying what is missing, and the others still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import sqlite3
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from bench import (
    cold_start,
    crew,
    crossval,
    dense,
    embed_lead,
    extraction,
    facts,
    freshness,
    heldout,
    hooks,
    hybrid_speed,
    indexing,
    injection,
    journal_recall,
    journal_speed,
    latency,
    learnings,
    lifecycle,
    lifecycle_journal,
    memory,
    pg_failover,
    pg_store,
    prompt_block,
    retrieval,
    sessions,
    ui,
    writes,
)
from bench.context import REPO, Context
from bench.locomo_data import LocomoMissing
from bench.report import BenchResult, progress, render, render_summary

Benchmark = Callable[[Context], BenchResult]

BENCHMARKS: dict[str, tuple[Benchmark, str]] = {
    retrieval.NAME: (retrieval.run, "retrieval quality on LoCoMo dev (budgeted recall)"),
    crossval.NAME: (crossval.run, "leave-one-conversation-out validation on LoCoMo dev"),
    latency.NAME: (latency.run, "search latency at 10k/100k chunks vs bare FTS5"),
    hybrid_speed.NAME: (hybrid_speed.run, "hybrid vs sparse search p50 at 10k chunks"),
    indexing.NAME: (indexing.run, "full and incremental indexing of 2,000 notes"),
    cold_start.NAME: (cold_start.run, "cold start until searchable at 1k/10k(/50k) files vs bare"),
    freshness.NAME: (freshness.run, "time from a file write to searchable"),
    memory.NAME: (memory.run, "idle resident memory of the daemon"),
    writes.NAME: (writes.run, "durable append latency and throughput"),
    crew.NAME: (crew.run, "crew search through a member vs on the lead"),
    embed_lead.NAME: (embed_lead.run, "a member embedding through its lead: RSS, latency, load"),
    prompt_block.NAME: (prompt_block.run, "assembling the system-prompt memory block"),
    dense.NAME: (dense.run, "dense top-k over 100k vectors, embedding throughput"),
    injection.NAME: (injection.run, "injection scanner: caught per class, benign kept"),
    journal_speed.NAME: (journal_speed.run, "episodic journal: record, recall, rebuild, memory"),
    journal_recall.NAME: (journal_recall.run, "episodic recall on LoCoMo dev, restated facts"),
    learnings.NAME: (learnings.run, "learnings: ranking quality, search, write-back, compaction"),
    lifecycle_journal.NAME: (lifecycle_journal.run, "journal retention: one pass over 300 days"),
    facts.NAME: (facts.run, "facts: consolidation scenarios, apply step, retrieval, LLM cost"),
    extraction.NAME: (extraction.run, "learning extraction: LLM tokens per ended session"),
    heldout.NAME: (heldout.run, "held-out knowledge updates and lessons, written blind to ranking"),
    hooks.NAME: (hooks.run, "harness hooks: latency with process start, daemon up and down"),
    sessions.NAME: (sessions.run, "a session's start (with its block) and end (40 events)"),
    lifecycle.NAME: (
        lifecycle.run,
        "a year of daily logs archived; search with archive vs without",
    ),
    pg_store.NAME: (
        pg_store.run,
        "PostgreSQL store beside SQLite: LoCoMo recall, index and search at scale",
    ),
    ui.NAME: (ui.run, "memory inspector: first paint of /ui in headless Chromium, asset bytes"),
    pg_failover.NAME: (
        pg_failover.run,
        "two leads on one PostgreSQL crew namespace: kill the writer",
    ),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--locomo",
        type=Path,
        default=REPO.parent / "shared/bench/locomo",
        help="folder holding locomo_eval.py and locomo-dev.json",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(BENCHMARKS),
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--quick", action="store_true", help="smaller corpora, fewer samples")
    parser.add_argument(
        "--full", action="store_true", help="add the largest sizes (pg_store: 1M chunks; hours)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench-results" / "latest.json",
        help="JSON results file (default bench-results/latest.json)",
    )
    return parser.parse_args(argv)


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Turn SIGTERM into an exception so every finally block (daemon stop, temp dirs) runs;
    # a second one must not interrupt that cleanup.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def run_one(name: str, bench: Benchmark, ctx: Context) -> BenchResult:
    progress(name, "start")
    started = time.monotonic()
    try:
        result = bench(ctx)
    except LocomoMissing as exc:  # its data is absent: skipped, not failed
        result = BenchResult(name, BENCHMARKS[name][1], skipped=str(exc))
    except Exception as exc:
        progress(name, "FAILED\n" + traceback.format_exc())
        result = BenchResult(name, BENCHMARKS[name][1], error=f"{type(exc).__name__}: {exc}")
    result.seconds = time.monotonic() - started
    return result


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


def write_json(path: Path, args: argparse.Namespace, results: list[BenchResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "full": args.full,
        "machine": machine(),
        "results": [r.to_json() for r in results],
    }
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    ctx = Context(locomo_dir=args.locomo.resolve(), quick=args.quick, full=args.full)
    names = list(dict.fromkeys(args.only)) if args.only else list(BENCHMARKS)
    results: list[BenchResult] = []
    for name in names:
        result = run_one(name, BENCHMARKS[name][0], ctx)
        results.append(result)
        print(render(result) + "\n", flush=True)
    print(render_summary(results))
    write_json(args.out, args, results)
    print(f"\nresults written to {args.out}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
