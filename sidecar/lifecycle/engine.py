"""The lifecycle engine: one maintenance engine per tier, so history never piles up until
writes are refused.

A pass runs every maintenance step (``hooks.maintenance``: the daily logs here, the
journal's days from the journal) in order, each crash-safe on its own. Passes run at
start, on a jittered schedule, on demand (``POST /memory/maintain``) and when a write is
refused for room (``hooks.make_room``). One pass at a time per tier: a request while one
runs joins it rather than starting a second. A failing step is logged and is a health
reason; the other steps still run. No pass waits for a model: the daily step starts
distillation as a background job of its own (``distill_jobs``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sidecar.capability import Capability, Health, Hooks, MaintenanceStep, Tasks
from sidecar.config import Settings
from sidecar.errors import ApiError
from sidecar.index.indexes import TierIndexes
from sidecar.lifecycle.archive_index import ArchiveIndex
from sidecar.lifecycle.daily import DailyStep
from sidecar.lifecycle.distill_jobs import Distiller, DistillJobs
from sidecar.metrics import LIFECYCLE_BYTES, LIFECYCLE_LAST_RUN, LIFECYCLE_RUNS

log = logging.getLogger(__name__)

JITTER = 0.1  # passes of many sidecars on one host spread over +-10% of the interval


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


@dataclass(slots=True)
class TierRun:
    """One tier's engine: the pass running, the last one, and what failed in it."""

    name: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    running: asyncio.Future[dict[str, Any]] | None = None
    last: dict[str, Any] | None = None
    errors: dict[str, str] = field(default_factory=dict)  # step -> why it failed last
    next_run: float | None = None


class Lifecycle(Capability):
    def __init__(
        self,
        settings: Settings,
        indexes: TierIndexes,
        hooks: Hooks,
        distiller: Distiller | None = None,
    ) -> None:
        self.settings = settings
        self._files = ThreadPoolExecutor(1, thread_name_prefix="sidecar-lifecycle")
        self.archive = ArchiveIndex(settings.chunk_chars, self._files)
        self.tasks = Tasks()
        self.distill = distiller and DistillJobs(distiller, settings.caps.core, self.tasks)
        self.daily = DailyStep(settings, indexes, self.archive, self._files, self.distill)
        hooks.maintenance.append(self.daily)
        hooks.file_changed.append(self.archive.changed)
        hooks.make_room.append(self.make_room)
        self.steps: list[MaintenanceStep] = hooks.maintenance  # the journal adds its own
        self.indexes = indexes
        self.runs: dict[str, TierRun] = {}

    async def open(self) -> None:
        tiers = self.indexes.tiers  # open by now
        self.runs = {name: TierRun(name) for name in tiers}
        await self.archive.open({name: state.tier.root for name, state in tiers.items()})

    async def start(self) -> None:
        self.tasks.run(self._schedule(), "lifecycle")

    async def stop(self) -> None:
        await self.tasks.cancel()
        for tr in self.runs.values():  # a pass under way finishes its step: it is crash-safe
            if tr.running is not None and not tr.running.done():
                await asyncio.gather(tr.running, return_exceptions=True)
        if self.distill is not None:  # after the passes, which start its jobs
            await self.distill.stop()

    async def close(self) -> None:
        await self.archive.close()
        self._files.shutdown()

    async def _schedule(self) -> None:
        """A pass of every tier at start (its end logged, one line a tier), then each
        interval. A failed pass is logged; the schedule goes on."""
        await asyncio.gather(*(self._first(tr) for tr in self.runs.values()))
        while True:
            delay = self.settings.maintain_interval * random.uniform(1 - JITTER, 1 + JITTER)
            for tr in self.runs.values():
                tr.next_run = time.time() + delay
            await asyncio.sleep(delay)
            for tr in self.runs.values():
                try:
                    await self.run(tr.name, "schedule")
                except Exception:
                    log.exception("maintenance pass failed", extra={"tier": tr.name})

    async def _first(self, tr: TierRun) -> None:
        await self.archive.sync(tr.name)  # what changed below archive/ while it was down
        try:
            answer = await self.run(tr.name, "start")
        except Exception:
            log.exception("first maintenance pass failed", extra={"tier": tr.name})
            return
        daily = answer["steps"].get("daily", {})
        log.info(
            "first maintenance pass done",
            extra={
                "tier": tr.name,
                "archived_days": sum(daily.get(k, 0) for k in ("archived", "replaced", "merged")),
                "active_bytes_before": answer["active_bytes_before"],
                "active_bytes_after": answer["active_bytes_after"],
                "archived_bytes": answer["archived_bytes"],
                "duration_s": answer["duration_s"],
                "failed": sorted(tr.errors),
            },
        )

    async def run(self, tier: str, reason: str, dry_run: bool = False) -> dict[str, Any]:
        """One pass over ``tier``; joins the pass under way rather than start a second.
        Shielded: a caller that hangs up does not cut a pass short."""
        tr = self.runs[tier]
        if dry_run:
            async with tr.lock:
                return await self._pass(tr, reason, dry_run=True)
        if tr.running is not None and not tr.running.done():
            return {**await asyncio.shield(tr.running), "joined": True}
        tr.running = asyncio.ensure_future(self._locked_pass(tr, reason))
        return await asyncio.shield(tr.running)

    async def _locked_pass(self, tr: TierRun, reason: str) -> dict[str, Any]:
        async with tr.lock:
            return await self._pass(tr, reason, dry_run=False)

    async def _pass(self, tr: TierRun, reason: str, dry_run: bool) -> dict[str, Any]:
        started, clock = time.time(), time.perf_counter()
        steps: dict[str, Any] = {}
        before = after = archived = 0
        for step in list(self.steps):
            try:
                was = await step.usage(tr.name)
                result = await step.maintain(tr.name, started, dry_run)
                outcome, failed = "ok", result.get("degraded")
            except Exception as exc:
                log.error("maintenance step failed", exc_info=True,
                          extra={"tier": tr.name, "step": step.name})  # fmt: skip
                was, result = {}, {"error": f"{type(exc).__name__}: {exc}"}
                outcome, failed = "failed", result["error"]
            steps[step.name] = result
            before += was.get("active_bytes", 0)
            after += result.get("active_bytes", was.get("active_bytes", 0))
            archived += result.get("archived_bytes", 0)
            if dry_run:
                continue
            LIFECYCLE_RUNS.labels(tier=tr.name, step=step.name, outcome=outcome).inc()
            if failed:
                tr.errors[step.name] = failed
            else:
                tr.errors.pop(step.name, None)
            for state in ("active", "archived"):
                if f"{state}_bytes" in result:
                    LIFECYCLE_BYTES.labels(tr.name, step.name, state).set(result[f"{state}_bytes"])
        answer = {
            "tier": tr.name,
            "reason": reason,
            "started": iso(started),
            "duration_s": round(time.perf_counter() - clock, 3),
            "active_bytes_before": before,
            "active_bytes_after": after,
            "freed_bytes": max(0, before - after),
            "archived_bytes": archived,
            "steps": steps,
        }
        if not dry_run:
            tr.last = answer
            LIFECYCLE_LAST_RUN.labels(tier=tr.name).set(time.time())
        return answer

    async def make_room(self, tier: str) -> bool:
        """A write was refused for the tier's cap: maintain it now; whether bytes went."""
        if tier not in self.runs:
            return False
        answer = await self.run(tier, "make_room")
        return bool(answer["freed_bytes"])

    async def maintain(self, scope: str, dry_run: bool) -> dict[str, Any]:
        """``POST /memory/maintain``: a pass of each tier ``scope`` names, now."""
        if scope == "crew" and "crew" not in self.runs:
            raise ApiError(
                403, "crew_read_only", "the crew tier is maintained by the crew lead's "
                "sidecar; maintain your agent tier (scope=agent) here",
            )  # fmt: skip
        names = [n for n in self.runs if scope in (n, "both")]
        tiers = {}
        for name in names:
            tiers[name] = await self.run(name, "request", dry_run)
        return {"scope": scope, "dry_run": dry_run, "tiers": tiers}

    async def status(self, scope: str) -> dict[str, Any]:
        tr = self.runs.get(scope)
        if tr is None:
            return {}
        kinds = {}
        for step in list(self.steps):
            try:
                kinds[step.name] = await step.usage(scope)
            except Exception as exc:
                kinds[step.name] = {"error": f"{type(exc).__name__}: {exc}"}
        last = tr.last
        body: dict[str, Any] = {
            "running": tr.running is not None and not tr.running.done(),
            "last_run": None,
            "next_run": iso(tr.next_run) if tr.next_run else None,
            "interval_s": self.settings.maintain_interval,
            "daily_retention_days": self.settings.daily_retention_days,
            "distillation": self.daily.distillation(scope),
            "kinds": kinds,
            "archive_index": await self.archive.status(scope),
            "errors": dict(tr.errors),
        }
        if last is not None:
            body["last_run"] = {k: v for k, v in last.items() if k != "tier"}
        return {"lifecycle": body}

    async def health(self) -> Health:
        reasons = [
            f"lifecycle: {tr.name}: {step}: {why}"
            for tr in self.runs.values()
            for step, why in sorted(tr.errors.items())
        ]
        reasons += [f"lifecycle: {tier}: archive index: {why}"
                    for tier, why in sorted(self.archive.problems.items())]  # fmt: skip
        reasons += self.distill.reasons() if self.distill is not None else []
        return Health(reasons)
