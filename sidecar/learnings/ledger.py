"""Extraction's ledger (``extraction/ledger.jsonl`` in each tier), and its maintenance step.

One JSON object a line, appended: ``queued`` when a session ended, then ``extracted``,
``skipped`` or ``failed`` (``at``: epoch seconds) once it is done. The ``extraction``
step of the lifecycle engine moves the lines of sessions done longer ago than the
retention window into ``archive/extraction/YYYY-MM.jsonl`` (the month they were done),
so the ledger holds what is waiting and what was done lately, not every session ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl, jsonl_archive

LEDGER = "extraction/ledger.jsonl"
ARCHIVE = "archive/extraction"
MAX_PROBLEMS = 5
DONE = ("extracted", "skipped", "failed")


class Ledger:
    """One tier's ledger, folded: which sessions are done, which wait, what did not fit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.done: set[str] = set()
        self.waiting: dict[str, dict[str, Any]] = {}
        self.counts = {"extracted": 0, "skipped": 0, "failed": 0}
        self.tokens = {"prompt": 0, "answer": 0}
        self.problems: list[str] = []
        self.bad_lines = 0

    def load(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            for line in jsonl.read_lines(self.root, LEDGER):
                problem = line.error or self.fold(line.record or {})
                if problem:
                    self.bad_lines += 1
                    if len(self.problems) < MAX_PROBLEMS:
                        self.problems.append(f"{LEDGER} line {line.number}: {problem}")

    def fold(self, record: dict[str, Any]) -> str | None:
        """Take one record in; what does not fit is skipped and said."""
        kind, sid = record.get("kind"), record.get("session_id")
        if not isinstance(sid, str) or not sid:
            return "no session_id"
        if kind == "queued":
            if sid not in self.done:
                session = record.get("session")
                self.waiting[sid] = session if isinstance(session, dict) else {}
            return None
        if kind not in self.counts:
            return f"unknown kind {str(kind)[:40]!r}"
        self.done.add(sid)
        self.waiting.pop(sid, None)
        self.counts[kind] += 1
        for name in ("prompt", "answer"):
            value = record.get(f"{name}_tokens", 0)
            self.tokens[name] += value if isinstance(value, int) and value >= 0 else 0
        return None

    def append(self, record: dict[str, Any]) -> None:
        (self.root / "extraction").mkdir(exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        jsonl.append(self.root, LEDGER, line.encode())
        self.fold(record)


def _done_month(records: list[dict[str, Any] | None], cutoff: float) -> dict[str, str]:
    """Session id -> the month it was done in, for sessions done before ``cutoff``."""
    due: dict[str, str] = {}
    for r in records:
        if r is None or r.get("kind") not in DONE or not isinstance(r.get("session_id"), str):
            continue
        at = r.get("at")
        number = isinstance(at, int | float) and not isinstance(at, bool)
        if number and math.isfinite(at) and 0 <= at < cutoff:
            due.setdefault(r["session_id"], _month(at))
    return due


def _month(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m")


class LedgerStep:
    """The ``extraction`` maintenance step: done sessions past the window leave the ledger.
    Appends are held off (``lock``) while the ledger is rewritten and read again."""

    name = "extraction"

    def __init__(
        self,
        ledgers: dict[str, Ledger],
        lock: asyncio.Lock,
        days: int,
        run: Callable[..., Awaitable[Any]],
    ) -> None:
        self.ledgers = ledgers
        self.lock = lock
        self.days = days
        self.run = run

    async def usage(self, tier: str) -> dict[str, int]:
        ledger = self.ledgers.get(tier)
        if ledger is None:
            return {"active_bytes": 0, "archived_bytes": 0}
        return dict(await asyncio.to_thread(jsonl_archive.sizes, ledger.root, LEDGER, ARCHIVE))

    async def maintain(self, tier: str, now: float, dry_run: bool) -> dict[str, Any]:
        ledger = self.ledgers.get(tier)
        if ledger is None:
            return {"active_bytes": 0, "archived_bytes": 0}
        cutoff = now - self.days * 86400.0

        def planner(records: list[dict[str, Any] | None]) -> list[str | None]:
            due = _done_month(records, cutoff)
            return [due.get(str(r.get("session_id"))) if r else None for r in records]

        async with self.lock:
            moved = await self.run(jsonl_archive.move, ledger.root, LEDGER, ARCHIVE, planner,
                                   dry_run)  # fmt: skip
            if moved.lines and not dry_run:
                fresh = Ledger(ledger.root)
                await self.run(fresh.load)
                self.ledgers[tier] = fresh
        older = datetime.fromtimestamp(cutoff, UTC).isoformat(timespec="seconds")
        body: dict[str, Any] = {"older_than": older, "archived_lines": moved.lines,
                                "months": moved.months}  # fmt: skip
        if moved.problems:
            body["problems"], body["degraded"] = moved.problems, moved.problems[0]
        if dry_run:
            body["dry_run"] = True
        return {**body, **await self.usage(tier)}
