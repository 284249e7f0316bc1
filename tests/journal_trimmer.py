"""A separate process for the retention kill test.

    python tests/journal_trimmer.py ROOT NOW WINDOW_DAYS

Opens the agent tier's journal at ROOT as the daemon does at start (torn tails set
aside, the index caught up, or rebuilt if a day file was replaced under it), prints
"ready", runs one retention pass as of NOW (epoch seconds) and prints its answer as
JSON. The test SIGKILLs it at random moments of the pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from sidecar.config import Caps, Settings
from sidecar.disk.tiers import Tier
from sidecar.journal.retention import JournalRetention
from sidecar.journal.tier import TierJournal


@contextlib.asynccontextmanager
async def standalone(
    root: Path, window: int, caps: Caps | None = None
) -> AsyncIterator[JournalRetention]:
    """The journal's retention step over the agent tier at ROOT with no engine (and no
    daemon) around it, the tier's journal opened as at start: the caller runs each pass.

    Shared by this process, the retention tests and ``bench/lifecycle_journal.py``, so
    the benchmark times the very pass the tests check and kill."""
    settings = Settings(agent_dir=root, crew_dir=root.parent / "crew", embedder="none",
                        journal_retention_days=window, caps=caps or Caps())  # fmt: skip
    tj = TierJournal(Tier("agent", root), settings.caps, [])
    await tj.run(tj.open)
    tj.ready.set()

    async def ready(_: TierJournal) -> None:
        return None

    try:
        yield JournalRetention({"agent": tj}, settings, ready)
    finally:
        await tj.run(tj.close)
        tj.writer.shutdown()


async def main(root: Path, now: float, window: int) -> None:
    async with standalone(root, window) as step:
        print("ready", flush=True)
        answer = await step.maintain("agent", now, dry_run=False)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])))
