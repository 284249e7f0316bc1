"""Journal retention: old ordinary events keep their summary and metadata and an excerpt
of their payload; the day file they came from is first archived whole, compressed.

An event is trimmed once it (``ts`` and ``recorded_at``) is older than the retention
window, unless it is pinned or important (its base importance or priority floor at
least ``KEEP_IMPORTANCE``: a ``priority`` of pin, high or permanent, escalations,
regressions, corrections), or recall used it within the window (its reference
records). A payload no longer than the excerpt is left whole: there is nothing to cut.

One day file at a time, in an order a SIGKILL cannot turn into a loss or a duplicate:

1. ``archive/journal/DAY.jsonl.gz`` is written durably (temp, fsync, rename) and read
   back: it must decompress to the day file's bytes. An archive already there that
   holds those bytes (a pass killed after step 1) is used as it is. This runs on a
   thread of its own: the tier's appends do not wait for the compression.
2. On the tier's journal thread (appends wait for this step only), if neither the file
   nor what the index says of its events changed since step 1, the trimmed day file
   replaces the original durably (temp, fsync, rename, only if the original still holds
   the bytes that were archived) ...
3. ... and the index takes the trimmed rows and the file's new size and inode in one
   transaction (a crash before it: the next start sees a replaced file and rebuilds).

A trimmed line carries ``"trimmed": {"payload_bytes": N, "at": ...}`` and is never cut
again, so a second pass over a day finds nothing more to do.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import os
import stat
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.disk import durable
from sidecar.disk.jsonl import open_owned, parse_line
from sidecar.disk.tiers import read_fd
from sidecar.journal import fold
from sidecar.journal import log as journal_log
from sidecar.journal.events import iso
from sidecar.journal.tier import encode

if TYPE_CHECKING:
    from sidecar.config import Settings
    from sidecar.journal.tier import TierJournal

log = logging.getLogger(__name__)

ARCHIVE_DIR = "archive/journal"
EXCERPT_CHARS = 400  # of the payload as compact JSON, as the reference design keeps
KEEP_IMPORTANCE = 0.8
DAY_S = 86400.0


def archive_file(rel: str) -> str:
    """``journal/2025-08-01.jsonl`` -> ``archive/journal/2025-08-01.jsonl.gz``."""
    return f"{ARCHIVE_DIR}/{rel.rpartition('/')[2]}.gz"


class Changed(Exception):
    """The day file changed while it was being trimmed: left for the next pass."""


@dataclass
class DayPlan:
    """What a pass does (or would do) to one day file."""

    rel: str
    events: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    archived: int = 0  # bytes of the archive written for it (0: one was already there)
    problem: str | None = None


@dataclass
class Kept:
    pinned: int = 0  # important or pinned (priority floor or base importance)
    referenced: int = 0
    small: int = 0  # a payload no longer than the excerpt: nothing to cut


def trimmed_record(record: dict[str, Any], at: str) -> dict[str, Any] | None:
    """``record`` with its payload cut to an excerpt, or None if there is nothing to cut."""
    payload = record.get("payload")
    if "trimmed" in record or not isinstance(payload, dict):
        return None
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= EXCERPT_CHARS:
        return None
    size = len(text.encode())
    return {**record, "payload": {"excerpt": text[:EXCERPT_CHARS]},
            "trimmed": {"payload_bytes": size, "at": at}}  # fmt: skip


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their newlines, numbered as the fold numbers them (a last line without
    its newline kept as it is)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _read(root: Path, rel: str) -> bytes:
    return read_fd(open_owned(root, rel, os.O_RDONLY), rel)[0]


def _read_archive(root: Path, rel: str) -> bytes | None:
    """The archive's decompressed bytes; None if there is none; ``ValueError`` saying why
    if it cannot be read whole (truncated, not gzip)."""
    try:
        packed = _read(root, rel)
    except FileNotFoundError:
        return None
    try:
        return gzip.decompress(packed)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not a whole gzip file ({exc})") from None


def _files(root: Path, folder: str, suffix: str) -> list[tuple[str, int]]:
    try:
        names = sorted(os.listdir(root / folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for name in names:
        if not name.endswith(suffix):
            continue
        try:
            st = os.lstat(root / folder / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((f"{folder}/{name}", st.st_size))
    return out


def usage(root: Path) -> dict[str, int]:
    """Bytes of the active day files, and of the archived ones."""
    active = 0
    for rel in journal_log.journal_files(root):
        try:
            active += os.lstat(root / rel).st_size
        except OSError:
            continue
    archived = sum(size for _, size in _files(root, ARCHIVE_DIR, ".jsonl.gz"))
    return {"active_bytes": active, "archived_bytes": archived}


def due_events(tj: TierJournal, rel: str, cutoff: float, kept: Kept) -> dict[int, str]:
    """Line -> id of the events of ``rel`` retention may trim (tier's journal thread)."""
    assert tj.index is not None
    due: dict[int, str] = {}
    for line, event_id, ts, recorded, base, floor, last_ref, trimmed in tj.index.day_events(rel):
        if trimmed is not None or max(ts, recorded) >= cutoff:
            continue
        if max(base, floor) >= KEEP_IMPORTANCE:
            kept.pinned += 1
        elif last_ref is not None and last_ref >= cutoff:
            kept.referenced += 1
        else:
            due[line] = event_id
    return due


@dataclass
class Day:
    """One day file's trimming, prepared off the journal's thread."""

    plan: DayPlan
    due: dict[int, str]  # what the index said could be trimmed
    data: bytes  # the day file as read, and archived
    new: bytes  # its trimmed version
    rows: list[dict[str, Any]]  # ``fold.event_row`` of each trimmed line, and its problem


def prepare_day(root: Path, rel: str, due: dict[int, str], at: str, kept: Kept) -> Day | None:
    """The trimmed version of ``rel``; None if no payload is longer than its excerpt."""
    data = _read(root, rel)
    lines = split_lines(data)
    rows: list[dict[str, Any]] = []
    for number, event_id in due.items():
        if number > len(lines) or not lines[number - 1].endswith(b"\n"):
            raise Changed(f"{rel} has no line {number}: it changed since it was indexed")
        record, _ = parse_line(lines[number - 1][:-1])
        if record is None or record.get("id") != event_id:
            raise Changed(f"{rel} line {number} is not event {event_id} the index holds")
        cut = trimmed_record(record, at)
        if cut is None:
            kept.small += 1
            continue
        lines[number - 1] = encode(cut)
        row, defaults = fold.event_row(rel, number, cut)
        rows.append({**row, "problem": fold.kept_note(defaults) if defaults else None})
    if not rows:
        return None
    new = b"".join(lines)
    return Day(DayPlan(rel, len(rows), len(data), len(new)), due, data, new, rows)


def archive_day(root: Path, day: Day, room: int) -> None:
    """Make ``archive/journal/DAY.jsonl.gz`` hold the day file as read, durably, and read
    it back; or set ``day.plan.problem`` and leave the day whole."""
    plan, rel, archive = day.plan, day.plan.rel, archive_file(day.plan.rel)
    try:
        held = _read_archive(root, archive)
    except ValueError as exc:
        plan.problem = (f"{archive}: {exc}; {rel} was left whole. Move the damaged archive "
                        "out of archive/journal/ (if the day file was never trimmed, the "
                        "next pass archives it afresh)")  # fmt: skip
        return
    if held is None:
        packed = gzip.compress(day.data, compresslevel=6, mtime=0)
        if len(packed) > room:
            plan.problem = (f"archiving {rel} would take the journal archive past its cap "
                            "(--cap-journal-archive-bytes); it was left whole. Raise the cap "
                            "or move old archives out of archive/journal/")  # fmt: skip
            return

        def first(old: bytes | None) -> bytes:
            if old is not None:
                raise Changed(f"{archive} appeared while {rel} was being archived")
            return packed

        durable.write_file(root, archive, first)
        if _read_archive(root, archive) != day.data:  # what was synced is what replaces it
            plan.problem = f"{archive} did not read back as {rel}; the day file was left whole"
            return
        plan.archived = len(packed)
    elif held != day.data:  # trimmed before: the archive must hold every line cut now
        whole = set(split_lines(held))
        lines = split_lines(day.data)
        if any(lines[row["line"] - 1] not in whole for row in day.rows):
            plan.problem = (
                f"{rel} holds lines its archive {archive} does not; it was left as it is. "
                "Move the archive aside to archive it afresh"
            )


def replace_day(tj: TierJournal, day: Day, cutoff: float) -> None:
    """The trimmed file in place of the archived one, and the index told (the tier's
    journal thread): only if neither the file nor what the index says of its events
    changed since the day was prepared."""
    assert tj.index is not None
    rel, root = day.plan.rel, tj.tier.root
    if due_events(tj, rel, cutoff, Kept()) != day.due:
        raise Changed(f"{rel}: its events changed while it was archived (recalled, or "
                      "the index rebuilt); the next pass trims it")  # fmt: skip

    def replace(old: bytes | None) -> bytes:
        if old != day.data:
            raise Changed(f"{rel} changed while it was being trimmed")
        return day.new

    durable.write_file(root, rel, replace)
    tj.index.retrim(rel, day.rows, len(day.new), os.lstat(root / rel).st_ino)
    tj.sizes[rel] = len(day.new)


@dataclass
class JournalRetention:
    """The journal's maintenance step (``capability.MaintenanceStep``), run by the
    lifecycle engine per tier; what its last pass did per tier is in ``last``."""

    tiers: dict[str, TierJournal]
    settings: Settings
    ready: Callable[[TierJournal], Awaitable[None]]  # the tier's index has caught up
    name: str = "journal"
    last: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def usage(self, tier: str) -> dict[str, int]:
        tj = self.tiers.get(tier)
        if tj is None:
            return {"active_bytes": 0, "archived_bytes": 0}
        return await asyncio.to_thread(usage, tj.tier.root)

    async def maintain(self, tier: str, now: float, dry_run: bool) -> dict[str, Any]:
        tj = self.tiers.get(tier)
        if tj is None:
            return {"active_bytes": 0, "archived_bytes": 0, "days": 0}
        await self.ready(tj)
        started = time.monotonic()
        root = tj.tier.root
        window = self.settings.journal_retention_days * DAY_S
        cutoff = now - window
        last_day = datetime.fromtimestamp(cutoff, UTC).date().isoformat()
        days = [rel for rel in await tj.run(journal_log.journal_files, root)
                if rel.rpartition("/")[2][:10] < last_day]  # fmt: skip
        room = self.settings.caps.journal_archive
        room -= (await self.usage(tier))["archived_bytes"]
        kept, plans, problems = Kept(), [], []
        for rel in days:
            # Only the index's reads and the replace hold up the tier's appends: reading,
            # compressing and archiving the day run on a thread of their own.
            try:
                due = await tj.run(due_events, tj, rel, cutoff, kept)
                day = await asyncio.to_thread(prepare_day, root, rel, due, iso(now), kept)
                if day is None:
                    continue
                if not dry_run:
                    await asyncio.to_thread(archive_day, root, day, room)
                    if day.plan.problem is None:
                        await tj.run(replace_day, tj, day, cutoff)
            except (Changed, OSError, ValueError) as exc:
                problems.append(f"{rel}: {exc}")
                log.warning("journal day not trimmed", extra={"file": rel, "error": str(exc)})
                continue
            if (problem := day.plan.problem) is not None:
                problems.append(problem)
                log.warning("journal day not trimmed", extra={"file": rel, "error": problem})
                continue
            room -= day.plan.archived
            plans.append(day.plan)
        answer: dict[str, Any] = {
            "dry_run": dry_run,
            "days": len(plans),
            "events": sum(p.events for p in plans),
            "bytes_before": sum(p.bytes_before for p in plans),
            "bytes_after": sum(p.bytes_after for p in plans),
            "kept": {"important": kept.pinned, "referenced": kept.referenced, "small": kept.small},
            "problems": problems,
            "seconds": round(time.monotonic() - started, 3),
            "at": iso(now),
            **await self.usage(tier),
        }
        if problems:  # what the engine shows as this step's failure, beside the list
            answer["degraded"] = f"{len(problems)} journal day file(s) left whole: {problems[0]}"
        if not dry_run:
            self.last[tier] = answer
            if plans:
                shown = ("days", "events", "bytes_before", "bytes_after")
                log.info("journal trimmed", extra={"tier": tier, **{k: answer[k] for k in shown}})
        return answer
