"""Distillation in the background, so archival never waits for a model.

The daily step archives first, then starts a job here and answers without waiting for
it: a write refused for room waits for the archival only, however slow or hung the model
is. A job distils the archived days that the ledger (``distill_ledger``) does not hold as
done, each read from its month file's section, oldest first, at most ``JOB_DAYS`` of them
(a month: at most eleven calls of 24 KiB), so each pass's cost stays bounded; the next
pass starts the next job. One job at a time per tier; stop cancels it, which is as safe
as a SIGKILL (the ledger's plan is written before any part applies, and a plan cut short
is finished by the next job without a call).

Days archived before an LLM was configured are distilled too, a month a pass: the archive
is the durable record of what happened, and the ledger says which days a model has read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.capability import Tasks
from sidecar.disk.tiers import UnsafePath, decode_text
from sidecar.journal.events import iso
from sidecar.lifecycle import distill_ledger as ledger
from sidecar.lifecycle import months
from sidecar.lifecycle.distill_ledger import LEDGER

log = logging.getLogger(__name__)

# (tier, [(rel path, text) of each day to distil]) -> its report (``distill.Distiller``).
Distiller = Callable[[str, list[tuple[str, str]]], Awaitable[dict[str, Any]]]

JOB_DAYS = 31  # days a job distils at most: a month's worth


@dataclass
class TierJobs:
    """One tier's distillation: the job running, what the last one found and cost."""

    running: asyncio.Task[None] | None = None
    distilled: int | None = None  # archived days the ledger holds as done (None: not read yet)
    pending: int | None = None  # archived days it does not
    undistilled: int = 0  # days the last job could not distil
    last_error: str | None = None
    last_job: dict[str, Any] | None = None
    jobs: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0


def pending(
    root: Path, core_cap: int, due: dict[str, bytes] | None = None
) -> tuple[list[tuple[str, str]], int, list[str]]:
    """The days to distil, oldest first, as ``(daily/DAY.md, text)``; how many archived
    days are done; the ledger's problems. ``due`` adds days about to be archived (a dry
    run). OSError or UnsafePath if the ledger cannot be read. Blocking."""
    found = ledger.read(root, core_cap)
    days = {**(due or {}), **months.archived_days(root / months.FOLDER)}
    todo = [(f"daily/{d}.md", decode_text(days[d])) for d in sorted(days)
            if f"daily/{d}.md" not in found.done]  # fmt: skip
    return todo, len(days) - len(todo), found.problems


class DistillJobs:
    """Each tier's background distillation, started by the daily step after it archives."""

    def __init__(self, distiller: Distiller, core_cap: int, tasks: Tasks) -> None:
        self.distiller, self.core_cap, self.tasks = distiller, core_cap, tasks
        self.tiers: dict[str, TierJobs] = {}
        self.stopping = False

    def start(self, tier: str, root: Path) -> bool:
        """Start a job over ``tier`` unless one runs (or the service stops); whether it did."""
        jobs = self.tiers.setdefault(tier, TierJobs())
        if self.stopping or (jobs.running is not None and not jobs.running.done()):
            return False
        jobs.running = asyncio.ensure_future(self._job(tier, root, jobs))
        self.tasks.oneoff(jobs.running, f"distill-{tier}")
        return True

    async def wait(self, tier: str) -> None:
        """Until the tier's job (if one runs) has ended."""
        jobs = self.tiers.get(tier)
        if jobs is not None and jobs.running is not None:
            await asyncio.gather(asyncio.shield(jobs.running), return_exceptions=True)

    async def stop(self) -> None:
        """Cancel the jobs under way (crash-safe: the next start finishes their plans)."""
        self.stopping = True
        for jobs in self.tiers.values():
            if jobs.running is not None:
                jobs.running.cancel()
        await self.tasks.finish()

    async def _job(self, tier: str, root: Path, jobs: TierJobs) -> None:
        started = time.time()
        try:
            todo, done, problems = await asyncio.to_thread(pending, root, self.core_cap)
        except (OSError, UnsafePath) as exc:  # distilling could repeat what it did
            jobs.last_error = f"{LEDGER} unreadable ({exc}); nothing was distilled"
            jobs.undistilled = jobs.pending or 0
            log.warning("distillation not started", extra={"tier": tier, "error": str(exc)})
            return
        jobs.distilled, jobs.pending = done, len(todo)
        if not todo:
            jobs.last_error, jobs.undistilled = None, 0
            return
        batch = todo[:JOB_DAYS]
        jobs.jobs += 1
        try:
            report = await self.distiller(tier, batch)
        except Exception as exc:  # a bug, not the model: reported, and the next pass retries
            log.exception("distillation job failed", extra={"tier": tier})
            jobs.last_error = f"{type(exc).__name__}: {exc}"
            jobs.undistilled = len(batch)
            return
        # A plan a crash cut short may hold days of its own: count what left the list.
        went = len({*report["distilled"], *report["skipped"]} & {rel for rel, _ in todo})
        jobs.distilled, jobs.pending = done + went, len(todo) - went
        jobs.prompt_tokens += report["prompt_tokens"]
        jobs.answer_tokens += report["answer_tokens"]
        jobs.undistilled = len(report["undistilled"])
        jobs.last_error = None if report["ok"] else report["problems"][-1]
        jobs.last_job = {
            "started": iso(started), "duration_s": round(time.time() - started, 3),
            "days": [batch[0][0], batch[-1][0]], "distilled": len(report["distilled"]),
            "undistilled": jobs.undistilled, "calls": len(report["batches"]),
            "prompt_tokens": report["prompt_tokens"], "answer_tokens": report["answer_tokens"],
            "problems": problems + report["problems"],
        }  # fmt: skip
        log.info("distillation job done", extra={
            "tier": tier, "distilled": len(report["distilled"]), "pending": jobs.pending,
            "prompt_tokens": report["prompt_tokens"]})  # fmt: skip

    async def plan(self, tier: str, root: Path, due: dict[str, bytes]) -> dict[str, Any]:
        """A dry run's answer: what the next job would distil, no model asked."""
        try:
            todo, done, _ = await asyncio.to_thread(pending, root, self.core_cap, due)
        except (OSError, UnsafePath) as exc:
            return {"error": f"{LEDGER} unreadable ({exc}); nothing would be distilled"}
        batch = [rel for rel, _ in todo[:JOB_DAYS]]
        return {"days_distilled": done, "days_pending": len(todo), "next_job_days": len(batch),
                "next_job": batch[:1] + batch[-1:]}  # fmt: skip

    def state(self, tier: str) -> dict[str, Any]:
        """For ``/memory/status``: idle or running, the days done and pending, the last
        error, and the tokens spent since start."""
        jobs = self.tiers.get(tier, TierJobs())
        return {
            "state": "running" if jobs.running is not None and not jobs.running.done()
            else "idle",
            "days_distilled": jobs.distilled, "days_pending": jobs.pending,
            "days_per_job": JOB_DAYS, "jobs": jobs.jobs, "last_error": jobs.last_error,
            "prompt_tokens": jobs.prompt_tokens, "answer_tokens": jobs.answer_tokens,
            "last_job": jobs.last_job,
        }  # fmt: skip

    def reasons(self) -> list[str]:
        """Health reasons: each tier whose last job left days undistilled, until one does
        better."""
        reasons = []
        for tier, jobs in sorted(self.tiers.items()):
            if jobs.last_error:
                days = jobs.undistilled and f"{jobs.undistilled} archived day(s) not distilled: "
                reasons.append(f"lifecycle: {tier}: distillation: {days or ''}{jobs.last_error}")
        return reasons
