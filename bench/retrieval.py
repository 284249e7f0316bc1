"""locomo: retrieval quality, budgeted evidence recall on the LoCoMo dev split.

``locomo_eval.py`` (from the --locomo folder) runs against the real daemon over
HTTP with the in-process embedder, once in its default (hybrid) mode and once
with ``mode=sparse``; in process through ``bench/locomo_inprocess.py`` in each
of its modes (sparse, dense, naive RRF, the shipped hybrid), so the README's
comparison of fusions reproduces from the product's own code; and with the
script's own plain-FTS5 baseline (``fts5-chunks-porter``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.locomo_data import subprocess_env
from bench.report import BenchResult, Figure, Table, at_least, progress

NAME = "locomo"
DESCRIPTION = "retrieval quality on LoCoMo dev (budgeted recall)"
TARGET = at_least(0.76, ">= 0.76")
# Hybrid may not lose more than this on any category against sparse-only.
CATEGORY_TARGET = at_least(-0.02, ">= -0.02")
README_BASELINE = 0.679  # plain FTS5 over porter chunks, from the folder's README
BUDGET = 2000
CATEGORIES = ("1-multi-hop", "2-temporal", "3-open-domain", "4-single-hop")
EVAL_TIMEOUT_S = 600
# hybrid is the first to embed: it fills the vector cache the next two look up
INPROCESS_MODES = ("sparse", "hybrid", "dense", "rrf")
EMBED_THREADS = 2


@dataclass(frozen=True, slots=True)
class EvalRun:
    label: str
    retriever: str
    dev: dict[str, Any]  # the script's summary of the dev split
    seconds: float

    def recall(self) -> float:
        return float(self.dev["recall_budget"])

    def r5(self) -> float:
        return float(self.dev["r5"])

    def row(self) -> list[str]:
        cats = self.dev.get("by_category", {})
        return [
            self.label,
            str(self.dev["n"]),
            f"{self.recall():.3f}",
            f"{self.r5():.3f}",
            *(f"{cats[c]['recall_budget']:.3f}" if c in cats else "-" for c in CATEGORIES),
            f"{self.dev['p50_ms']:.2f}",
            f"{self.dev['index_s']:.2f}",
        ]


def _run_eval(ctx: Context, python: list[str], label: str, args: list[str], out: Path) -> EvalRun:
    script = ctx.locomo().script
    cmd = [
        *python,
        str(script),
        *args,
        "--split",
        "dev",
        "--budget",
        str(BUDGET),
        "--out",
        str(out),
    ]
    progress(NAME, f"running locomo_eval.py ({label})")
    started = time.monotonic()
    done = subprocess.run(
        cmd,
        cwd=ctx.repo,
        env=subprocess_env(ctx.repo),
        capture_output=True,
        text=True,
        timeout=EVAL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).splitlines()[-10:])
        raise RuntimeError(f"locomo_eval.py ({label}) exited {done.returncode}:\n{tail}")
    data = json.loads(out.read_text(encoding="utf-8"))
    return EvalRun(label, data["retriever"], data["summary"]["dev"], time.monotonic() - started)


def _http_runs(ctx: Context, python: list[str], tmp: Path) -> tuple[EvalRun, EvalRun]:
    """The daemon's default (hybrid) and sparse-only rankings, from one daemon."""
    agent = tmp / "agent"
    with ctx.daemon(agent, tmp, embedder="minilm") as daemon:
        args = ["--http", daemon.url, "--memory-dir", str(agent), "--force",
                "--index-timeout", "900"]  # fmt: skip
        hybrid = _run_eval(ctx, python, "daemon, hybrid", args, tmp / "http.json")
        sparse_args = [*args, "--search-extra", json.dumps({"mode": "sparse"})]
        sparse = _run_eval(ctx, python, "daemon, sparse", sparse_args, tmp / "sparse.json")
    return hybrid, sparse


def _worst_category(hybrid: EvalRun, sparse: EvalRun) -> tuple[float, str]:
    """Hybrid minus sparse on the category where hybrid does worst."""
    h, s = hybrid.dev.get("by_category", {}), sparse.dev.get("by_category", {})
    deltas = [(h[c]["recall_budget"] - s[c]["recall_budget"], c) for c in CATEGORIES
              if c in h and c in s]  # fmt: skip
    return min(deltas) if deltas else (float("nan"), "-")


def _inprocess_runs(ctx: Context, python: list[str], tmp: Path) -> dict[str, EvalRun]:
    """The in-process retriever in every mode; the first embedding run fills a vector
    cache that the others look up."""
    spec = f"{ctx.repo / 'bench' / 'locomo_inprocess.py'}:factory"
    runs: dict[str, EvalRun] = {}
    for mode in INPROCESS_MODES:
        args = ["--retriever", spec, "--corpus-dir", str(tmp / "corpus"), "--arg",
                f"mode={mode}", "--arg", f"vector_cache={tmp / 'vectors'}"]  # fmt: skip
        if mode != "sparse":
            args += ["--arg", f"threads={EMBED_THREADS}"]
        runs[mode] = _run_eval(ctx, python, f"in-process, {mode}", args, tmp / f"{mode}.json")
    return runs


def _figures(http: EvalRun, sparse: EvalRun, inproc: dict[str, EvalRun], base: EvalRun
             ) -> list[Figure]:  # fmt: skip
    worst, category = _worst_category(http, sparse)
    return [
        Figure(
            f"HTTP hybrid budgeted recall@{BUDGET}",
            http.recall(),
            digits=3,
            target=TARGET,
            note=f"plain FTS5 baseline {README_BASELINE} (README)",
        ),
        Figure("HTTP hybrid R@5", http.r5(), digits=3),
        Figure(f"HTTP sparse-only budgeted recall@{BUDGET}", sparse.recall(), digits=3),
        Figure("hybrid gain over sparse-only", http.recall() - sparse.recall(), digits=3),
        Figure(
            "hybrid minus sparse, worst category",
            worst,
            digits=3,
            target=CATEGORY_TARGET,
            note=category,
        ),
        Figure(f"in-process sparse budgeted recall@{BUDGET}", inproc["sparse"].recall(), digits=3),
        Figure(f"in-process dense-only recall@{BUDGET}", inproc["dense"].recall(), digits=3),
        Figure(
            f"in-process naive RRF recall@{BUDGET}",
            inproc["rrf"].recall(),
            digits=3,
            note="k = 60 over each leg's top 20",
        ),
        Figure(f"in-process hybrid recall@{BUDGET}", inproc["hybrid"].recall(), digits=3),
        Figure(
            f"plain FTS5 baseline recall@{BUDGET}",
            base.recall(),
            digits=3,
            note="fts5-chunks-porter, measured in this run",
        ),
        Figure("HTTP recall gain over baseline", http.recall() - base.recall(), digits=3),
    ]


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, f"retrieval quality on LoCoMo dev, budget {BUDGET} chars")
    ctx.locomo()  # skipped before starting anything if the folder is incomplete
    python = [sys.executable]
    with ctx.tempdir(NAME) as tmp:
        http, sparse = _http_runs(ctx, python, tmp)
        inproc = _inprocess_runs(ctx, python, tmp)
        base = _run_eval(
            ctx,
            python,
            "plain FTS5 baseline",
            ["--retriever", "fts5-chunks-porter", "--corpus-dir", str(tmp / "corpus")],
            tmp / "base.json",
        )
    runs = [http, sparse, *inproc.values(), base]
    result.figures = _figures(http, sparse, inproc, base)
    headers = [
        "retriever",
        "n",
        "recall@B",
        "R@5",
        "multi-hop",
        "temporal",
        "open-dom",
        "single-hop",
        "p50 ms/q",
        "index s",
    ]
    result.tables.append(Table("per category (budgeted recall)", headers, [r.row() for r in runs]))
    result.notes.append(f"locomo_eval.py run with: {' '.join(python)}")
    result.notes.append("HTTP p50 ms/q is the eval script's (urllib, a new connection per query)")
    for daemon, mode in ((sparse, "sparse"), (http, "hybrid")):
        if abs(daemon.recall() - inproc[mode].recall()) > 1e-9:
            result.notes.append(
                f"HTTP and in-process {mode} recall differ: the daemon ranks differently "
                "from the library it wraps"
            )
    result.details = {
        r.label: {"retriever": r.retriever, "seconds": round(r.seconds, 2), "dev": r.dev}
        for r in runs
    }
    return result
