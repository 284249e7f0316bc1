"""The ``daily`` maintenance step: daily logs past the retention window move, byte for
byte, into one markdown file a month below ``archive/daily/`` (format: ``months``).

Crash-safe by order: the month file holding the day's section is durable before the
day's log is removed, and the log is removed only while it still holds the bytes that
were archived (under the lock notes take to write it), so a write racing the move is
never lost. A pass after a crash finds the section already there, naming the same log
file, unchanged (``months``): the log is just removed; a log that extends the section
replaces it; a log written again for a day already archived is added to its section.
Every line ends up on disk exactly once.

With an LLM configured, the step then starts distillation of the archived days in the
background (``distill_jobs``) and answers without waiting for it: archival never waits
for a model, so history never piles up, and a write waiting for room never waits on one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import re
import stat
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.disk import durable
from sidecar.disk.tiers import ARCHIVE_DIR, UnsafePath, read_fd
from sidecar.index.indexes import TierIndexes
from sidecar.index.queue import OPTIMIZE, TREE, JobKey
from sidecar.lifecycle import months
from sidecar.lifecycle.archive_index import ArchiveIndex
from sidecar.lifecycle.distill_jobs import DistillJobs
from sidecar.lifecycle.months import Month, Section

log = logging.getLogger(__name__)

DAILY_DIR = "daily"
MONTHS_DIR = months.FOLDER
_DAY_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})\.md")
NO_DISTILLER = "off: no LLM is configured (--llm-url, --llm-model); logs are archived as they are"

# What became of a due day's log: its section was added, was there already, was
# replaced by a log that extends it, or the log was added to it.
ACTIONS = ("archived", "already_archived", "replaced", "merged")


class ArchiveFull(Exception):
    """The archive would pass its own cap (``--cap-archive-bytes``)."""


@dataclass(slots=True)
class Scan:
    due: dict[str, dict[str, bytes]] = field(default_factory=dict)  # month -> day -> log
    ids: dict[str, str] = field(default_factory=dict)  # day -> its log's months.identity
    active_bytes: int = 0  # everything in daily/
    archived_bytes: int = 0  # the month files
    archive_total: int = 0  # everything below archive/, for its cap
    problems: list[str] = field(default_factory=list)


class DailyStep:
    """One tier's daily logs, archived by month. Blocking work runs on ``executor``."""

    name = "daily"

    def __init__(
        self,
        settings: Settings,
        indexes: TierIndexes,
        archive: ArchiveIndex,
        executor: Executor,
        jobs: DistillJobs | None = None,
    ) -> None:
        self.settings, self.indexes, self.executor = settings, indexes, executor
        self.archive = archive
        self.jobs = jobs  # None: no LLM is configured

    def distillation(self, tier: str) -> str | dict[str, Any]:
        return NO_DISTILLER if self.jobs is None else self.jobs.state(tier)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def usage(self, tier: str) -> dict[str, int]:
        # stat only, so off the lifecycle thread: a glance never waits behind a month's move
        scan = await asyncio.to_thread(_scan, self._root(tier), None)
        return {"active_bytes": scan.active_bytes, "archived_bytes": scan.archived_bytes}

    def _root(self, tier: str) -> Path:
        return self.indexes.tiers[tier].tier.root

    async def maintain(self, tier: str, now: float, dry_run: bool) -> dict[str, Any]:
        root = self._root(tier)
        today = datetime.fromtimestamp(now, UTC).date()
        cutoff = today - timedelta(days=self.settings.daily_retention_days)
        scan: Scan = await self._run(_scan, root, cutoff)
        days = sorted((d, data) for month in scan.due.values() for d, data in month.items())
        counts = dict.fromkeys(ACTIONS, 0)
        body: dict[str, Any] = {
            "older_than": cutoff.isoformat(),
            "due": len(days),
            "due_bytes": sum(len(data) for _, data in days),
            "months": sorted(scan.due),
        }
        problems = scan.problems
        archive_total, changed_meanwhile, full = scan.archive_total, 0, None
        for month in sorted(scan.due):
            try:
                done = await self._run(
                    _archive_month, root, month, scan.due[month], archive_total,
                    self.settings.caps.archive, dry_run, scan.ids,
                )  # fmt: skip
            except ArchiveFull as exc:
                full = str(exc)
                break
            except (UnsafePath, OSError) as exc:  # that month's file only: the others go on
                held = (f"{MONTHS_DIR}/{month}.md: {exc}; logs from {month} stay in "
                        f"{DAILY_DIR}/ until it is a regular file or gone")  # fmt: skip
                problems.append(held)
                full = full or held
                continue
            archive_total += done.grew
            changed_meanwhile += done.changed_meanwhile
            problems += done.problems
            for action in ACTIONS:
                counts[action] += done.counts[action]
        if days and not dry_run:
            await self._reindex(tier)
        body["distillation"] = await self._distil(tier, root, scan, dry_run)
        after: Scan = await self._run(_scan, root, None)
        body.update(counts)
        if changed_meanwhile:
            body["changed_meanwhile"] = changed_meanwhile  # archived again next pass
        body["active_bytes"], body["archived_bytes"] = after.active_bytes, after.archived_bytes
        body["archive_cap"] = self.settings.caps.archive
        body["problems"] = sorted(set(problems + after.problems))
        if full is not None:  # until a pass does better
            body["degraded"] = full
        if dry_run:
            body["dry_run"] = True
        return body

    async def _distil(self, tier: str, root: Path, scan: Scan, dry_run: bool) -> Any:
        """Start the tier's distillation job (unless one runs) and answer its state; a dry
        run answers what it would distil, the days due now included."""
        if self.jobs is None:
            return NO_DISTILLER
        if dry_run:
            due = {day: data for month in scan.due.values() for day, data in month.items()}
            return await self.jobs.plan(tier, root, due)
        started = self.jobs.start(tier, root)
        return {"job": "started" if started else "running", **self.jobs.state(tier)}

    async def _reindex(self, tier: str) -> None:
        """Index the moves before the pass answers: a write waiting for room measures the
        tier by its index, so the index must no longer hold the logs that went. Then merge
        its segments: the rows of the logs that went would slow every search until then."""
        with contextlib.suppress(RuntimeError):  # stopping: the next start reconciles
            queue = self.indexes.queue
            await asyncio.gather(
                queue.submit(JobKey(tier, TREE, DAILY_DIR)), return_exceptions=True
            )
            queue.submit(JobKey(tier, OPTIMIZE))
        await self.archive.sync(tier)


def _scan(root: Path, cutoff: date | None) -> Scan:
    """Sizes of the logs and the archive, what is odd in them, and (given ``cutoff``) the
    bytes of every log older than it, by month. Blocking."""
    scan = Scan()
    for name, st in months.entries(root / DAILY_DIR):
        rel = f"{DAILY_DIR}/{name}"
        if not name.endswith(".md"):
            continue
        scan.active_bytes += st.st_size
        day = _day_of(name)
        if day is None:
            scan.problems.append(f"{rel}: not a daily log name (YYYY-MM-DD.md with a real "
                                 "date); left alone")  # fmt: skip
            continue
        if cutoff is not None and day < cutoff:
            found = months.read_log(root / DAILY_DIR, name)
            if found is not None:
                scan.due.setdefault(day.isoformat()[:7], {})[day.isoformat()] = found[0]
                scan.ids[day.isoformat()] = found[1]
    for name, st in months.entries(root / MONTHS_DIR):
        if not name.endswith(".md"):
            continue
        scan.archived_bytes += st.st_size
        rel = f"{MONTHS_DIR}/{name}"
        if not months.MONTH_NAME.fullmatch(name):
            scan.problems.append(f"{rel}: not an archive month file (YYYY-MM.md); left "
                                 "alone, still read and searched as a note")  # fmt: skip
            continue
        if cutoff is not None:  # a pass, not a glance at the sizes
            scan.problems += months.parse(months.read(root / MONTHS_DIR, name), rel).problems
    for dirpath, _, names in os.walk(root / ARCHIVE_DIR):
        for name in names:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                scan.archive_total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return scan


def _day_of(name: str) -> date | None:
    m = _DAY_NAME.fullmatch(name)
    if m is None:
        return None
    try:
        return date.fromisoformat(m.group(1))
    except ValueError:
        return None


@dataclass(slots=True)
class MonthDone:
    counts: dict[str, int]
    grew: int = 0  # bytes the month file gained
    changed_meanwhile: int = 0  # logs written while they were archived: kept for next pass
    problems: list[str] = field(default_factory=list)


def _merge(month: Month, logs: dict[str, bytes], ids: dict[str, str]) -> dict[str, int]:
    """Put each day's log into ``month``; how many days took each action. A section already
    holds a log (a pass after a crash) only if it names that very file, unchanged since
    (``ids``); a section from before names were kept: if it ends with the log's bytes."""
    counts = dict.fromkeys(ACTIONS, 0)
    for day, data in sorted(logs.items()):
        have, log = month.section(day), ids.get(day)
        if have is None:
            month.put(Section(day, data, log=log))
            counts["archived"] += 1
        elif _holds(have, data, log):
            counts["already_archived"] += 1
        elif data.startswith(have.content) and data != have.content:
            month.put(Section(day, data, log=log))
            counts["replaced"] += 1
        else:  # the day was written again after it was archived: keep both
            sep = b"" if not have.content or have.content.endswith(b"\n") else b"\n"
            month.put(Section(day, have.content + sep + data, log=log))
            counts["merged"] += 1
    return counts


def _holds(have: Section, data: bytes, log: str | None) -> bool:
    tail = have.content == data or bool(data and have.content.endswith(data))
    return tail and (have.log is None or have.log == log)


def _archive_month(
    root: Path,
    month: str,
    logs: dict[str, bytes],
    archive_total: int,
    cap: int,
    dry_run: bool,
    ids: dict[str, str] | None = None,
) -> MonthDone:
    """Make the month file hold every log in ``logs`` (durably), then remove each log that
    still holds what was archived. ``ids``: each log's ``months.identity`` when its bytes
    were read (without it, the log's as it is now, if it still holds them). Blocking."""
    if ids is None:
        ids = {}
        for day, data in logs.items():
            found = months.read_log(root / DAILY_DIR, f"{day}.md")
            if found is not None and found[0] == data:
                ids[day] = found[1]
    rel = f"{MONTHS_DIR}/{month}.md"
    folder = root / MONTHS_DIR
    current = months.read(folder, f"{month}.md") if folder.is_dir() else None
    parsed = months.parse(current, rel)
    done = MonthDone(_merge(parsed, logs, ids), problems=parsed.problems)
    if dry_run:
        return done
    if done.counts["already_archived"] < len(logs):

        def build(now: bytes | None) -> bytes:
            again = months.parse(now, rel)
            if not again.parts:
                again.parts.append(months.title(month))
            done.counts = _merge(again, logs, ids)
            new = again.render()
            projected = archive_total - len(now or b"") + len(new)
            if projected > cap:
                raise ArchiveFull(
                    f"archive is full: {rel} would make it {projected} bytes, over its cap of "
                    f"{cap} (--cap-archive-bytes); logs from {month} on stay in {DAILY_DIR}/"
                )
            return new

        outcome = durable.write_file(root, rel, build)
        done.grew = len(outcome.new) - len(outcome.old or b"")
    for day, data in logs.items():
        if not _remove_if_holds(root / DAILY_DIR, f"{day}.md", data):
            done.changed_meanwhile += 1
    return done


def _remove_if_holds(folder: Path, name: str, expected: bytes) -> bool:
    """Remove ``folder/name`` if it holds ``expected``, under the folder's lock (the one a
    write to it takes), and make the removal durable. False if it changed meanwhile."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        except FileNotFoundError:
            return True  # gone already: a person removed it after it was archived
        if read_fd(fd, name)[0] != expected:
            return False
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        durable.fsync(dir_fd)
        return True
    finally:
        os.close(dir_fd)
