"""cold_start: a real daemon started on an unindexed tier, until every file is searchable,
against the bare FTS5 loop over the same files in the same run.

Sidecar figure: seconds from spawning ``sidecar serve`` until ``/memory/status`` says
the tier holds every file and is no longer indexing, less the same on an empty tier
(the process start, imports and watcher probe that any start pays), each the median
of a few rounds. The index files are deleted before each round; the notes stay, warm
in the page cache for both sides. Sparse-only (``--embedder none``): vectors are a
separate background stage that starts once the text is searchable.
"""

from __future__ import annotations

import glob
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import bare_fts
from bench.context import Context
from bench.daemon import Daemon, DaemonError
from bench.notes import write_notes
from bench.report import BenchResult, Figure, Table, at_most, progress

NAME = "cold_start"
FILE_BYTES = 2_100  # ~105 MB at 50k files
SIZES_QUICK = (1_000, 10_000)
SIZES_FULL = (1_000, 10_000, 50_000)
RATIO_TARGET = at_most(2.0, "<= 2.0x")
POLL_S = 0.01
# Rounds per size: the figure is the difference of two medians of starts that each vary by
# a few tenths of a second, which at 1k files is the size of the figure itself.
ROUNDS = {1_000: 9, 10_000: 5, 50_000: 1}
SEED = 17


@dataclass(slots=True)
class SizeRuns:
    files: int
    corpus_bytes: int
    bare_s: list[float]
    empty_s: list[float]
    full_s: list[float]

    @property
    def bare(self) -> float:
        return statistics.median(self.bare_s)

    @property
    def sidecar(self) -> float:
        return statistics.median(self.full_s) - statistics.median(self.empty_s)

    @property
    def ratio(self) -> float:
        return self.sidecar / self.bare

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "corpus_bytes": self.corpus_bytes,
            "bare_s": [round(s, 4) for s in self.bare_s],
            "empty_start_s": [round(s, 4) for s in self.empty_s],
            "full_start_s": [round(s, 4) for s in self.full_s],
            "sidecar_s": round(self.sidecar, 4),
            "ratio": round(self.ratio, 3),
        }


def _drop_index(agent: Path) -> None:
    for path in glob.glob(str(agent / "index.sqlite*")):
        os.unlink(path)


def time_to_searchable(agent: Path, crew: Path, log: Path, files: int, timeout: float) -> float:
    """Seconds from spawning the daemon until its agent tier is indexed in full."""
    with Daemon(agent, crew, log, extra_args=["--embedder", "none"]) as daemon:
        deadline = daemon.started_at + timeout
        while time.monotonic() < deadline:
            daemon._check_alive()
            try:
                status = daemon.client.status()
            except (OSError, DaemonError):
                time.sleep(POLL_S)  # not listening yet
                continue
            if not status.get("indexing") and status.get("total_files") == files:
                return time.monotonic() - daemon.started_at
            time.sleep(POLL_S)
        raise DaemonError(f"{files} files not searchable within {timeout} s:\n{daemon.log_tail()}")


def time_bare(root: Path, db: Path) -> float:
    started = time.perf_counter()
    bare_fts.index_tree(db, root)
    return time.perf_counter() - started


def measure(tmp: Path, files: int, rounds: int) -> SizeRuns:
    notes = tmp / f"notes-{files}"
    size = write_notes(notes, files, files * FILE_BYTES, seed=SEED)
    empty = tmp / f"empty-{files}"
    crew = tmp / "crew"
    for path in (empty, crew):
        path.mkdir(parents=True, exist_ok=True)
    for rel in bare_fts.markdown_files(notes):  # warm: both sides read from the page cache
        (notes / rel).read_bytes()
    runs = SizeRuns(files, size.bytes, [], [], [])
    timeout = 60 + files / 100
    for i in range(rounds):
        progress(NAME, f"{files:,} files: round {i + 1} of {rounds}")
        runs.bare_s.append(time_bare(notes, tmp / f"bare-{files}-{i}.sqlite"))
        _drop_index(empty)
        runs.empty_s.append(time_to_searchable(empty, crew, tmp / "daemon.log", 0, timeout))
        _drop_index(notes)
        runs.full_s.append(time_to_searchable(notes, crew, tmp / "daemon.log", files, timeout))
        os.unlink(tmp / f"bare-{files}-{i}.sqlite")
    _drop_index(notes)
    return runs


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "cold start on an unindexed tier until searchable, vs bare FTS5")
    sizes = SIZES_QUICK if ctx.quick else SIZES_FULL
    all_runs: list[SizeRuns] = []
    with ctx.tempdir(NAME) as tmp:
        for files in sizes:
            all_runs.append(
                measure(tmp, files, min(ROUNDS[files], 3) if ctx.quick else ROUNDS[files])
            )
    rows = []
    for runs in all_runs:
        label = f"{runs.files // 1000}k files"
        result.figures.append(Figure(f"{label}: sidecar / bare", runs.ratio, "x", 2, RATIO_TARGET))
        result.figures.append(Figure(f"{label}: sidecar cold index", runs.sidecar, "s", 3))
        result.figures.append(Figure(f"{label}: bare FTS5 loop", runs.bare, "s", 3))
        rows.append([
            label, f"{runs.corpus_bytes / 1e6:.1f}", f"{runs.bare:.3f}",
            f"{statistics.median(runs.empty_s):.3f}", f"{statistics.median(runs.full_s):.3f}",
            f"{runs.sidecar:.3f}", f"{runs.ratio:.2f}", f"{runs.files / runs.sidecar:,.0f}",
        ])  # fmt: skip
    result.tables.append(
        Table(
            "medians (s); sidecar = full start - empty start",
            ["", "MB", "bare", "empty start", "full start", "sidecar", "ratio", "files/s"],
            rows,
        )
    )
    result.notes += [
        "sidecar: `sidecar serve --embedder none` until /memory/status shows every file and "
        "indexing false, less the same on an empty tier; bare: bench/bare_fts.index_tree",
        f"rounds per size {', '.join(f'{r.files // 1000}k: {len(r.full_s)}' for r in all_runs)}, "
        "index files deleted before each; "
        f"{os.cpu_count()} CPUs",
    ]
    result.details = {"sizes": [r.to_json() for r in all_runs]}
    return result
