"""What every benchmark run shares: timing one benchmark, turning its failure or absent
data into a result, and the results file with the run's date and machine."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sqlite3
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.locomo_data import LocomoMissing
from bench.registry import Benchmark
from bench.report import BenchResult, progress


def run_one(bench: Benchmark, ctx: Context) -> BenchResult:
    progress(bench.name, "start")
    started = time.monotonic()
    try:
        result = bench.run(ctx)
    except LocomoMissing as exc:  # its data is absent: skipped, not failed
        result = BenchResult(bench.name, bench.description, skipped=str(exc))
    except Exception as exc:
        progress(bench.name, "FAILED\n" + traceback.format_exc())
        result = BenchResult(bench.name, bench.description, error=f"{type(exc).__name__}: {exc}")
    result.seconds = time.monotonic() - started
    return result


def machine() -> dict[str, Any]:
    """Where the figures were taken; the load average says how much else ran meanwhile."""
    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(path: Path, quick: bool, full: bool, results: list[BenchResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "full": full,
        "machine": machine(),
        "results": [r.to_json() for r in results],
    }
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
