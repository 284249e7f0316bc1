"""crossval: leave-one-conversation-out validation of retrieval constants on LoCoMo dev.

Every tuned constant is a choice made by looking at the five dev conversations. Here
each choice is made again five times, each time on four conversations only, and
scored on the fifth: the cross-validated figure is what a choice is worth on a
conversation it was not made on. A change that raises the plain dev figure but not
this one fitted the dev data and is to be reverted.

Grids, through ``bench/locomo_inprocess.py`` (the sidecar's own chunker, store and
fusion): the chunk cap, the neighbouring text indexed as each chunk's context and its
BM25 weight, the dense share ALPHA, what a chunk saying when gains for a question
asking when and what a chunk holding a line said by someone the question names gains
(hybrid, the shipped ranking; the last two also sparse); the chunker's
target fraction and its lead-in rule (sparse, where they act alone). The plain FTS5 chunk
baseline of the evaluation script goes through the same protocol (it has nothing to
choose, so its figure is its dev figure).

Reproduce one cell: ``python ../shared/bench/locomo/locomo_eval.py --split dev
--retriever bench/locomo_inprocess.py:factory --arg mode=sparse --arg max_chars=400
--samples 2``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.locomo_data import subprocess_env
from bench.report import BenchResult, Figure, Table, progress

NAME = "crossval"
DESCRIPTION = "leave-one-conversation-out validation on LoCoMo dev"
SAMPLES = (0, 1, 2, 3, 4)
RETRIEVER = "bench/locomo_inprocess.py:factory"
GRIDS: dict[str, tuple[str, list[str], str, dict[str, str]]] = {
    # name: (parameter, values, shipped value, fixed args)
    "chunk cap (hybrid)": (
        "max_chars",
        ["325", "400", "450", "550", "650"],
        "400",
        {"mode": "hybrid"},
    ),
    "context either side of a chunk, characters (hybrid; 0 = none)": (
        "context_chars",
        ["0", "200", "400", "600"],
        "400",
        {"mode": "hybrid"},
    ),
    "BM25 weight of the context (hybrid)": (
        "context_weight",
        ["0.25", "0.5", "1.0"],
        "0.5",
        {"mode": "hybrid"},
    ),
    "BM25 weight of the context (sparse)": (
        "context_weight",
        ["0.25", "0.5", "1.0"],
        "0.25",
        {"mode": "sparse"},
    ),
    "chunk target, fraction of the cap (sparse)": (
        "target",
        ["0.6", "0.8", "1.0"],
        "0.8",
        {"mode": "sparse"},
    ),
    "cost of a cut after a lead-in line (sparse; 0 = no rule)": (
        "lead_in_cost",
        ["0", "1.5", "3"],
        "1.5",
        {"mode": "sparse"},
    ),
    "dense share ALPHA (hybrid)": ("alpha", ["0.3", "0.5", "0.7"], "0.5", {"mode": "hybrid"}),
    "share of the best score a chunk saying when gains, asked when (hybrid; 0 = none)": (
        "when_share",
        ["0", "0.05", "0.1", "0.2"],
        "0.1",
        {"mode": "hybrid"},
    ),
    "share of the best score a chunk saying when gains, asked when (sparse; 0 = none)": (
        "when_share",
        ["0", "0.05", "0.1", "0.2"],
        "0.1",
        {"mode": "sparse"},
    ),
    "share of the best score a chunk holding a line by someone the question names gains "
    "(hybrid; 0 = none)": (
        "speaker_share",
        ["0", "0.05", "0.1", "0.2"],
        "0.1",
        {"mode": "hybrid"},
    ),
    "share of the best score a chunk holding a line by someone the question names gains "
    "(sparse; 0 = none)": (
        "speaker_share",
        ["0", "0.05", "0.1", "0.2"],
        "0.1",
        {"mode": "sparse"},
    ),
}
BASELINE = "fts5-chunks-porter"
CATEGORIES = ("1-multi-hop", "2-temporal", "3-open-domain", "4-single-hop")


def evaluate(
    ctx: Context, retriever: str, args: dict[str, str], sample: int, out: Path
) -> dict[str, Any]:
    """One conversation's summary (n, recall_budget, by_category)."""
    cmd = [
        sys.executable,
        str(ctx.locomo().script),
        "--split",
        "dev",
        "--samples",
        str(sample),
        "--retriever",
        retriever,
        "--out",
        str(out),
    ]
    for key, value in args.items():
        cmd += ["--arg", f"{key}={value}"]
    done = subprocess.run(
        cmd,
        cwd=ctx.repo,
        env=subprocess_env(ctx.repo),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"locomo_eval.py {args} sample {sample}: {done.stderr[-800:]}")
    return dict(json.loads(out.read_text())["summary"]["dev"])


def loo(scores: dict[str, dict[int, dict[str, Any]]]) -> tuple[float, dict[int, str]]:
    """The cross-validated recall, and the value each held-out conversation's four others
    chose (ties go to the earlier value in the grid)."""
    total = weight = 0.0
    picks: dict[int, str] = {}
    for held in SAMPLES:

        def on_others(value: str, held: int = held) -> float:
            rows = [scores[value][s] for s in SAMPLES if s != held]
            return sum(r["recall_budget"] * r["n"] for r in rows) / sum(r["n"] for r in rows)

        best = max(scores, key=on_others)
        picks[held] = best
        row = scores[best][held]
        total += row["recall_budget"] * row["n"]
        weight += row["n"]
    return total / weight, picks


def plain(rows: dict[int, dict[str, Any]]) -> float:
    return sum(r["recall_budget"] * r["n"] for r in rows.values()) / sum(
        r["n"] for r in rows.values()
    )


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "leave-one-conversation-out validation on LoCoMo dev")
    ctx.locomo()
    with ctx.tempdir(NAME) as tmp:
        cache = tmp / "vectors"  # hybrid runs embed each conversation once
        base = {s: evaluate(ctx, BASELINE, {}, s, tmp / f"base-{s}.json") for s in SAMPLES}
        result.figures.append(
            Figure(f"{BASELINE} baseline, dev = cross-validated", plain(base), digits=3)
        )
        for title, (param, values, shipped, fixed) in GRIDS.items():
            progress(NAME, f"{title}: {len(values)} values x {len(SAMPLES)} conversations")
            scores: dict[str, dict[int, dict[str, Any]]] = {}
            for value in values:
                args = {**fixed, param: value}
                if fixed.get("mode") == "hybrid":
                    args |= {"vector_cache": str(cache), "threads": "2"}
                scores[value] = {
                    s: evaluate(ctx, RETRIEVER, args, s, tmp / f"{param}-{value}-{s}.json")
                    for s in SAMPLES
                }
            cv, picks = loo(scores)
            result.figures += [
                Figure(
                    f"{title}: shipped {param}={shipped}, plain dev",
                    plain(scores[shipped]),
                    digits=3,
                ),
                Figure(
                    f"{title}: cross-validated (each conversation scored with the value "
                    "its four others chose)",
                    cv,
                    digits=3,
                    note="picks " + ", ".join(f"{s}:{v}" for s, v in picks.items()),
                ),
            ]
            rows = [
                [
                    f"{param}={v}",
                    *(f"{scores[v][s]['recall_budget']:.3f}" for s in SAMPLES),
                    f"{plain(scores[v]):.3f}",
                ]
                for v in values
            ]
            rows.append(
                [
                    BASELINE,
                    *(f"{base[s]['recall_budget']:.3f}" for s in SAMPLES),
                    f"{plain(base):.3f}",
                ]
            )
            result.tables.append(
                Table(
                    f"{title}: budgeted recall by conversation",
                    ["value", *(f"conv {s}" for s in SAMPLES), "dev"],
                    rows,
                )
            )
            picked = {s: scores[picks[s]][s] for s in SAMPLES}  # what the folds chose
            result.tables.append(
                Table(
                    f"{title}: by category, cross-validated choice vs {BASELINE}",
                    ["category", "cross-validated", BASELINE, "difference"],
                    [
                        [c, f"{mine:.3f}", f"{theirs:.3f}", f"{mine - theirs:+.3f}"]
                        for c in CATEGORIES
                        for mine, theirs in [(by_category(picked, c), by_category(base, c))]
                    ],
                )
            )
    return result


def by_category(rows: dict[int, dict[str, Any]], category: str) -> float:
    """A category's recall over the conversations, weighted by its questions in each."""
    parts = [r["by_category"][category] for r in rows.values() if category in r["by_category"]]
    return sum(p["recall_budget"] * p["n"] for p in parts) / max(1, sum(p["n"] for p in parts))
