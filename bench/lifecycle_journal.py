"""lifecycle_journal: one retention pass over months of journal history.

History is laid down as day files in the past (300 days, 40 events a day, payloads of
a few KB, one event in ten pinned or important), then the journal's maintenance step
runs once as the lifecycle engine runs it, in process: archive each due day file
(gzip, synced, read back), replace it with its trimmed version, update the index.

Figures: the pass's time, against a bare baseline measured in the same run on the
same files (read, gzip, write and fsync the archive; write and fsync a file of the
trimmed size), the active bytes before and after, the archive's bytes, and a second
pass, which finds nothing to do.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import random
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.report import BenchResult, Figure, at_most, progress
from sidecar.journal.events import iso
from sidecar.journal.retention import usage
from tests.journal_trimmer import standalone

NAME = "lifecycle_journal"
DESCRIPTION = "journal retention: one pass over 300 days"
DAY = 86400.0
WINDOW = 90
PER_DAY = 40
WORDS = "deploy runner cache retry vpn token schema queue build merge review test".split()
RATIO_TARGET = at_most(4.0, "<= 4x")  # the pass: parsing and re-encoding lines, the index


def lay_down(root: Path, days: int, now: float) -> None:
    rng = random.Random(31)
    (root / "journal").mkdir(parents=True)
    n = 0
    for back in range(days, 0, -1):
        start = now - back * DAY
        lines = []
        for j in range(PER_DAY):
            t = start + j * 60
            extra: dict[str, Any] = {"priority": "pin"} if n % 10 == 0 else {}
            kind = "peer.escalation" if n % 10 == 1 else "task.step"
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(200, 900)))
            record = {
                "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "ts": iso(t),
                "recorded_at": iso(t), "type": kind, "severity": "info",
                "summary": f"step {n} of the {rng.choice(WORDS)} job",
                "payload": {"log": words, "n": n}, "session_id": f"s{back}", **extra,
            }  # fmt: skip
            lines.append(json.dumps(record, separators=(",", ":")) + "\n")
            n += 1
        day = datetime.fromtimestamp(start, UTC).date().isoformat()
        (root / "journal" / f"{day}.jsonl").write_text("".join(lines))


def bare(root: Path, scratch: Path, trimmed_sizes: dict[str, int]) -> float:
    """The floor of a pass over the same days: read each, gzip it, write and fsync the
    archive and a file of its trimmed size."""
    scratch.mkdir()
    started = time.perf_counter()
    for rel, size in trimmed_sizes.items():
        data = (root / rel).read_bytes()
        for name, out in (("a.gz", gzip.compress(data, 6, mtime=0)), ("t", data[:size])):
            fd = os.open(scratch / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, out)
                os.fsync(fd)
            finally:
                os.close(fd)
    return time.perf_counter() - started


async def one_pass(root: Path, now: float) -> tuple[dict[str, Any], dict[str, Any], float]:
    async with standalone(root, WINDOW) as step:
        started = time.perf_counter()
        first = await step.maintain("agent", now, dry_run=False)
        elapsed = time.perf_counter() - started
        second = await step.maintain("agent", now, dry_run=False)
    return first, second, elapsed


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "journal retention: one maintenance pass over months")
    days = 150 if ctx.quick else 300
    now = time.time()
    with ctx.tempdir(NAME) as tmp:
        root = tmp / "agent"
        progress(NAME, f"laying down {days} days x {PER_DAY} events")
        lay_down(root, days, now)
        before = usage(root)
        originals = {p.name: p.stat().st_size for p in (root / "journal").glob("*.jsonl")}
        progress(NAME, "one retention pass, then a second")
        first, second, elapsed = asyncio.run(one_pass(root, now))
        after = usage(root)
        trimmed = {
            f"journal/{name}": (root / "journal" / name).stat().st_size
            for name in originals
            if (root / "journal" / name).stat().st_size != originals[name]
        }
        progress(NAME, f"bare baseline over the {len(trimmed)} trimmed days")
        restored = tmp / "restored"
        (restored / "journal").mkdir(parents=True)
        for rel in trimmed:  # the days as they were, from their archives
            archive = root / "archive" / "journal" / f"{rel.removeprefix('journal/')}.gz"
            (restored / rel).write_bytes(gzip.decompress(archive.read_bytes()))
        floor = bare(restored, tmp / "scratch", trimmed)
    mb = 1024 * 1024
    floor_note = f"floor = read + gzip + 2 x (write + fsync) a day = {floor:.2f} s"
    kept = f"{first['kept']['important']:,} pinned or important kept whole"
    result.figures = [
        Figure("pass / bare floor", elapsed / floor, "x", target=RATIO_TARGET, note=floor_note),
        Figure(
            "journal pass",
            elapsed,
            "s",
            note=f"{first['days']} days, {first['events']:,} events trimmed",
        ),
        Figure("active bytes before", before["active_bytes"] / mb, "MB", digits=1),
        Figure("active bytes after", after["active_bytes"] / mb, "MB", digits=1, note=kept),
        Figure("archived bytes", after["archived_bytes"] / mb, "MB", digits=1, note="gzip"),
        Figure("second pass", second["seconds"], "s", note=f"{second['days']} days trimmed"),
    ]
    result.details = {"first": first, "second": second, "before": before, "after": after}
    return result
