"""pg_store: the PostgreSQL index store beside the SQLite one, same questions, same machine.

Two things decide whether a tier can move to PostgreSQL: that it finds the same
evidence (LoCoMo dev budgeted recall, through ``locomo_inprocess.py`` with
``store=pgserver``, sparse and, unless ``--quick``, hybrid), and what a search
costs (p50 of BM25 searches through each store's ``search`` at 10k chunks, in
process: the store and its SQL, no HTTP). PostgreSQL is a throwaway cluster
(``pgserver``) on this machine, over a Unix socket; the two stores are timed
interleaved, query by query, so a busy machine slows them alike.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.corpus import Replicator, source_files
from bench.latency import _queries
from bench.locomo_data import subprocess_env
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.index import indexer
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.index.store import IndexStore
from sidecar.retrieval import query
from sidecar.retrieval.ranking import search_store
from sidecar.stores import open_store

NAME = "pg_store"
SIZE = 10_000
LIMIT = 10
WARMUP = 20
RECALL_GAP = at_most(0.02, "<= 0.02")


def locomo_recall(ctx: Context, store: str, mode: str, out: Path) -> float:
    """Dev-split budgeted recall of the in-process retriever on one store."""
    cmd = [
        sys.executable, str(ctx.locomo().script), "--split", "dev",
        "--retriever", "bench/locomo_inprocess.py:factory", "--out", str(out),
        "--arg", f"mode={mode}", "--arg", f"store={store}",
    ]  # fmt: skip
    done = subprocess.run(
        cmd, cwd=ctx.repo, env=subprocess_env(ctx.repo), capture_output=True, text=True,
        timeout=3600, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"locomo_eval.py {store} {mode}: {done.stderr[-800:]}")
    return float(json.loads(out.read_text())["summary"]["dev"]["recall_budget"])


def pg_cluster(base: Path) -> Any:
    """A throwaway PostgreSQL cluster under ``base`` (``cleanup()`` stops it)."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in containers
        warnings.simplefilter("ignore")
        import pgserver
    base.chmod(0o755)  # run as root, pgserver runs PostgreSQL as a user of its own
    return pgserver.get_server(base / "pg", cleanup_mode="delete")


def build(store: IndexStore, root: Path) -> float:
    started = time.monotonic()
    store.replace_all(indexer.load_tree(root, DEFAULT_MAX_CHARS))
    store.optimize()
    return time.monotonic() - started


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "PostgreSQL store beside SQLite: LoCoMo recall, search p50")
    loc = ctx.locomo()
    modes = ["sparse"] if ctx.quick else ["sparse", "hybrid"]
    rows: list[list[str]] = []
    with ctx.tempdir(NAME) as tmp:
        for mode in modes:
            progress(NAME, f"LoCoMo dev, {mode}, both stores")
            lite = locomo_recall(ctx, "", mode, tmp / f"sqlite-{mode}.json")
            pg = locomo_recall(ctx, "pgserver", mode, tmp / f"pg-{mode}.json")
            rows.append([mode, f"{lite:.3f}", f"{pg:.3f}", f"{pg - lite:+.3f}"])
            result.details[f"recall_{mode}"] = {"sqlite": lite, "postgresql": pg}
            result.figures.append(
                Figure(f"LoCoMo dev {mode}: |PostgreSQL - SQLite| recall", abs(pg - lite),
                       digits=3, target=RECALL_GAP, note=f"{pg:.3f} vs {lite:.3f}")
            )  # fmt: skip
        result.tables.append(Table("LoCoMo dev budgeted recall", ["mode", "SQLite",
                                   "PostgreSQL", "difference"], rows))  # fmt: skip

        replicator = Replicator(source_files(loc.dev_corpora()), tmp / "corpus")
        grown = replicator.grow_to(SIZE)
        progress(NAME, f"{grown.chunks:,} chunks in {grown.files:,} files; indexing both")
        pg_base = Path(tempfile.mkdtemp(prefix="sidecar-bench-pg-"))
        server = pg_cluster(pg_base)
        stores = {
            "SQLite": open_store(tmp / "index.sqlite", "unused"),
            "PostgreSQL": open_store(server.get_uri(), "bench/pg_store"),
        }
        try:
            build_s = {name: build(s, replicator.root) for name, s in stores.items()}
            planned = [p for p in (query.plan(q) for q in _queries(ctx, loc, SIZE)) if p]
            samples: dict[str, list[float]] = {name: [] for name in stores}
            for k, plan in enumerate(planned):
                for name, store in stores.items():
                    started = time.perf_counter()
                    search_store(store, plan, LIMIT)
                    if k >= WARMUP:
                        samples[name].append(time.perf_counter() - started)
            lat = {name: Latency.of_seconds(s) for name, s in samples.items()}
            chunks = stores["PostgreSQL"].stats().total_chunks
        finally:
            for store in stores.values():
                store.close()
            server.cleanup()
            shutil.rmtree(pg_base, ignore_errors=True)
    result.tables.append(
        Table(f"BM25 search at {chunks:,} chunks, in process (top {LIMIT})",
              [*LATENCY_HEADERS, "build s"],
              [[*lat[name].row(name), f"{build_s[name]:.1f}"] for name in lat])
    )  # fmt: skip
    for name in lat:
        result.figures.append(Figure(f"search p50 at {chunks:,} chunks, {name}",
                                     lat[name].p50, "ms"))  # fmt: skip
    result.details["latency"] = {name: lt.to_json() for name, lt in lat.items()}
    result.details["build_s"] = build_s
    result.notes.append(
        "PostgreSQL computes FTS5's BM25 (same k1, b, column weights) from a postings "
        "table in SQL; its stems are Snowball English where SQLite's are Porter"
    )
    return result
