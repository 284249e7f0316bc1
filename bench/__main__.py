"""Run the benchmark suite: ``python -m bench --locomo DIR [--only NAME ...] [--quick]``.

Prints one figures table per benchmark (target and status beside each figure)
and writes everything to bench-results/latest.json. Exits 1 only when a
benchmark crashed; a missed target is a measurement, not a failure. A
benchmark whose data is absent (no LoCoMo folder) is skipped with one line
saying what is missing, and the others still run.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType

from bench import registry
from bench.context import REPO, Context
from bench.harness import run_one, write_json
from bench.report import BenchResult, render, render_summary

BENCHMARKS = registry.load()


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    ctx = Context(locomo_dir=args.locomo.resolve(), quick=args.quick, full=args.full)
    names = list(dict.fromkeys(args.only)) if args.only else list(BENCHMARKS)
    results: list[BenchResult] = []
    for name in names:
        result = run_one(BENCHMARKS[name], ctx)
        results.append(result)
        print(render(result) + "\n", flush=True)
    print(render_summary(results))
    write_json(args.out, args.quick, args.full, results)
    print(f"\nresults written to {args.out}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
