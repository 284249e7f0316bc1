"""The ``sessions`` maintenance step: ended sessions past the retention window leave
``sessions/log.jsonl`` (and the in-memory map) for ``archive/sessions/YYYY-MM.jsonl``.

All of a session's lines move together, to the month it ended in, so an archived month
file reads as the active log does. The archive is durable before the log is rewritten
(``disk.jsonl_archive``); a crash between the two leaves the lines in both, and the next
pass removes them from the log without adding them again. An archived session is one
this daemon no longer knows: its end is answered as an id never started here is
(reinforcement only, ``"started": false``), as after any other archival.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl_archive
from sidecar.journal.events import epoch, iso
from sidecar.sessions.log import LOG, Session

ARCHIVE = "archive/sessions"
DAY_S = 86400.0


def _due(sessions: dict[str, Session], cutoff: float) -> dict[str, str]:
    """Session id -> the month it ended in, for sessions ended before ``cutoff``."""
    due = {}
    for sid, s in sessions.items():
        ended = epoch((s.ended or {}).get("at"))
        if ended is not None and ended < cutoff:
            due[sid] = iso(ended)[:7]
    return due


class SessionsStep:
    name = "sessions"

    def __init__(
        self,
        root: Path,
        tier: str,
        days: int,
        sessions: Callable[[], dict[str, Session]],
        lock: asyncio.Lock,
        run: Callable[..., Awaitable[Any]],
    ) -> None:
        self.root = root
        self.tier = tier  # the one tier whose log this is
        self.days = days
        self.sessions = sessions  # the map the log folds to (replaced at open)
        self.lock = lock  # the log's appends wait while it is rewritten
        self.run = run

    async def usage(self, tier: str) -> dict[str, int]:
        if tier != self.tier:
            return {"active_bytes": 0, "archived_bytes": 0}
        return dict(await asyncio.to_thread(jsonl_archive.sizes, self.root, LOG, ARCHIVE))

    async def maintain(self, tier: str, now: float, dry_run: bool) -> dict[str, Any]:
        if tier != self.tier:
            return {"active_bytes": 0, "archived_bytes": 0}
        cutoff = now - self.days * DAY_S
        async with self.lock:
            due = _due(self.sessions(), cutoff)

            def planner(records: list[dict[str, Any] | None]) -> list[str | None]:
                return [due.get(str(r.get("session_id"))) if r else None for r in records]

            moved = await self.run(jsonl_archive.move, self.root, LOG, ARCHIVE, planner,
                                   dry_run)  # fmt: skip
            if not dry_run:  # a session whose month file could not be written stays
                for sid, month in due.items():
                    if month in moved.months:
                        self.sessions().pop(sid, None)
        body: dict[str, Any] = {"older_than": iso(cutoff), "sessions": len(due),
                                "archived_lines": moved.lines, "months": moved.months}  # fmt: skip
        if moved.problems:
            body["problems"] = moved.problems
            body["degraded"] = moved.problems[0]
        if dry_run:
            body["dry_run"] = True
        return {**body, **await self.usage(tier)}
