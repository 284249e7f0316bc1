"""Old lines of an append-only JSONL log moved into monthly archive files, crash-safe.

Each month's archive file is made to hold its lines (durably, lines it holds already are
not added again) before the active log is rewritten without them (``durable.write_file``,
built from whatever the log holds then, so a line appended meanwhile stays). A crash
between the two leaves the lines in both; the next pass finds them archived and only
removes them, so a re-run never duplicates nor loses one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.disk import durable
from sidecar.disk.tiers import UnsafePath, read_confined

MAX_LOG_BYTES = 256 * 1024 * 1024  # a log read whole to plan a pass; past it, left alone

# Every line's record (None: not a JSON object) -> the month ("YYYY-MM") each moves to, or
# None to keep it in the active log.
Planner = Callable[[list[dict[str, Any] | None]], list[str | None]]


@dataclass(slots=True)
class Moved:
    lines: int = 0  # moved out of the active log (or, dry run, that would be)
    months: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # months whose file cannot be written


def _lines(data: bytes | None) -> list[bytes]:
    """Each line of ``data`` ending in a newline (a hand-written last line gets one)."""
    return [line if line.endswith(b"\n") else line + b"\n"
            for line in (data or b"").splitlines(keepends=True) if line.strip()]  # fmt: skip


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def move(root: Path, rel: str, archive_dir: str, planner: Planner, dry_run: bool) -> Moved:
    """Move the lines ``planner`` names out of ``root/rel`` into
    ``archive_dir/YYYY-MM.jsonl``. Blocking: run it on the log's own thread, with its
    appends held off (a line appended by another writer meanwhile is kept all the same)."""
    got = read_confined(root, rel, MAX_LOG_BYTES)
    lines = _lines(got[0] if got else None)
    months = planner([_record(line) for line in lines])
    due: dict[str, list[bytes]] = {}
    for line, month in zip(lines, months, strict=True):
        if month is not None:
            due.setdefault(month, []).append(line)
    moved = Moved(sum(map(len, due.values())), sorted(due))
    if dry_run or not due:
        return moved
    for month, month_lines in sorted(due.items()):  # a copy: a failed month leaves ``due``

        def build(current: bytes | None, add: list[bytes] = month_lines) -> bytes:
            have = _lines(current)
            held = set(have)
            return b"".join(have) + b"".join(line for line in add if line not in held)

        try:
            durable.write_file(root, f"{archive_dir}/{month}.jsonl", build)
        except (UnsafePath, OSError) as exc:  # that month's lines stay; the others move
            moved.problems.append(f"{archive_dir}/{month}.jsonl: {exc}; its lines stay in "
                                  f"{rel} until it is a regular file or gone")  # fmt: skip
            moved.months.remove(month)
            moved.lines -= len(due.pop(month))
    gone = {line for month_lines in due.values() for line in month_lines}
    if gone:
        durable.write_file(
            root, rel, lambda current: b"".join(x for x in _lines(current) if x not in gone)
        )
    return moved


def sizes(root: Path, rel: str, archive_dir: str) -> dict[str, int]:
    """``active_bytes`` (the log) and ``archived_bytes`` (its month files). Blocking."""
    active = archived = 0
    with contextlib.suppress(OSError):
        active = os.stat(root / rel).st_size
    try:
        names = os.listdir(root / archive_dir)
    except OSError:
        names = []
    for name in names:
        if name.endswith(".jsonl"):
            try:
                archived += os.stat(root / archive_dir / name).st_size
            except OSError:
                continue
    return {"active_bytes": active, "archived_bytes": archived}
