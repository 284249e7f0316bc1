"""The in-session memory nudge: one reminder a session once it has ``NUDGE_AFTER``
events since memory was last updated, which is the latest ``memory.updated`` event (a
session's end records one when it changed memory; an agent or its harness may record
one itself). Counted on the journal index, reminded once per (session, that event)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from sidecar.journal.tier import TierJournal

NUDGE_AFTER = 60
MEMORY_UPDATED = "memory.updated"  # what the nudge counts from


class Nudge:
    def __init__(self, on_reader: Callable[..., Awaitable[Any]]) -> None:
        self.on_reader = on_reader
        self._nudged: set[tuple[str, float]] = set()  # (session, last memory.updated) reminded

    async def text(self, tj: TierJournal | None, session_id: str) -> str | None:
        if tj is None or tj.index is None or not tj.ready.is_set():
            return None
        with contextlib.suppress(Exception):  # a nudge is advice: never why a block fails
            last_update = await self.on_reader(tj.index.last_recorded, MEMORY_UPDATED)
            key = (session_id, last_update)
            if key in self._nudged:
                return None
            count = await self.on_reader(tj.index.count_since, session_id, last_update)
            if count >= NUDGE_AFTER:
                self._nudged.add(key)
                return (
                    f"You have {count} new journal entries since your last memory update. "
                    "Before the session ends, save any lasting pattern or decision with "
                    "memory.write (AGENT.md or daily/today)."
                )
        return None
