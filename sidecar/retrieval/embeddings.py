"""The dense side of retrieval: which embedder is loaded, the vectors kept in step with
the indexes in the background, query embeddings, and on a lead the embeddings it
makes for members that borrow its model.

Without an embedder the daemon is sparse-only (BM25) and says why, at start, in
status and in health; a server (Ollama, OpenAI-compatible, the crew lead) that is
not up yet is asked again until it answers, and hybrid search then starts by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.config import Settings
from sidecar.errors import ApiError
from sidecar.index.indexes import TierIndexes
from sidecar.index.store import IndexStore
from sidecar.retrieval.embedders.base import Embedder, EmbedderError, EmbedderRefused
from sidecar.retrieval.embedders.factory import HOW_TO_ENABLE, load_embedder
from sidecar.retrieval.modes import DENSE, SPARSE

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors
    from sidecar.retrieval.vector_sync import VectorSync

log = logging.getLogger(__name__)

# Embedders served from elsewhere: one that is away at start is asked again until it answers.
REMOTE = ("ollama", "openai", "lead")
MEMBER_BATCH = 4  # a member's request of at most this many texts is a query, not indexing
MEMBER_NICE = 10


def _yield_cpu() -> None:
    """Lower this thread's priority (Linux nice is per thread): the lead's own searches
    come before the work it does for its members."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), MEMBER_NICE)


class Embeddings(Capability):
    def __init__(self, settings: Settings, indexes: TierIndexes, hooks: Hooks) -> None:
        self.settings = settings
        self.indexes = indexes
        self.hooks = hooks
        self._embedding = ThreadPoolExecutor(1, thread_name_prefix="sidecar-embed")
        # Query embeddings get their own thread: a slow or hung embedder must not hold
        # the search threads that BM25-only searches and status need.
        self._queries = ThreadPoolExecutor(1, thread_name_prefix="sidecar-query-embed")
        # A lead's members' queries get a third: the lead's own never queue behind them,
        # and win the CPU when both want it.
        self._members = ThreadPoolExecutor(
            1, thread_name_prefix="sidecar-member-embed", initializer=_yield_cpu
        )
        self.embedder: Embedder | None = None
        self.embedder_error: str | None = None  # why there is no embedder, if one was wanted
        self.vectors: VectorSync | None = None
        # Other capabilities' index stores (learnings), kept in step like the tiers' own.
        self.stores: dict[str, IndexStore] = {}
        self._stop = asyncio.Event()
        self.tasks = Tasks()

    def add_store(self, name: str, store: IndexStore) -> None:
        """Keep ``store``'s vectors in step too (under ``name``), from when the embedder
        loads; its changes must fire ``hooks.index_changed`` (jobs in the index queue do)."""
        self.stores[name] = store

    async def start(self) -> None:
        """Load the embedder and start the background vector sync; sparse-only if none."""
        if await self._load():
            self._start_sync()
            return
        why = self.embedder_error or "no embedder configured (--embedder none)"
        log.warning("search is sparse-only (BM25): %s", why, extra={"enable": HOW_TO_ENABLE})
        if self.settings.embedder in REMOTE:
            self.tasks.run(self._retry(), "embedder")

    async def _load(self) -> bool:
        settings = self.settings
        if settings.embedder == "lead":  # the lead's crew port, as crew traffic
            url, key = settings.lead_url or "", settings.crew_token or ""
        else:
            key_env = settings.embed_api_key_env
            url, key = settings.embed_url, os.environ.get(key_env, "") if key_env else ""
        load = functools.partial(
            load_embedder, settings.embedder, settings.embed_threads, settings.ollama_url,
            settings.ollama_model, embed_url=url, embed_model=settings.embed_model, api_key=key,
        )  # fmt: skip
        try:
            self.embedder = await asyncio.get_running_loop().run_in_executor(self._embedding, load)
        except EmbedderError as exc:
            self.embedder_error = str(exc)
            return False
        self.embedder_error = None
        return self.embedder is not None

    async def _retry(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.settings.embed_retry)
            if not self._stop.is_set() and await self._load():
                log.warning(
                    "embedder available; hybrid search is on",
                    extra={"model": self.embedder.model_id if self.embedder else None},
                )
                self._start_sync()
                return

    def _start_sync(self) -> None:
        from sidecar.retrieval.vector_sync import TierVectors, VectorSync  # numpy: only now

        assert self.embedder is not None
        stores = {n: s.store for n, s in self.indexes.tiers.items()} | self.stores
        tiers = {n: TierVectors(store, self.embedder, n) for n, store in stores.items()}
        self.vectors = VectorSync(self.embedder, tiers, self._embedding, self.settings.embed_retry)
        self.indexes.vector_model = self.embedder.model_id
        self.hooks.index_changed.append(self.vectors.notify)
        self.tasks.run(self.vectors.run(), "vector-sync")

    async def stop(self) -> None:
        """Stop embedding; a batch already embedding finishes (``close`` waits for it)."""
        self._stop.set()
        if self.vectors is not None:
            self.vectors.stop()
        await self.tasks.cancel()

    async def close(self) -> None:
        """Wait for the batch in flight, so it is stored before the stores close."""
        await asyncio.to_thread(self._embedding.shutdown, cancel_futures=True)
        self._queries.shutdown(wait=False, cancel_futures=True)  # a hung query ends on its own
        self._members.shutdown(wait=False, cancel_futures=True)
        if self.embedder is not None:
            self.embedder.close()

    def retrieval(self) -> str:
        """``hybrid`` while an embedder is loaded and working, else ``sparse-only``."""
        if self.vectors is None or self.vectors.state.embedder_error is not None:
            return "sparse-only"
        return "hybrid"

    async def query_vector(self, query: str, mode: str) -> tuple[Vectors | None, str | None]:
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

    async def query_vectors(self, texts: list[str]) -> tuple[Vectors | None, str | None]:
        """A search's own further texts in one inference on the query thread (learnings
        embed what an entry says beyond the task): the vectors, or None and why not, for
        the search to report (it goes on without them). An embedder that fails, not merely
        refuses these texts, is marked down like a failed query."""
        if self.vectors is None or self.vectors.state.embedder_error is not None:
            return None, "the embedder is down"
        try:
            vectors = await asyncio.get_running_loop().run_in_executor(
                self._queries, self.vectors.embedder.embed, texts
            )
        except EmbedderRefused as exc:
            return None, str(exc)
        except EmbedderError as exc:
            self.vectors.embedder_failed(str(exc))
            return None, str(exc)
        return vectors, None

    async def embed_texts(self, texts: list[str]) -> Vectors:
        """Vectors for other capabilities' texts (journal events), on the embedding thread
        the notes use too, so one inference runs at a time."""
        if self.vectors is None:
            raise EmbedderError(self.embedder_error or "no embedder configured")
        embedder = self.vectors.embedder
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._embedding, embedder.embed, texts
            )
        except EmbedderRefused:
            raise
        except EmbedderError as exc:
            self.vectors.embedder_failed(str(exc))
            raise

    async def embed_for_members(self, texts: list[str]) -> tuple[Vectors, str]:
        """A lead's vectors for its members' texts, and the model id they carry. A few
        texts (a query) on the members' own thread; an indexing batch on the embedding
        thread, one inference at a time with the lead's own backlog."""
        if self.vectors is None or self.vectors.state.embedder_error is not None:
            why = self.embedder_error if self.vectors is None else self.vectors.state.embedder_error
            raise ApiError(503, "embedder_unavailable", "the lead has no working embedder "
                           f"({why or 'no embedder configured'}); its members search "
                           "sparse-only until it has one")  # fmt: skip
        embedder = self.vectors.embedder
        thread = self._members if len(texts) <= MEMBER_BATCH else self._embedding
        try:
            vectors = await asyncio.get_running_loop().run_in_executor(
                thread, embedder.embed, texts
            )
        except EmbedderRefused as exc:
            raise ApiError(400, "embedding_refused", f"the lead's model refused: {exc}") from None
        except EmbedderError as exc:
            self.vectors.embedder_failed(str(exc))
            detail = f"the lead's embedder failed: {exc}"
            raise ApiError(503, "embedder_unavailable", detail) from None
        return vectors, embedder.model_id

    async def status(self, scope: str) -> dict[str, Any]:
        """``pending``: chunks searchable by BM25 but not yet by vector."""
        if self.vectors is None:
            why = self.embedder_error or "no embedder configured"
            return {"pending": 0, "embeddings": {"state": "off", "reason": why}}
        tier = self.vectors.tiers[scope]
        lag = await self.indexes.read(tier.lag)
        sync = self.vectors.state
        error = sync.embedder_error or sync.tier_errors.get(scope)
        info: dict[str, Any] = {
            "model": self.vectors.embedder.model_id,
            "vectors": len(tier.index),
            "pending": lag,
            "embedded_since_start": tier.embedded,
            "backlog": tier.backlog_json(),  # this catch-up's chunks embedded / to embed
            "state": "failed" if error else "embedding" if lag else "ready",
        }
        if tier.refused:  # searchable by their words only
            info["refused"] = len(tier.refused)
        if error:
            info["error"] = error
        return {"pending": lag, "embeddings": info}

    async def health(self) -> Health:
        """The embedder's state, and every reason search is degraded."""
        reasons: list[str] = []
        fields: dict[str, Any] = {"retrieval": self.retrieval()}
        if self.vectors is None:
            if self.settings.embedder in ("minilm", *REMOTE):
                reasons.append(
                    f"embedder unavailable, searches are sparse-only: {self.embedder_error}"
                )
            why = self.embedder_error or "no embedder configured"
            return Health(reasons, {**fields, "embedder": {"model": None, "reason": why}})
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
        info: dict[str, Any] = {"model": self.vectors.embedder.model_id,
                                "pending": self.vectors.pending()}  # fmt: skip
        if sync.embedder_error:
            info["error"] = sync.embedder_error
        return Health(reasons, {**fields, "embedder": info})
