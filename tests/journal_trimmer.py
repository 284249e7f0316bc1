"""A separate process for the retention kill test.

    python tests/journal_trimmer.py ROOT NOW WINDOW_DAYS

Opens the agent tier's journal at ROOT as the daemon does at start (torn tails set
aside, the index caught up, or rebuilt if a day file was replaced under it), prints
"ready", runs one retention pass as of NOW (epoch seconds) and prints its answer as
JSON. The test SIGKILLs it at random moments of the pass.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from sidecar.config import Settings
from sidecar.disk.tiers import Tier
from sidecar.journal.retention import JournalRetention
from sidecar.journal.tier import TierJournal


async def main(root: Path, now: float, window: int) -> None:
    settings = Settings(agent_dir=root, crew_dir=root.parent / "crew", embedder="none",
                        journal_retention_days=window)  # fmt: skip
    tj = TierJournal(Tier("agent", root), settings.caps, [])
    await tj.run(tj.open)
    tj.ready.set()

    async def ready(_: TierJournal) -> None:
        return None

    step = JournalRetention({"agent": tj}, settings, ready)
    print("ready", flush=True)
    answer = await step.maintain("agent", now, dry_run=False)
    print(json.dumps(answer), flush=True)
    await tj.run(tj.close)
    tj.writer.shutdown()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])))
