"""The daemon's core: tier indexes, the reindex worker, the watcher and the reconcile timer.

Everything that blocks (SQLite, file reads) runs on thread pools: one writer
thread behind the FIFO queue, a small pool for searches, so a rebuild never
stalls the event loop or the searches answering from the last committed index.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sidecar.config import Settings
from sidecar.context import block as memory_block
from sidecar.crew.client import LeadClient, LeadError, LeadUnavailable
from sidecar.disk import durable
from sidecar.disk.tiers import SCOPES, Tier, UnsafePath, read_regular
from sidecar.errors import ApiError
from sidecar.index import indexer, watcher
from sidecar.index.chunking import split_lines
from sidecar.index.queue import (
    FILE,
    OPTIMIZE,
    REBUILD,
    TREE,
    WRITE,
    JobKey,
    ReindexQueue,
)
from sidecar.index.sqlite import SQLiteStore
from sidecar.index.store import Hit, IndexStore, StoreStats
from sidecar.notes import files as memory_files
from sidecar.notes import write_job
from sidecar.notes.files import CapExceeded
from sidecar.retrieval.embedders.base import Embedder, EmbedderError
from sidecar.retrieval.embedders.factory import HOW_TO_ENABLE, load_embedder
from sidecar.retrieval.modes import DENSE, HYBRID, MODES, SPARSE
from sidecar.retrieval.query import MODE_FALLBACK, MODE_TERMS, PlannedQuery, plan, terms
from sidecar.retrieval.ranking import Result, dense_fill_last, rank_tier, rrf_fuse
from sidecar.safety import scan

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors
    from sidecar.retrieval.vector_sync import VectorSync

log = logging.getLogger(__name__)


OPTIMIZE_AFTER_CHANGES = 200
EMBEDDER_RETRY_S = 30.0  # how often to ask again for a configured embedder that failed


@dataclass(slots=True)
class TierState:
    tier: Tier
    store: IndexStore
    reconciled: bool = False  # the startup scan has finished
    changes_since_optimize: int = 0
    last_reconcile: float | None = None


@dataclass(slots=True)
class SearchResponse:
    results: list[Result]
    query_mode: str
    query_terms: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)  # what could not be searched, and why
    mode: str = SPARSE  # the retrieval that ran: hybrid, sparse or dense

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "results": [r.to_json(self.query_terms) for r in self.results],
            "count": len(self.results),
            "query_mode": self.query_mode,
            "mode": self.mode,
        }
        if self.degraded:
            body["degraded"] = self.degraded
        return body


def _iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds") if ts else None


def stats_json(stats: StoreStats) -> dict[str, Any]:
    return {
        "total_files": stats.total_files,
        "total_chunks": stats.total_chunks,
        "indexed_at": _iso(stats.indexed_at),
        "total_size_kb": round(stats.total_bytes / 1024, 1),
    }


class MemoryService:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.tiers: dict[str, TierState] = {}
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="sidecar-index")
        self._readers = ThreadPoolExecutor(2, thread_name_prefix="sidecar-search")
        self._files = ThreadPoolExecutor(2, thread_name_prefix="sidecar-files")
        self._embedding = ThreadPoolExecutor(1, thread_name_prefix="sidecar-embed")
        # Query embeddings get their own thread: a slow or hung embedder must not hold
        # the search threads that BM25-only searches and status need.
        self._queries = ThreadPoolExecutor(1, thread_name_prefix="sidecar-query-embed")
        self.embedder: Embedder | None = None
        self.embedder_error: str | None = None  # why there is no embedder, if one was wanted
        self.vectors: VectorSync | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._file_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._writes: dict[JobKey, write_job.Builder] = {}  # a queued write's content builder
        self._write_tickets = itertools.count(1)
        self.queue = ReindexQueue(self._run_job, self._writer)
        self._stop = asyncio.Event()
        self.watcher_ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.watcher_error: str | None = None
        self.lead: LeadClient | None = None
        if settings.lead_url:
            self.lead = LeadClient(settings.lead_url, settings.crew_token or "")

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        for tier in self.settings.tiers():
            await loop.run_in_executor(self._writer, os.makedirs, tier.root, 0o755, True)
            store = await loop.run_in_executor(self._writer, SQLiteStore, tier.index_path)
            stale = await loop.run_in_executor(self._files, durable.remove_stale_temps, tier.root)
            if stale:
                log.warning("removed temp files left by a crash", extra={"files": stale})
            self.tiers[tier.name] = TierState(tier, store)
        await self._start_vectors()
        self.queue.start()
        if self.lead is not None:
            await self.lead.start()
        for name in self.tiers:  # reconcile against the existing index, never rebuild
            self.queue.submit(JobKey(name, TREE, ""))
        self._tasks.append(asyncio.create_task(self._watch(), name="watcher"))
        self._tasks.append(asyncio.create_task(self._reconcile_timer(), name="reconcile"))
        if not await watcher.probe([s.tier for s in self.tiers.values()], self.watcher_ready):
            log.warning(
                "file watcher not confirmed; direct edits are picked up by the reconcile scan",
                extra={"interval_s": self.settings.reconcile_interval},
            )
        log.info(
            "sidecar started",
            extra={
                "role": self.settings.role,
                "tiers": {n: str(s.tier.root) for n, s in self.tiers.items()},
                "retrieval": self.retrieval(),
                "model": self.embedder.model_id if self.embedder else None,
            },
        )

    async def _start_vectors(self) -> None:
        """Load the embedder and start the background vector sync; sparse-only if none.

        An Ollama server that is not up yet is asked again every ``EMBEDDER_RETRY_S``:
        hybrid search starts by itself once it answers.
        """
        if await self._load_embedder():
            self._start_sync()
            return
        why = self.embedder_error or "no embedder configured (--embedder none)"
        log.warning("search is sparse-only (BM25): %s", why, extra={"enable": HOW_TO_ENABLE})
        if self.settings.embedder == "ollama":
            self._tasks.append(asyncio.create_task(self._retry_embedder(), name="embedder"))

    async def _load_embedder(self) -> bool:
        settings = self.settings
        try:
            self.embedder = await asyncio.get_running_loop().run_in_executor(
                self._embedding, load_embedder, settings.embedder, settings.embed_threads,
                settings.ollama_url, settings.ollama_model,
            )  # fmt: skip
        except EmbedderError as exc:
            self.embedder_error = str(exc)
            return False
        self.embedder_error = None
        return self.embedder is not None

    async def _retry_embedder(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), EMBEDDER_RETRY_S)
            if not self._stop.is_set() and await self._load_embedder():
                log.warning(
                    "embedder available; hybrid search is on",
                    extra={"model": self.embedder.model_id if self.embedder else None},
                )
                self._start_sync()
                return

    def _start_sync(self) -> None:
        from sidecar.retrieval.vector_sync import (  # numpy: only with vectors
            TierVectors,
            VectorSync,
        )

        assert self.embedder is not None
        tiers = {n: TierVectors(s.store, self.embedder) for n, s in self.tiers.items()}
        self.vectors = VectorSync(self.embedder, tiers, self._embedding)
        self._tasks.append(asyncio.create_task(self.vectors.run(), name="vector-sync"))

    def retrieval(self) -> str:
        """``hybrid`` while an embedder is loaded and working, else ``sparse-only``."""
        if self.vectors is None or self.vectors.state.embedder_error is not None:
            return "sparse-only"
        return "hybrid"

    def _index_changed(self) -> None:
        """Called from the writer thread after a job changed an index."""
        if self.vectors is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self.vectors.notify)

    async def stop(self) -> None:
        """Stop noticing changes, then finish every job already accepted."""
        self._stop.set()
        if self.vectors is not None:
            self.vectors.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.queue.drain_and_stop()
        if self.lead is not None:
            await self.lead.close()
        # A batch already embedding finishes and is stored before its store closes.
        await asyncio.to_thread(self._embedding.shutdown, cancel_futures=True)
        for state in self.tiers.values():
            await asyncio.get_running_loop().run_in_executor(self._writer, state.store.close)
        self._writer.shutdown()
        self._readers.shutdown()
        self._files.shutdown()
        self._queries.shutdown(wait=False, cancel_futures=True)  # a hung query ends on its own
        if self.embedder is not None:
            self.embedder.close()
        log.info("sidecar stopped")

    async def _watch(self) -> None:
        """Run the watcher; if it dies, say so, rescan, and start it again."""
        tiers = [s.tier for s in self.tiers.values()]
        while True:
            try:
                await watcher.watch(tiers, self.queue, self._stop, self.watcher_ready)
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

    async def _reconcile_timer(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reconcile_interval)
            for name, state in self.tiers.items():
                self.queue.submit(JobKey(name, TREE, ""))
                if state.changes_since_optimize >= OPTIMIZE_AFTER_CHANGES:
                    self.queue.submit(JobKey(name, OPTIMIZE))

    # -- the worker (runs on the writer thread) ------------------------------

    def _run_job(self, key: JobKey) -> indexer.SyncResult | write_job.WriteJob | None:
        state = self.tiers[key.tier]
        root, store, cap = state.tier.root, state.store, self.settings.chunk_chars
        if key.kind == FILE:
            result = indexer.sync_file(store, root, key.path, cap)
        elif key.kind == TREE:
            result = indexer.sync_tree(store, root, key.path, cap)
            if not key.path:
                state.reconciled = True
                state.last_reconcile = time.time()
        elif key.kind == REBUILD:
            log.info("index rebuild started; searches use the old index until it is done",
                     extra={"tier": key.tier})  # fmt: skip
            started = time.monotonic()
            store.replace_all(indexer.load_tree(root, cap))
            state.reconciled = True
            state.changes_since_optimize = 0
            self._optimize(store)
            self._index_changed()
            log.info(
                "index rebuilt",
                extra={"tier": key.tier, "seconds": round(time.monotonic() - started, 3)},
            )
            return None
        elif key.kind == WRITE:
            done = write_job.write_and_index(
                store, root, key.path, self._writes.pop(key), self._files, cap
            )
            if done.outcome is not None:
                state.changes_since_optimize += 1
            self._index_changed()
            return done
        elif key.kind == OPTIMIZE:
            self._optimize(store)
            state.changes_since_optimize = 0
            return None
        else:
            raise ValueError(f"unknown job kind {key.kind}")
        state.changes_since_optimize += result.changed
        if result.changed:
            self._index_changed()
            log.debug("reindexed", extra={"tier": key.tier, "path": key.path, "kind": key.kind})
        return result

    def _optimize(self, store: IndexStore) -> None:
        store.optimize()
        if self.embedder is not None:  # vectors of text that is gone, or of an old model
            store.prune_vectors(self.embedder.model_id)

    # -- queries -----------------------------------------------------------

    def _scope_tiers(self, scope: str, proxied: bool = False) -> list[TierState]:
        """The local tiers a scope covers. With ``proxied``, a crew tier served by the
        lead is left for the caller to ask there instead of being an error."""
        if scope not in SCOPES:
            raise ApiError(400, "bad_scope", f"scope must be one of {', '.join(SCOPES)}")
        names = ["agent", "crew"] if scope == "both" else [scope]
        if proxied and self.lead is not None:
            names = [n for n in names if n != "crew"]
        missing = [n for n in names if n not in self.tiers]
        if missing:
            owner = " (the crew lead owns it)" if missing[0] == "crew" else ""
            raise ApiError(
                503,
                "tier_unavailable",
                f"this sidecar (role {self.settings.role}) does not serve the "
                f"{missing[0]} tier{owner}",
            )
        return [self.tiers[n] for n in names]

    async def _search_tier(
        self, state: TierState, planned: PlannedQuery | None, limit: int, mode: str,
        query_vector: Vectors | None,
    ) -> tuple[list[Result], str]:  # fmt: skip
        tier_vectors = self.vectors.tiers[state.tier.name] if self.vectors else None
        return await asyncio.get_running_loop().run_in_executor(
            self._readers, rank_tier, state.store, state.tier.name, planned, limit, mode,
            query_vector, tier_vectors,
        )  # fmt: skip

    async def _search_lead(self, query: str, limit: int, mode: str | None) -> SearchResponse:
        """The crew half of a member's search, answered by the lead's sidecar."""
        assert self.lead is not None
        request: dict[str, Any] = {"query": query, "scope": "crew", "limit": limit}
        if mode is not None:
            request["mode"] = mode
        try:
            body = await self.lead.request("POST", "/memory/search", request)
        except LeadError as exc:
            raise _from_lead(exc) from None
        results = []
        for r in body["results"]:
            hit = Hit(r["file"], r["start_line"], r["end_line"], r["heading"], r["snippet"],
                      r["score"])  # fmt: skip
            results.append(Result("crew", hit, r["score"], rendered=r, ranks=r.get("ranks")))
        degraded = [f"crew: {d}" for d in body.get("degraded", [])]
        return SearchResponse(results, body["query_mode"], [], degraded, body.get("mode", SPARSE))

    def _search_mode(self, asked: str | None, local: bool) -> str:
        """The retrieval to run: as asked, or hybrid by default when vectors exist.

        ``local``: some tier is searched here (not only the lead's crew tier, which
        the lead ranks with its own embedder)."""
        if asked is None:
            return HYBRID if self.vectors is not None else SPARSE
        if asked not in MODES:
            raise ApiError(400, "bad_mode", f"'mode' must be one of {', '.join(MODES)}")
        if asked == DENSE and self.vectors is None and local:
            raise ApiError(
                503, "dense_unavailable", "no embedder is loaded, so there is no dense index: "
                f"{self.embedder_error or 'started with --embedder none'}; use mode=sparse",
            )  # fmt: skip
        return asked

    async def _query_vector(self, query: str, mode: str) -> tuple[Vectors | None, str | None]:
        """The query's embedding, or None and why not (then the search is sparse-only)."""
        if mode == SPARSE:
            return None, None
        if self.vectors is None:
            return None, f"dense: {self.embedder_error or 'no embedder configured'}"
        # Known down: do not make every search wait for it (a hung server costs a timeout).
        error = self.vectors.state.embedder_error
        if error is None:
            try:
                vector = await asyncio.get_running_loop().run_in_executor(
                    self._queries, self.vectors.embed_query, query
                )
            except EmbedderError as exc:
                error = str(exc)
                self.vectors.embedder_failed(error)
            else:
                if vector is not None:
                    return vector, None
                error = self.vectors.state.embedder_error or "it went down"
        if mode == DENSE:
            raise ApiError(503, "dense_unavailable", f"the embedder failed: {error}")
        return None, f"dense: embedder failed ({error}); ranked by BM25 alone"

    async def search(
        self, query: str, scope: str, limit: int, mode: str | None = None
    ) -> SearchResponse:
        """Each tier ranked by BM25, dense vectors or both; tiers fused by rank; a member
        asks the lead for the crew tier."""
        states = self._scope_tiers(scope, proxied=True)
        asked = mode
        mode = self._search_mode(asked, local=bool(states))
        planned = plan(query)
        if planned is None and mode != DENSE:
            raise ApiError(400, "empty_query", "the query has no searchable words")
        degraded: list[str] = []
        query_vector: Vectors | None = None
        if states:
            query_vector, why_not = await self._query_vector(query, mode)
            if why_not is not None:
                degraded.append(why_not)
                mode = SPARSE
        searches = [self._search_tier(s, planned, limit, mode, query_vector) for s in states]
        names = [s.tier.name for s in states]
        if len(names) < (2 if scope == "both" else 1):  # the crew tier is the lead's
            searches.append(self._search_lead(query, limit, asked))
            names.append("crew")
        outcomes = await asyncio.gather(*searches, return_exceptions=True)
        ranked: dict[str, list[Result]] = {}
        modes: set[str] = set()
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, LeadUnavailable):
                if scope == "crew":
                    raise ApiError(
                        503, "crew_unavailable",
                        f"lead sidecar at {self.settings.lead_url} unreachable: {outcome}",
                    )  # fmt: skip
                degraded.append("crew: lead unreachable")
                continue
            if isinstance(outcome, ApiError) and name == "crew" and scope == "both":
                # The lead refused its half (say dense without an embedder): keep ours.
                degraded.append(f"crew: {outcome.error}: {outcome.detail}")
                continue
            if isinstance(outcome, BaseException):
                raise outcome
            if isinstance(outcome, SearchResponse):  # the lead's answer for the crew tier
                ranked[name] = outcome.results
                modes.add(outcome.query_mode)
                degraded += outcome.degraded
                if scope == "crew":
                    mode = outcome.mode
                continue
            ranked[name], query_mode = outcome
            modes.add(query_mode)
        query_mode = (
            MODE_FALLBACK if MODE_FALLBACK in modes else planned.mode if planned else MODE_TERMS
        )
        if scope == "both":
            everything = sum(len(r) for r in ranked.values())
            results = dense_fill_last(rrf_fuse(ranked, everything))[:limit]
        else:
            results = ranked[scope]
        return SearchResponse(results, query_mode, terms(query), degraded, mode)

    async def status(self, scope: str) -> dict[str, Any]:
        if scope == "both":
            raise ApiError(400, "bad_scope", "status takes scope agent or crew")
        if scope == "crew" and self.lead is not None:
            try:
                return await self.lead.request("GET", "/memory/status?scope=crew")
            except LeadError as exc:
                raise _from_lead(exc) from None
            except LeadUnavailable as exc:
                raise ApiError(
                    503, "crew_unavailable",
                    f"lead sidecar at {self.settings.lead_url} unreachable: {exc}",
                ) from None  # fmt: skip
        (state,) = self._scope_tiers(scope)
        loop = asyncio.get_running_loop()
        stats = await loop.run_in_executor(self._readers, state.store.stats)
        rebuilding = self.queue.pending(scope, REBUILD)
        return {
            "scope": scope,
            **stats_json(stats),
            "search_ready": state.reconciled and not rebuilding,
            "indexing": rebuilding or not state.reconciled,
            "queue_depth": self.queue.depth(scope),
            **(await self._embedding_status(scope)),
        }

    async def _embedding_status(self, scope: str) -> dict[str, Any]:
        """``pending``: chunks searchable by BM25 but not yet by vector."""
        if self.vectors is None:
            why = self.embedder_error or "no embedder configured"
            return {"pending": 0, "embeddings": {"state": "off", "reason": why}}
        tier = self.vectors.tiers[scope]
        lag = await asyncio.get_running_loop().run_in_executor(self._readers, tier.lag)
        sync = self.vectors.state
        error = sync.embedder_error or sync.tier_errors.get(scope)
        info: dict[str, Any] = {
            "model": self.vectors.embedder.model_id,
            "vectors": len(tier.index),
            "pending": lag,
            "embedded_since_start": tier.embedded,
            "state": "failed" if error else "embedding" if lag else "ready",
        }
        if tier.refused:  # searchable by their words only
            info["refused"] = len(tier.refused)
        if error:
            info["error"] = error
        return {"pending": lag, "embeddings": info}

    async def reindex(self, scope: str) -> dict[str, Any]:
        """Queue a full rebuild; searches answer from the old index until it commits."""
        states = self._scope_tiers(scope)
        for state in states:
            self.queue.submit(JobKey(state.tier.name, REBUILD))
        return {
            "accepted": True,
            "scopes": [s.tier.name for s in states],
            "queue_depth": self.queue.depth(),
        }

    async def health(self) -> dict[str, Any]:
        """Overall state with every reason it is degraded; never silent about one."""
        reasons: list[str] = []
        tiers: dict[str, Any] = {}
        for name, state in self.tiers.items():
            info: dict[str, Any] = {
                "root": str(state.tier.root),
                "state": "ready" if state.reconciled else "indexing",
                "queue_depth": self.queue.depth(name),
                "last_reconcile": _iso(state.last_reconcile),
            }
            if self.queue.pending(name, REBUILD):
                info["state"] = "rebuilding"
                reasons.append(f"{name}: index rebuilding")
            elif not state.reconciled:
                reasons.append(f"{name}: initial index scan in progress")
            error = self.queue.last_error.get(name)
            if error:
                info["last_error"] = error
            tiers[name] = info
        if self.lead is not None:
            tiers["crew"] = self.lead.health()
            if not self.lead.reachable:
                reasons.append(f"crew: lead unreachable: {self.lead.last_error or 'not yet asked'}")
        if not self.watcher_ready.is_set():
            why = f": {self.watcher_error}" if self.watcher_error else " not confirmed"
            reasons.append(f"file watcher down{why}; direct edits wait for the reconcile scan")
        writable, why_not = await self.write_health()
        if not writable:
            reasons.append(f"writes unavailable: {why_not}")
        if self.vectors is not None:
            sync = self.vectors.state
            if sync.embedder_error:
                reasons.append(f"embedder failed, searches are sparse-only: {sync.embedder_error}")
            reasons += [f"{n}: vectors not up to date: {e}" for n, e in sync.tier_errors.items()]
            for name, tier in self.vectors.tiers.items():
                refused = tier.refused.copy()  # the embedding thread may be adding to it
                if refused:
                    reasons.append(
                        f"{name}: the embedder refused {len(refused)} chunk(s), searchable "
                        f"by their words only: {next(iter(refused.values()))}"
                    )
        elif self.settings.embedder in ("minilm", "ollama"):
            reasons.append(f"embedder unavailable, searches are sparse-only: {self.embedder_error}")
        body: dict[str, Any] = {
            "status": "degraded" if reasons else "ok",
            "role": self.settings.role,
            "retrieval": self.retrieval(),
            "embedder": self._embedder_health(),
            "watcher": "ready" if self.watcher_ready.is_set() else "down",
            "write_path": {"ok": writable, "reason": why_not},
            "tiers": tiers,
        }
        if reasons:
            body["reasons"] = reasons
        return body

    def _embedder_health(self) -> dict[str, Any]:
        if self.vectors is None:
            return {"model": None, "reason": self.embedder_error or "no embedder configured"}
        info: dict[str, Any] = {
            "model": self.vectors.embedder.model_id,
            "pending": self.vectors.pending(),
        }
        if self.vectors.state.embedder_error:
            info["error"] = self.vectors.state.embedder_error
        return info

    # -- durable writes and reads -----------------------------------------------

    def _writable_tier(self, scope: str) -> TierState:
        if scope == "crew" and self.settings.role != "lead":
            raise ApiError(
                403, "crew_read_only", "crew memory is written by the crew lead; write to "
                "your agent tier (scope=agent) or ask the lead to record it",
            )  # fmt: skip
        (state,) = self._scope_tiers(scope)
        return state

    async def write(self, scope: str, file: object, content: object, mode: str) -> dict[str, Any]:
        """Persist durably and reindex, as one job in the FIFO queue, before answering.

        The answer comes only after the job has committed the new text to the index,
        so a search right after a successful write finds it.
        """
        if mode not in ("append", "replace"):
            raise ApiError(400, "bad_mode", "'mode' must be append or replace")
        if not isinstance(content, str):
            raise ApiError(400, "bad_content", "'content' must be a string")
        if "\x00" in content:
            raise ApiError(400, "bad_content", "'content' must not contain NUL characters")
        if mode == "append" and not content.strip():
            raise ApiError(400, "bad_content", "nothing to append: 'content' is empty")
        finding = scan(content)
        if finding is not None:
            raise ApiError(
                422, "injection_suspected",
                f"content looks like a prompt injection (category={finding.category}, "
                f"pattern={finding.pattern}); nothing was written. Memory holds notes, not "
                "instructions: describe what happened instead of quoting commands to a model.",
                {"category": finding.category, "pattern": finding.pattern},
            )  # fmt: skip
        target = memory_files.resolve(scope, file)
        state = self._writable_tier(scope)
        caps = self.settings.caps
        cap = caps.for_kind(target.kind)
        lock = self._file_locks.setdefault((scope, target.rel), asyncio.Lock())

        def build(current: bytes | None) -> bytes:
            new = memory_files.compose(current, content, mode)
            if len(new) > cap:
                raise CapExceeded(target.rel, cap, len(new), current)
            projected_tier = state.store.total_bytes() - len(current or b"") + len(new)
            if projected_tier > caps.tier:
                raise CapExceeded(f"the {scope} tier", caps.tier, projected_tier, current)
            return new

        key = JobKey(scope, WRITE, target.rel, next(self._write_tickets))
        async with lock:
            self._writes[key] = build
            try:
                job = self.queue.submit(key)
            except RuntimeError as exc:  # shutting down: the job was never queued
                self._writes.pop(key, None)
                raise ApiError(503, "shutting_down", f"{exc}; nothing was written") from None
            try:
                done: write_job.WriteJob = await asyncio.shield(job)
            except asyncio.CancelledError:
                # The caller gave up. Not started yet: it never will be, and nothing is
                # written. Already running: it finishes, as a write whose answer was lost.
                if self.queue.withdraw(key):
                    self._writes.pop(key, None)
                raise
        if done.error is not None:
            raise write_job.api_error(target, done.error) from done.error
        outcome = done.outcome
        assert outcome is not None
        body: dict[str, Any] = {
            "file": target.rel,
            "scope": scope,
            "bytes_written": len(outcome.new) - len(outcome.old or b"")
            if mode == "append"
            else len(outcome.new),
            "usage": memory_files.usage(len(outcome.new), cap),
            "indexed": done.index_error is None,
        }
        if done.index_error is not None:  # the write stands; only search lags
            self.queue.last_error[scope] = f"write {target.rel}: {done.index_error}"
            body["warning"] = f"written durably, but not yet searchable: {done.index_error}"
            log.warning(
                "reindex after write failed",
                extra={"file": target.rel, "error": str(done.index_error)},
            )
        if 100 * len(outcome.new) >= memory_files.WARN_PCT * cap:
            body["current_entries"] = outcome.new.decode("utf-8", errors="replace")
            body["usage_text"] = memory_files.usage_text(len(outcome.new), cap)
            body["warning"] = " ".join(filter(None, [body.get("warning"),
                f"{target.rel} is at {body['usage_text']} of its cap. Consolidate these "
                "entries now (mode=replace with a merged, shorter version) before the next "
                "append is refused."]))  # fmt: skip
        return body

    async def read(
        self, scope: str, file: object, start_line: int | None = None, end_line: int | None = None
    ) -> dict[str, Any]:
        """Read a memory file (crew files straight from the shared folder, on any role)."""
        target = memory_files.resolve(scope, file)
        if start_line is not None and start_line < 1:
            raise ApiError(400, "bad_range", "'start_line' must be 1 or more")
        if end_line is not None and end_line < (start_line or 1):
            raise ApiError(400, "bad_range", "'end_line' must not be before 'start_line'")
        root = self.settings.agent_dir if scope == "agent" else self.settings.crew_dir
        loop = asyncio.get_running_loop()
        try:
            got = await loop.run_in_executor(self._files, read_regular, root, target.rel)
        except UnsafePath as exc:
            raise write_job.forbidden(target, str(exc)) from None
        if got is None:
            raise ApiError(
                404, "not_found", f"{target.rel} does not exist yet in the {scope} tier; "
                "write to it to create it",
            )  # fmt: skip
        data = got[0]
        lines = split_lines(data.decode("utf-8", errors="replace"))
        first = start_line or 1
        last = min(end_line or len(lines), len(lines))
        content = "\n".join(lines[first - 1 : last])
        body: dict[str, Any] = {
            "file": target.rel,
            "scope": scope,
            "content": content,
            "bytes": len(data),
            "start_line": first,
            "end_line": last,
            "total_lines": len(lines),
        }
        finding = scan(content)
        if finding is not None:  # say so; the MCP tools withhold the text
            body["flagged"] = {"category": finding.category, "pattern": finding.pattern}
        return body

    async def context(
        self,
        budget: int = memory_block.DEFAULT_BUDGET,
        query: str | None = None,
        user_id: str | None = None,
        workspace_id: str | None = None,
    ) -> memory_block.MemoryBlock:
        """The prompt-ready memory block; crew files come from the shared folder."""
        if not 1000 <= budget <= 200_000:
            raise ApiError(400, "bad_budget", "'budget' must be from 1000 to 200000 characters")
        today = memory_files.today_utc()
        agent_dir, crew_dir = self.settings.agent_dir, self.settings.crew_dir

        def load() -> tuple[list[memory_block.Section], ...]:
            return (
                memory_block.agent_sections(agent_dir, today),
                memory_block.crew_sections(crew_dir, today),
                memory_block.operator_sections(crew_dir, user_id, workspace_id),
            )

        loop = asyncio.get_running_loop()
        agent, crew, operator = await loop.run_in_executor(self._files, load)
        hits: list[memory_block.Section] = []
        if query:
            has_crew = "crew" in self.tiers or self.lead is not None
            response = await self.search(query, "both" if has_crew else "agent", 20)
            shown = {("agent", s.label) for s in agent} | {("crew", s.label) for s in crew}
            hits = [
                memory_block.Section(
                    f"{r.source}:{r.hit.path}",
                    f"{r.source}/{r.hit.path} lines {r.hit.start_line}-{r.hit.end_line}",
                    r.hit.text,
                )
                for r in response.results
                if (r.source, r.hit.path) not in shown
            ]
        return memory_block.assemble(agent, crew, operator, hits, budget)

    async def write_health(self) -> tuple[bool, str | None]:
        """Can a write succeed right now? Used to gate the MCP write tools."""
        loop = asyncio.get_running_loop()
        settings = self.settings  # one snapshot, so a check never mixes two configurations
        for name, state in self.tiers.items():
            if name == "crew" and settings.role != "lead":
                continue
            reason = await loop.run_in_executor(
                self._files, write_job.disk_problem, state.tier.root, settings.min_free_bytes
            )
            if reason:
                return False, f"{name}: {reason}"
            if name in self.queue.last_error:
                return False, f"{name}: index unusable: {self.queue.last_error[name]}"
        return True, None


def _from_lead(exc: LeadError) -> ApiError:
    """The lead's own error answer, passed on with where it came from."""
    return ApiError(exc.status, exc.body.get("error", "lead_error"),
                    f"crew lead: {exc.body.get('detail', '')}")  # fmt: skip
