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
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from sidecar import metrics
from sidecar.disk import durable
from sidecar.disk.tiers import SCOPES, Tier, walk_markdown
from sidecar.errors import ApiError
from sidecar.index import indexer, watcher
from sidecar.index.build import BUILD_MIN_FILES, BUILDING, POOL_MIN_FILES, Build
from sidecar.index.parse_pool import ParsePool
from sidecar.index.progress import BuildProgress
from sidecar.index.queue import (
    BUILD,
    FILE,
    HEAL,
    OPTIMIZE,
    REBUILD,
    TREE,
    WRITE,
    JobKey,
    ReindexQueue,
)
from sidecar.index.store import IndexStore, StoreStats, iso

log = logging.getLogger(__name__)

OPTIMIZE_AFTER_CHANGES = 200
RETRY_AFTER_S = 2  # what a search of a tier being rebuilt is told to wait
HEAL_RETRY_S = 5.0  # between attempts to rebuild an index that failed to rebuild
LEASE_RETRY_S = 1.0  # a standby's attempts at a shared store's writer lease
T = TypeVar("T")


@dataclass(slots=True)
class TierState:
    tier: Tier
    store: IndexStore
    reconciled: bool = False  # the startup scan has finished
    changes_since_optimize: int = 0
    last_reconcile: float | None = None
    # Files present but not indexed, and why (hard links, over the size limit, ...).
    skipped: dict[str, str] = field(default_factory=dict)
    broken: str | None = None  # why the index is unusable, until the rebuild answers
    build: Build | None = None  # a cold build under way, between its steps
    # The last full build (cold, reindex or heal): status shows it while it runs, and a
    # metrics scrape may read it from any thread.
    progress: BuildProgress | None = None


class Change(Protocol):
    """What a write job reports back to the worker."""

    @property
    def changed(self) -> bool: ...

    @property
    def index_error(self) -> Exception | None: ...


C = TypeVar("C", bound=Change)


class TierIndexes:
    def __init__(
        self,
        tiers: list[Tier],
        chunk_chars: int,
        reconcile_interval: float,
        role: str,
        open_store: Callable[[Tier], IndexStore],
        pool: ParsePool | None = None,
    ) -> None:
        self._tier_list = tiers
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
        # Told (on the event loop) whenever a job changed an index: the vector sync.
        self.on_change: list[Callable[[], None]] = []
        self.vector_model: str | None = None  # optimize prunes vectors of any other model
        # Told (on the event loop) of changes to files that are not notes: the journal's.
        self.on_file: list[Callable[[str, str], None]] = []
        # Told (on the event loop) of every watcher event below a tier root: MCP resources.
        self.on_event: list[Callable[[str, str], None]] = []
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

    def _survey(self) -> bool:
        """Whether a tier faces a cold build: its index empty (or an interrupted build's)
        and its folder holding enough files. If the build will want the parser workers,
        start them now, while the rest of the daemon starts. On the writer thread."""
        cold = False
        for state in self.tiers.values():
            try:
                unfinished = state.store.get_meta(BUILDING) is not None
                empty = state.store.stats().total_files == 0
            except Exception:  # a broken index: the reconcile finds out and says so
                continue
            if not (empty or unfinished):
                continue
            limit = max(BUILD_MIN_FILES, POOL_MIN_FILES)
            files = sum(1 for _ in itertools.islice(walk_markdown(state.tier.root), limit))
            cold = cold or files >= BUILD_MIN_FILES
            if files >= POOL_MIN_FILES and self._pool is None:
                self._pool = ParsePool()
        return cold

    def _release_pool(self) -> None:
        """Stop the parser workers once no build needs them (they hold memory): none is
        running, and no tier they parse ahead for is still to be reconciled."""
        pool = self._pool
        if pool is None or any(
            s.build is not None or (not s.reconciled and pool.parsing_ahead(s.tier.root))
            for s in self.tiers.values()
        ):
            return
        self._stop_pool()

    @staticmethod
    def _drop_build(state: TierState) -> None:
        if state.build is not None:
            state.build.close()
            state.build = None

    def _stop_pool(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

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
        for notify in self.on_file:
            notify(tier, rel)

    def _any_file(self, tier: str, rel: str) -> None:
        for notify in self.on_event:
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

    def _run_job(self, key: JobKey) -> indexer.SyncResult | Change | None:
        state = self.tiers[key.tier]
        if key.kind in (HEAL, REBUILD) and state.broken is not None:
            try:
                return self._heal(state)
            except Exception:
                self._retry_heal(key.tier)
                raise
        if state.broken is not None and key.kind in (FILE, TREE, OPTIMIZE, BUILD):
            return None  # the rebuild under way reads every file anyway
        try:
            return self._run(state, key)
        except Exception as exc:
            self._report_damage(state, exc)
            raise

    def _run(self, state: TierState, key: JobKey) -> indexer.SyncResult | Change | None:
        root, store, cap = state.tier.root, state.store, self.chunk_chars
        if state.build is not None and key.kind in (FILE, WRITE):
            state.build.touch(key.path)  # this job reads the file later than the build's walk
        if key.kind == FILE:
            result = indexer.sync_file(store, root, key.path, cap, state.skipped)
        elif key.kind == TREE and not key.path:
            if state.build is not None:
                return None  # the build under way covers the whole tier
            reconciled = self._reconcile(state)
            if reconciled is None:
                return None  # a cold build started
            result = reconciled
        elif key.kind == TREE:
            if state.build is not None:
                state.build.touch(key.path, tree=True)
            result = indexer.sync_tree(store, root, key.path, cap, state.skipped)
        elif key.kind == BUILD:
            if state.build is not None:
                self._build_step(state)
            return None
        elif key.kind == REBUILD:
            log.info("index rebuild started; searches use the old index until it is done",
                     extra={"tier": key.tier})  # fmt: skip
            progress = self._begin(state, "reindex")
            store.replace_all(self._counted(indexer.load_tree(root, cap, state.skipped), progress))
            if state.build is not None or store.get_meta(BUILDING) is not None:
                store.set_meta(BUILDING, None)  # a cold build under way: this one replaced it
            self._finish(state, progress)
            self._release_pool()
            state.changes_since_optimize = 0
            self._optimize(store)
            self._changed()
            log.info("index rebuilt", extra=progress.log_fields())
            return None
        elif key.kind == WRITE:
            done = self._writes.pop(key)(state)
            if done.changed:
                state.changes_since_optimize += 1
            self._changed()
            if done.index_error is not None:  # the write stands; the index may need healing
                self._report_damage(state, done.index_error)
            return done
        elif key.kind == OPTIMIZE:
            self._optimize(store)
            state.changes_since_optimize = 0
            return None
        else:
            raise ValueError(f"unknown job kind {key.kind}")
        state.changes_since_optimize += result.changed
        if result.changed:
            self._changed()
            log.debug("reindexed", extra={"tier": key.tier, "path": key.path, "kind": key.kind})
        return result

    def _reconcile(self, state: TierState) -> indexer.SyncResult | None:
        """The whole tier against its index. Many files the index does not hold (a cold
        start, or a build a crash interrupted) start a build in steps instead of being
        indexed one transaction each; returns None then."""
        store, root, cap = state.store, state.tier.root, self.chunk_chars
        unfinished = store.get_meta(BUILDING)
        plan = indexer.plan_tree(store, root, "", state.skipped)
        bulk = len(plan.new) >= BUILD_MIN_FILES or unfinished is not None
        if self._pool is not None and not (bulk and len(plan.new) >= POOL_MIN_FILES):
            self._pool.drop_ahead(root)  # parsed ahead for a build that is not coming
        result = indexer.SyncResult(unchanged=plan.unchanged)
        for rel in plan.changed if bulk else [*plan.changed, *plan.new]:
            result.add(indexer.sync_file(store, root, rel, cap, state.skipped))
        if plan.vanished:
            result.removed += store.remove_files(plan.vanished)
        if not bulk:
            self._release_pool()
            state.reconciled = True
            state.last_reconcile = time.time()
            return result
        if result.changed:
            self._changed()
        name = state.tier.name
        if unfinished is not None:
            log.warning("completing an index build that was interrupted",
                        extra={"tier": name, "started": unfinished})  # fmt: skip
        store.set_meta(BUILDING, iso(time.time()))
        progress = self._begin(state, "cold", len(plan.new))
        if len(plan.new) >= POOL_MIN_FILES and self._pool is None:
            self._pool = ParsePool()
        pool = self._pool if len(plan.new) >= POOL_MIN_FILES else None
        state.build = Build(progress, root, plan.new, cap, pool)
        workers = pool.workers if pool is not None else 0
        log.info("index build started; searches answer from the files indexed so far",
                 extra={**progress.log_fields(), "workers": workers,
                        "head_start_files": state.build.head_start})  # fmt: skip
        self._build_step(state)
        return None

    def _build_step(self, state: TierState) -> None:
        """One step of the cold build; queue the next one behind the jobs that came in
        meanwhile, or finish it."""
        build = state.build
        assert build is not None

        def waiting() -> bool:  # another job is queued (the running one is this), or stop
            return self.queue.depth() > 1 or self._stop.is_set()

        try:
            done = build.step(state.store, state.skipped, waiting)
            # Go on while no other job waits: each hop through the event loop costs time
            # the loop may be spending on the daemon's start.
            while not done and not waiting():
                done = build.step(state.store, state.skipped, waiting)
        except BaseException:
            self._drop_build(state)  # the marker stays: the next reconcile starts it again
            build.progress.finish("failed")
            self._release_pool()
            self._build_ended()
            raise
        if not done:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._continue_build, state.tier.name)
            return
        # Every file is searchable now: say so before the housekeeping, whose commit may
        # wait on a WAL checkpoint's fsync (an unset marker only costs a next start a walk).
        self._finish(state, build.progress)
        state.store.set_meta(BUILDING, None)
        self._release_pool()
        state.changes_since_optimize += build.added
        self._changed()
        log.info("index build done; every file is searchable", extra=build.progress.log_fields())
        if self._loop is not None:  # after a bulk load, not 200 changes later
            self._loop.call_soon_threadsafe(self._optimize_soon, state.tier.name)

    def _continue_build(self, tier: str) -> None:
        """On the event loop. When stopping, the build is left as it is: the marker
        makes the next start complete it."""
        if not self._stop.is_set():
            with contextlib.suppress(RuntimeError):
                self.queue.submit(JobKey(tier, BUILD))

    def _optimize_soon(self, tier: str) -> None:
        """On the event loop: a freshly built index gets its statistics (PostgreSQL's
        planner reads postings by them) and merged segments (FTS5) before searches pile up."""
        if not self._stop.is_set():
            with contextlib.suppress(RuntimeError):
                self.queue.submit(JobKey(tier, OPTIMIZE))

    def _begin(self, state: TierState, kind: str, total: int | None = None) -> BuildProgress:
        if total is None:
            total = indexer.count_notes(state.tier.root)
        state.progress = BuildProgress(state.tier.name, kind, total)
        return state.progress

    @staticmethod
    def _counted(items: Iterator[T], progress: BuildProgress) -> Iterator[T]:
        for item in items:
            yield item
            progress.advance(1)

    def _finish(self, state: TierState, progress: BuildProgress) -> None:
        """A full build is done: every file searchable. Record it for /metrics."""
        progress.finish()
        self._drop_build(state)  # done, or replaced by the rebuild that finished
        state.reconciled = True
        state.last_reconcile = time.time()
        metrics.INDEX_BUILDS.labels(tier=progress.tier, kind=progress.kind).inc()
        metrics.INDEX_BUILD_SECONDS.labels(tier=progress.tier).observe(progress.seconds)
        self._build_ended()

    def _build_ended(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._build_done.set)

    def _report_damage(self, state: TierState, exc: BaseException) -> None:
        """On the writer thread: if ``exc`` shows the index is unusable, mark it broken."""
        reason = state.store.problem(exc)
        if reason is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self.mark_broken, state.tier.name, reason)

    def _heal(self, state: TierState) -> None:
        """Start the tier's index afresh and rebuild it from the markdown; the tier is
        ready again only once the rebuilt index has answered a query. An index that was
        only out of reach (a database server restarting) is kept and caught up instead:
        dropping it would leave every reader of it with empty results for the length of
        a rebuild, and a standby, which may not write, could never heal at all."""
        name = state.tier.name
        if state.store.intact():
            state.broken = None
            log.warning("index reachable again; catching up with what changed meanwhile",
                        extra={"tier": name})  # fmt: skip
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._resubmit_reconcile, name)
            return
        log.warning("rebuilding an unusable index from markdown",
                    extra={"tier": name, "reason": state.broken})  # fmt: skip
        os.makedirs(state.tier.root, 0o755, exist_ok=True)
        self._drop_build(state)  # the reset drops it; this rebuild reads every file
        if self._pool is not None:
            self._pool.drop_ahead(state.tier.root)
        self._release_pool()
        state.store.reset()
        progress = self._begin(state, "heal")
        items = indexer.load_tree(state.tier.root, self.chunk_chars, state.skipped)
        state.store.replace_all(self._counted(items, progress))
        state.store.stats()  # answers, or the job fails and the tier stays broken
        state.broken = None
        self._finish(state, progress)
        state.changes_since_optimize = 0
        self._changed()
        log.warning("index healed", extra=progress.log_fields())

    def _retry_heal(self, tier: str) -> None:
        """A rebuild failed (the disk full, the index path a directory): try again later,
        for as long as the tier stays broken."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(
                self._loop.call_later, HEAL_RETRY_S, self._resubmit_heal, tier
            )

    def _resubmit_reconcile(self, tier: str) -> None:
        """After an outage: catch up, or go on with the build the outage interrupted (its
        steps were dropped while the tier was broken, so nothing else would)."""
        if self._stop.is_set():
            return
        kind = BUILD if self.tiers[tier].build is not None else TREE
        with contextlib.suppress(RuntimeError):  # shutting down: the next start reconciles
            self.queue.submit(JobKey(tier, kind, ""))

    def _resubmit_heal(self, tier: str) -> None:
        if self.tiers[tier].broken is not None and not self._stop.is_set():
            with contextlib.suppress(RuntimeError):
                self.queue.submit(JobKey(tier, HEAL))

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
            for notify in self.on_change:
                self._loop.call_soon_threadsafe(notify)

    def _optimize(self, store: IndexStore) -> None:
        store.optimize()
        if self.vector_model is not None:  # vectors of text that is gone, or of an old model
            store.prune_vectors(self.vector_model)

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

    # -- read by a metrics scrape, from any thread ---------------------------------

    def queue_depth(self, tier: str) -> int:
        """Reindex jobs of ``tier`` waiting or running."""
        return self.queue.depth(tier)

    def oldest_job_age(self, tier: str) -> float | None:
        """Seconds the oldest job of ``tier`` waiting or running has been queued."""
        return self.queue.oldest_age(tier)

    def build_progress(self, tier: str) -> BuildProgress | None:
        """The tier's last full build (``state`` says whether it still runs)."""
        state = self.tiers.get(tier)
        return state.progress if state is not None else None

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
