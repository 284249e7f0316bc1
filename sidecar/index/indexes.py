"""Each tier's index kept in step with its files: the stores, their one writer, the
watcher and the reconcile timer.

Everything that changes an index runs as a job in the FIFO queue on one writer
thread, so a store has a single writer and sees changes in the order they were
noticed; searches and status read the last committed index on other threads, so
a rebuild never stalls them or the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sidecar.capability import Hooks
from sidecar.disk import durable
from sidecar.disk.tiers import SCOPES, Tier
from sidecar.errors import ApiError
from sidecar.index import watcher
from sidecar.index.jobs import C, Change, IndexJobs, T, TierState
from sidecar.index.parse_pool import ParsePool
from sidecar.index.queue import HEAL, OPTIMIZE, REBUILD, TREE, WRITE, JobKey, ReindexQueue
from sidecar.index.store import IndexStore, StoreStats, iso

log = logging.getLogger(__name__)

OPTIMIZE_AFTER_CHANGES = 200
RETRY_AFTER_S = 2  # what a search of a tier being rebuilt is told to wait
LEASE_RETRY_S = 1.0  # a standby's attempts at a shared store's writer lease


class TierIndexes(IndexJobs):
    """Each tier's store, the writer thread its jobs run on (``IndexJobs``), the watcher
    and the timers; what searches, status and health read."""

    def __init__(
        self,
        tiers: list[Tier],
        chunk_chars: int,
        reconcile_interval: float,
        role: str,
        open_store: Callable[[Tier], IndexStore],
        pool: ParsePool | None = None,
        *,
        hooks: Hooks,
    ) -> None:
        self._tier_list = tiers
        self.hooks = hooks  # fires index_changed, file_changed and watched
        self._open_store = open_store  # which store holds each tier: ``sidecar.stores`` decides
        self.chunk_chars = chunk_chars
        self.reconcile_interval = reconcile_interval
        self.role = role  # named when a tier this sidecar does not serve is asked for
        self.tiers: dict[str, TierState] = {}
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="sidecar-index")
        self._readers = ThreadPoolExecutor(2, thread_name_prefix="sidecar-search")
        self._writes: dict[JobKey, Callable[[TierState], Change]] = {}  # queued write jobs
        self._tickets = itertools.count(1)
        self.queue = ReindexQueue(self._run_job, self._writer)
        self._stop = asyncio.Event()
        self.watcher_ready = asyncio.Event()
        self.watcher_error: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.vector_model: str | None = None  # optimize prunes vectors of any other model
        # Parser workers, while a cold build needs them; perhaps started before the daemon
        # loaded, already parsing a tier (``head_start``).
        self._pool: ParsePool | None = pool
        self._cold = False  # a cold build is coming: watch once it is done
        self._build_done = asyncio.Event()  # set (on the loop) as each build finishes

    # -- lifecycle ---------------------------------------------------------------

    async def open(self) -> None:
        """Open (or create) each tier's folder and index; clear temp files a crash left."""
        loop = self._loop = asyncio.get_running_loop()
        for tier in self._tier_list:
            await loop.run_in_executor(self._writer, os.makedirs, tier.root, 0o755, True)
            store = await loop.run_in_executor(self._writer, self._open_store, tier)
            stale = await loop.run_in_executor(self._writer, durable.remove_stale_temps, tier.root)
            if stale:
                log.warning("removed temp files left by a crash", extra={"files": stale})
            self.tiers[tier.name] = TierState(tier, store)
        self._cold = await loop.run_in_executor(self._writer, self._survey)

    async def start(self) -> None:
        """Reconcile every tier against the index it has (never a rebuild), then watch."""
        self.queue.start()
        initial = [self.queue.submit(JobKey(name, TREE, "")) for name in self.tiers]
        self._tasks.append(asyncio.create_task(self._reconcile_timer(), name="reconcile"))
        if any(hasattr(state.store, "take_lease") for state in self.tiers.values()):
            self._tasks.append(asyncio.create_task(self._lease_timer(), name="lease"))
        if self._cold:
            self._tasks.append(asyncio.create_task(self._watch_after(initial), name="watcher"))
            return
        self._tasks.append(asyncio.create_task(self._watch(), name="watcher"))
        await self._probe_watcher()

    async def _watch_after(self, initial: list[asyncio.Future[Any]]) -> None:
        """Start watching once the cold builds are done. Every page a build writes to the
        index beside the notes is an inotify event the watcher has to read and drop (it
        made a 10k-file build half as slow again); what changed meanwhile is found by the
        reconcile queued here, and writes through the API index themselves."""
        await asyncio.gather(*initial, return_exceptions=True)
        while any(s.build is not None for s in self.tiers.values()):
            self._build_done.clear()
            await self._build_done.wait()
        for name in self.tiers:
            with contextlib.suppress(RuntimeError):
                self.queue.submit(JobKey(name, TREE, ""))
        probe = asyncio.create_task(self._probe_watcher(), name="probe")
        self._tasks.append(probe)
        await self._watch()

    async def _probe_watcher(self) -> None:
        if not await watcher.probe([s.tier for s in self.tiers.values()], self.watcher_ready):
            log.warning(
                "file watcher not confirmed; direct edits are picked up by the reconcile scan",
                extra={"interval_s": self.reconcile_interval},
            )

    async def stop(self) -> None:
        """Stop noticing changes, then finish every job already accepted."""
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.queue.drain_and_stop()

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for state in self.tiers.values():
            await loop.run_in_executor(self._writer, self._drop_build, state)  # the next start
            await loop.run_in_executor(self._writer, state.store.close)  # completes it
        await loop.run_in_executor(self._writer, self._stop_pool)
        self._writer.shutdown()
        self._readers.shutdown()

    async def _watch(self) -> None:
        """Run the watcher; if it dies, say so, rescan, and start it again."""
        tiers = [s.tier for s in self.tiers.values()]
        while True:
            try:
                await watcher.watch(
                    tiers,
                    self.queue,
                    self._stop,
                    self.watcher_ready,
                    self._other_file,
                    self._any_file,
                )
                return
            except Exception as exc:
                self.watcher_error = str(exc)
                self.watcher_ready.clear()
                log.error("file watcher failed; restarting", extra={"error": str(exc)})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 1.0)
            if self._stop.is_set():
                return
            for name in self.tiers:  # catch what happened while nobody watched
                self.queue.submit(JobKey(name, TREE, ""))
            self._tasks.append(
                asyncio.create_task(watcher.probe(tiers, self.watcher_ready), name="probe")
            )

    def _other_file(self, tier: str, rel: str) -> None:
        for notify in self.hooks.file_changed:
            notify(tier, rel)

    def _any_file(self, tier: str, rel: str) -> None:
        for notify in self.hooks.watched:
            notify(tier, rel)

    async def _reconcile_timer(self) -> None:
        while True:
            await asyncio.sleep(self.reconcile_interval)
            await self.probe()
            for name, state in self.tiers.items():
                self.queue.submit(JobKey(name, TREE, ""))
                if state.changes_since_optimize >= OPTIMIZE_AFTER_CHANGES:
                    self.queue.submit(JobKey(name, OPTIMIZE))

    async def _lease_timer(self) -> None:
        """A standby of a shared store tries its writer lease every second, so that it
        takes over within seconds of the writer's death, not at the next reconcile; once
        it has it, it reconciles the tier (changes made while it stood by were refused)."""
        while True:
            await asyncio.sleep(LEASE_RETRY_S)
            for name, state in self.tiers.items():
                take = getattr(state.store, "take_lease", None)
                if take is not None and await self.read(take):
                    self.queue.submit(JobKey(name, TREE, ""))

    # -- jobs (run on the writer thread) ---------------------------------------------

    async def write(self, tier: str, path: str, job: Callable[[TierState], C]) -> C:
        """Run ``job`` as one FIFO job on the writer thread, after every job before it.

        A caller that gives up while the job waits withdraws it, so it never runs;
        once running, it finishes, as a write whose answer was lost.
        """
        key = JobKey(tier, WRITE, path, next(self._tickets))
        self._writes[key] = job
        try:
            future = self.queue.submit(key)
        except RuntimeError as exc:  # shutting down: the job was never queued
            self._writes.pop(key, None)
            raise ApiError(503, "shutting_down", f"{exc}; nothing was written") from None
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if self.queue.withdraw(key):
                self._writes.pop(key, None)
            raise

    def mark_broken(self, tier: str, reason: str) -> None:
        """The tier's index is unusable: say so, and queue its rebuild (once)."""
        state = self.tiers[tier]
        if state.broken is not None:
            return
        state.broken = reason
        log.error("index unusable; rebuilding it from markdown",
                  extra={"tier": tier, "reason": reason})  # fmt: skip
        with contextlib.suppress(RuntimeError):  # shutting down: the next start rebuilds
            self.queue.submit(JobKey(tier, HEAL))

    def raise_if_broken(self, tier: str) -> None:
        """A 503 saying when to retry, while the tier's index is being rebuilt."""
        broken = self.tiers[tier].broken
        if broken is not None:
            raise ApiError(
                503, "index_rebuilding", f"the {tier} index is being rebuilt from the "
                f"markdown ({broken}); retry in a few seconds", {"retry_after": RETRY_AFTER_S},
            )  # fmt: skip

    async def check(self, tier: str, exc: BaseException | None = None) -> None:
        """Look for a broken index (after ``exc``, or its file gone, replaced or
        overwritten) on a search thread; mark it and raise the 503 if it is broken."""
        state = self.tiers[tier]
        if state.broken is None:
            reason = await self.read(state.store.problem, exc)
            if reason is not None:
                self.mark_broken(tier, reason)
        self.raise_if_broken(tier)

    async def probe(self) -> None:
        """Check every tier's index file now; a monitor's health poll finds damage first."""
        for name in self.tiers:
            with contextlib.suppress(ApiError):
                await self.check(name)

    def _changed(self) -> None:
        if self._loop is not None:
            for notify in self.hooks.index_changed:
                self._loop.call_soon_threadsafe(notify)

    # -- reading ------------------------------------------------------------------

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a read of the committed index on a search thread."""
        return await asyncio.get_running_loop().run_in_executor(self._readers, fn, *args)

    def for_scope(self, scope: str, lead_has_crew: bool = False) -> list[TierState]:
        """The local tiers a scope covers. With ``lead_has_crew``, a crew tier served by
        the lead is left for the caller to ask there instead of being an error."""
        if scope not in SCOPES:
            raise ApiError(400, "bad_scope", f"scope must be one of {', '.join(SCOPES)}")
        names = ["agent", "crew"] if scope == "both" else [scope]
        if lead_has_crew:
            names = [n for n in names if n != "crew"]
        missing = [n for n in names if n not in self.tiers]
        if missing:
            owner = " (the crew lead owns it)" if missing[0] == "crew" else ""
            raise ApiError(
                503,
                "tier_unavailable",
                f"this sidecar (role {self.role}) does not serve the {missing[0]} tier{owner}",
            )
        return [self.tiers[n] for n in names]

    def reindex(self, scope: str) -> dict[str, Any]:
        """Queue a full rebuild; searches answer from the old index until it commits."""
        states = self.for_scope(scope)
        for state in states:
            self.queue.submit(JobKey(state.tier.name, REBUILD))
        return {
            "accepted": True,
            "scopes": [s.tier.name for s in states],
            "queue_depth": self.queue.depth(),
        }

    async def status(self, scope: str) -> dict[str, Any]:
        """One local tier's index: its size and whether searches see all of it yet."""
        (state,) = self.for_scope(scope)
        with contextlib.suppress(ApiError):
            await self.check(scope)
        stats: StoreStats | None = None
        if state.broken is None:
            try:
                stats = await self.read(state.store.stats)
            except Exception as exc:
                with contextlib.suppress(ApiError):
                    await self.check(scope, exc)
                if state.broken is None:
                    raise
        rebuilding = self.queue.pending(scope, REBUILD) or state.broken is not None
        body: dict[str, Any] = {
            "scope": scope,
            **(stats or StoreStats(0, 0, 0, None)).to_json(),
            "search_ready": state.reconciled and not rebuilding,
            "indexing": rebuilding or not state.reconciled,
            "queue_depth": self.queue.depth(scope),
            "skipped": [
                {"file": rel, "reason": why} for rel, why in sorted(dict(state.skipped).items())
            ],
        }
        if state.broken is not None:
            body["broken"] = state.broken
        progress = state.progress
        if progress is not None and progress.state == "building":
            body["build"] = progress.to_json()
        return body

    def health(self, reasons: list[str]) -> dict[str, Any]:
        """Each local tier's state, adding every reason it is degraded to ``reasons``."""
        tiers: dict[str, Any] = {}
        for name, state in self.tiers.items():
            info: dict[str, Any] = {
                "root": str(state.tier.root),
                "state": "ready" if state.reconciled else "indexing",
                "queue_depth": self.queue.depth(name),
                "last_reconcile": iso(state.last_reconcile),
            }
            if state.broken is not None:
                info["state"] = "rebuilding"
                info["broken"] = state.broken
                reasons.append(f"{name}: index unusable, rebuilding from markdown: {state.broken}")
            elif self.queue.pending(name, REBUILD):
                info["state"] = "rebuilding"
                reasons.append(f"{name}: index rebuilding")
            elif not state.reconciled:
                reasons.append(f"{name}: initial index scan in progress")
            error = self.queue.last_error.get(name)
            if error:
                info["last_error"] = error
            skipped = len(state.skipped)
            info["skipped_files"] = skipped
            if skipped:
                reasons.append(
                    f"{name}: {skipped} file(s) not indexed; /memory/status?scope={name} "
                    "names them and says why"
                )
            tiers[name] = info
        return tiers

    def watcher_reason(self) -> str | None:
        if self.watcher_ready.is_set():
            return None
        why = f": {self.watcher_error}" if self.watcher_error else " not confirmed"
        return f"file watcher down{why}; direct edits wait for the reconcile scan"
