"""What runs on a tier index's writer thread: the jobs of the reindex queue, the cold
build in steps, and healing an index found unusable.

``TierIndexes`` runs these; searches and status read the last committed index on
other threads meanwhile, so a rebuild never stalls them or the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from sidecar import metrics
from sidecar.disk.tiers import Tier, walk_markdown
from sidecar.index import indexer
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
from sidecar.index.store import IndexStore, iso

log = logging.getLogger(__name__)

HEAL_RETRY_S = 5.0  # between attempts to rebuild an index that failed to rebuild
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


class IndexJobs:
    """The writer-thread half of ``TierIndexes``, which provides the state below."""

    tiers: dict[str, TierState]
    chunk_chars: int
    queue: ReindexQueue
    vector_model: str | None
    _writes: dict[JobKey, Callable[[TierState], Change]]
    _pool: ParsePool | None
    _loop: asyncio.AbstractEventLoop | None
    _stop: asyncio.Event
    _build_done: asyncio.Event
    _changed: Callable[[], None]  # tells whoever follows the index that it changed
    mark_broken: Callable[[str, str], None]  # on the loop: the tier's index is unusable

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

    def _optimize(self, store: IndexStore) -> None:
        store.optimize()
        if self.vector_model is not None:  # vectors of text that is gone, or of an old model
            store.prune_vectors(self.vector_model)

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
