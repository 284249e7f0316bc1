"""cold_start: a real daemon started on an unindexed tier, until every file is searchable,
against the bare FTS5 loop over the same files in the same run.

Sidecar figure: seconds from spawning ``sidecar serve`` until it has logged that it
listens and that its build is done (``/memory/status`` then confirms the tier holds every
file and is no longer indexing), less the same on an empty tier
(the process start, imports and watcher probe that any start pays), each the median
of a few rounds. The index files are deleted before each round; the notes stay, warm
in the page cache for both sides. Sparse-only (``--embedder none``): vectors are a
separate background stage that starts once the text is searchable.

CPU beside it: the daemon's and its parser workers' (Linux ``/proc``) when the build is
done, less the same of an empty start, against the bare loop's. On a machine other work
shares, the workers (at nice 10) wait longest, and the wall-clock ratio says more about the
neighbours than about the build; the CPU ratio does not. The daemon's own CPU (its writer
inserting and tokenizing, the event loop, taking the workers' answers) is also given
apart from its workers' (parsing): the writer's is the part no added core shortens.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import bare_fts
from bench.context import Context
from bench.daemon import Daemon, DaemonError
from bench.notes import write_notes
from bench.report import BenchResult, Figure, Table, at_most, progress

NAME = "cold_start"
DESCRIPTION = "cold start until searchable at 1k/10k(/50k) files vs bare"
FILE_BYTES = 2_100  # ~105 MB at 50k files
SIZES_QUICK = (1_000, 10_000)
SIZES_FULL = (1_000, 10_000, 50_000)
RATIO_TARGET = at_most(1.5, "<= 1.5x")  # issue 34: at every size
POLL_S = 0.01
LOG_POLL_S = 0.005
# What the daemon logs (at INFO) once it answers requests, and once a build is done.
LISTENING = "listening"
BUILD_DONE = "index build done; every file is searchable"
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
    bare_cpu_s: list[float] = field(default_factory=list)
    empty_cpu_s: list[float] = field(default_factory=list)
    full_cpu_s: list[float] = field(default_factory=list)
    # the daemon process's own part of the CPU above, without its parser workers
    empty_own_cpu_s: list[float] = field(default_factory=list)
    full_own_cpu_s: list[float] = field(default_factory=list)

    @property
    def bare(self) -> float:
        return statistics.median(self.bare_s)

    @property
    def sidecar(self) -> float:
        return statistics.median(self.full_s) - statistics.median(self.empty_s)

    @property
    def ratio(self) -> float:
        return self.sidecar / self.bare

    @property
    def cpu_ratio(self) -> float | None:
        """The build's CPU against the bare loop's; None where ``/proc`` cannot say."""
        return self._against_bare(self.full_cpu_s, self.empty_cpu_s)

    @property
    def own_cpu_ratio(self) -> float | None:
        """The daemon process's own CPU for the build (no workers) against the bare loop's."""
        return self._against_bare(self.full_own_cpu_s, self.empty_own_cpu_s)

    def _against_bare(self, full: list[float], empty: list[float]) -> float | None:
        """CPU of a build (a full start less an empty one) against the bare loop's."""
        if not full or not empty or not self.bare_cpu_s:
            return None
        build = statistics.median(full) - statistics.median(empty)
        return build / statistics.median(self.bare_cpu_s)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "corpus_bytes": self.corpus_bytes,
            "bare_s": [round(s, 4) for s in self.bare_s],
            "empty_start_s": [round(s, 4) for s in self.empty_s],
            "full_start_s": [round(s, 4) for s in self.full_s],
            "sidecar_s": round(self.sidecar, 4),
            "ratio": round(self.ratio, 3),
            "bare_cpu_s": [round(s, 4) for s in self.bare_cpu_s],
            "empty_start_cpu_s": [round(s, 4) for s in self.empty_cpu_s],
            "full_start_cpu_s": [round(s, 4) for s in self.full_cpu_s],
            "empty_start_own_cpu_s": [round(s, 4) for s in self.empty_own_cpu_s],
            "full_start_own_cpu_s": [round(s, 4) for s in self.full_own_cpu_s],
        }


def _drop_index(agent: Path) -> None:
    for path in glob.glob(str(agent / "index.sqlite*")):
        os.unlink(path)


def _cpu_s(pid: int) -> tuple[float, float] | None:
    """CPU seconds of a process and its threads, and of the children it reaped and those
    still running (the parser workers); None off Linux."""
    tick = os.sysconf("SC_CLK_TCK")

    def fields(p: int | str) -> list[str]:
        return Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()

    try:
        own = fields(pid)
        itself = sum(int(x) for x in own[11:13])  # utime, stime
        children = sum(int(x) for x in own[13:15])  # cutime, cstime
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                with contextlib.suppress(FileNotFoundError):
                    children += sum(int(x) for x in fields(child)[11:13])
    except (OSError, ValueError):
        return None
    return itself / tick, children / tick


def time_to_searchable(
    agent: Path, crew: Path, log: Path, files: int, timeout: float
) -> tuple[float, tuple[float, float] | None]:
    """Seconds from spawning the daemon until its agent tier is indexed in full, and the
    CPU seconds it and its workers had used by then (``_cpu_s``).

    Watched in the daemon's log: it says when it listens and when a build is done; one
    status request then confirms every file is there. Polling ``/memory/status`` every
    10 ms instead cost the daemon about 1.5 ms of CPU a request, a seventh of a core taken
    from the build being measured (and as much again in this process).
    """
    start = log.stat().st_size if log.exists() else 0
    wanted = {LISTENING} | ({BUILD_DONE} if files else set())
    with Daemon(agent, crew, log, extra_args=["--embedder", "none", "--log-level", "INFO"]) as d:
        deadline = d.started_at + timeout
        seen: set[str] = set()
        with open(log, "rb") as lines:
            lines.seek(start)
            pending = b""
            while not wanted <= seen:
                if time.monotonic() > deadline:
                    raise DaemonError(f"not searchable within {timeout} s:\n{d.log_tail()}")
                d._check_alive()
                pending += lines.read()
                *done, pending = pending.split(b"\n")
                seen.update(_message(line) for line in done)
                time.sleep(LOG_POLL_S)
        found = time.monotonic() - d.started_at
        cpu = _cpu_s(d.pid)
        while time.monotonic() < deadline:  # confirmed by what the daemon answers
            status = d.client.status()
            if not status.get("indexing") and status.get("total_files") == files:
                return found, cpu
            time.sleep(POLL_S)
        raise DaemonError(f"{files} files not searchable within {timeout} s:\n{d.log_tail()}")


def _message(line: bytes) -> str:
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(line).get("msg", ""))
    return ""


def time_bare(root: Path, db: Path) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    bare_fts.index_tree(db, root)
    return time.perf_counter() - started, time.process_time() - cpu


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
        wall, cpu = time_bare(notes, tmp / f"bare-{files}-{i}.sqlite")
        runs.bare_s.append(wall)
        runs.bare_cpu_s.append(cpu)
        for tier, wanted, walls, cpus, own_cpus in (
            (empty, 0, runs.empty_s, runs.empty_cpu_s, runs.empty_own_cpu_s),
            (notes, files, runs.full_s, runs.full_cpu_s, runs.full_own_cpu_s),
        ):
            _drop_index(tier)
            wall, daemon_cpu = time_to_searchable(tier, crew, tmp / "daemon.log", wanted, timeout)
            walls.append(wall)
            if daemon_cpu is not None:
                cpus.append(sum(daemon_cpu))
                own_cpus.append(daemon_cpu[0])
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
        if runs.cpu_ratio is not None:
            result.figures.append(Figure(f"{label}: CPU sidecar / bare", runs.cpu_ratio, "x", 2))
        if runs.own_cpu_ratio is not None:
            result.figures.append(
                Figure(f"{label}: CPU daemon without workers / bare", runs.own_cpu_ratio, "x", 2)
            )
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
        "sidecar: `sidecar serve --embedder none` until its log says it listens and the build "
        "is done (then /memory/status confirms every file), less the same on an empty tier; "
        "bare: bench/bare_fts.index_tree",
        f"rounds per size {', '.join(f'{r.files // 1000}k: {len(r.full_s)}' for r in all_runs)}, "
        "index files deleted before each; "
        f"{os.cpu_count()} CPUs",
    ]
    result.details = {"sizes": [r.to_json() for r in all_runs]}
    return result
