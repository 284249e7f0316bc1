"""Keep each tier's vectors in step with its chunks, in the background.

BM25 indexing never waits for a model: a chunk is searchable by its words as
soon as its file is indexed, and by meaning once this worker has embedded it.
Vectors are stored by content hash, so a restart, a rebuild or a chunk that
only moved costs a lookup, not an inference; a model change re-embeds lazily
because vectors are looked up under the current ``model_id`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sidecar.index.store import IndexStore
from sidecar.retrieval.embedders.base import (
    Embedder,
    EmbedderBusy,
    EmbedderError,
    EmbedderRefused,
)
from sidecar.retrieval.vectors import VectorIndex

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors

log = logging.getLogger(__name__)

EMBED_BATCH = 32  # chunks per inference call: short enough to stop promptly
LOOKUP_BATCH = 500
RETRY_SECONDS = 30.0
BACKLOG_LOG_S = 5.0  # at most one progress line per tier this often while embedding
LAG_EXACT_S = 0.05  # a lag count that costs less than this is taken afresh every time
LAG_REUSE = 10  # else it is reused for up to this many times what it cost


def texts_to_embed(body: str) -> list[str]:
    """The whole chunk, then each of its lines when it has several.

    A chunk is as relevant as its best line: one line of a conversation or one
    bullet of a log is often the whole answer, and averaging it with its
    neighbours blurs it. Ranking uses both (see ``fusion``).
    """
    lines = [line for line in body.split("\n") if line.strip()]
    return [body, *lines] if len(lines) > 1 else [body]


def to_blob(vectors: Vectors) -> bytes:
    return np.ascontiguousarray(vectors, dtype=np.float32).tobytes()


def from_blob(blob: bytes, dim: int) -> Vectors:
    return np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)


def _batches(items: Sequence[int], size: int) -> Iterable[Sequence[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class TierVectors:
    """One tier's vector index and how far it lags behind the chunks."""

    def __init__(self, store: IndexStore, embedder: Embedder, name: str = "") -> None:
        self.store = store
        self.embedder = embedder
        self.name = name  # the tier (or store) in progress lines
        self._generation = store.generation
        self.index = VectorIndex(embedder.dim)
        self.pending = 0  # chunks known to need a vector, as of the last look
        self.embedded = 0  # vectors computed (not looked up) since start
        # Texts the embedder refuses while it embeds others (content hash -> its error):
        # searchable by their words only, and not asked for again until they change.
        self.refused: dict[str, str] = {}
        # The catch-up under way: chunks to embed in this pass, how many are done, since
        # when. A first index of many files is a long backlog; status and the log show it.
        self.backlog_total = 0
        self.backlog_done = 0
        self._backlog_started = time.monotonic()
        self._logged = time.monotonic()
        # The last exact count of ``lag``, when it was taken and what taking it cost.
        self._lag = (0, -math.inf, 0.0)

    def backlog_json(self) -> dict[str, float | int]:
        seconds = time.monotonic() - self._backlog_started
        rate = self.backlog_done / seconds if seconds > 0 and self.backlog_done else 0.0
        return {"embedded": self.backlog_done, "total": self.backlog_total,
                "rate_per_s": round(rate, 1)}  # fmt: skip

    def _advance(self, chunks: int) -> None:
        self.backlog_done += chunks
        now = time.monotonic()
        if now - self._logged >= BACKLOG_LOG_S and self.backlog_done < self.backlog_total:
            self._logged = now
            log.info("embedding backlog", extra={"tier": self.name, **self.backlog_json()})

    def lag(self) -> int:
        """Chunks without a current vector (exact, unlike ``pending``). Counting reads
        every chunk's key: where that takes long (a second at a million chunks), a count
        is reused for up to ten times what it cost, so status polls and metric scrapes
        never keep a thread (or the database) counting."""
        count, at, cost = self._lag
        now = time.monotonic()
        if cost > LAG_EXACT_S and now - at < LAG_REUSE * cost:
            return count
        held = self.index.keys()
        count = sum(1 for i, k in self.store.chunk_keys().items()
                    if held.get(i) != k and k not in self.refused)  # fmt: skip
        self._lag = (count, now, time.monotonic() - now)
        return count

    def sync(self, stop: Callable[[], bool]) -> None:
        """Bring the index in line with the store: drop stale rows, load stored vectors,
        embed the rest in batches. Runs on the embedding thread."""
        if self.store.generation != self._generation:  # the index was rebuilt from scratch:
            self._generation = self.store.generation  # its vectors table is empty again
            self.index.remove(list(self.index.keys()))
        keys = self.store.chunk_keys()
        if self.refused:  # forget refusals of text that is gone
            live = set(keys.values())
            self.refused = {k: e for k, e in self.refused.items() if k in live}
        held = self.index.keys()
        self.index.remove([i for i, k in held.items() if keys.get(i) != k])
        missing = [i for i, k in keys.items() if held.get(i) != k and k not in self.refused]
        self.pending = len(missing)
        model = self.embedder.model_id
        todo: list[int] = []
        for part in _batches(missing, LOOKUP_BATCH):
            blobs = self.store.get_vectors(model, (keys[i] for i in part))
            found = [i for i in part if keys[i] in blobs]
            if found:
                hashes = [keys[i] for i in found]
                rows = np.stack([from_blob(blobs[k], self.index.dim)[0] for k in hashes])
                self.index.upsert(found, hashes, rows)
                self.pending -= len(found)
            todo += [i for i in part if keys[i] not in blobs]
        if todo and self.backlog_done < self.backlog_total:
            # A pass cut short by new chunks: the catch-up goes on, it does not start over.
            self.backlog_total = self.backlog_done + len(todo)
        elif todo:
            self.backlog_total, self.backlog_done = len(todo), 0
            self._backlog_started = self._logged = time.monotonic()
        for part in _batches(todo, EMBED_BATCH):
            if stop():
                return
            try:
                self._embed(part)
            except EmbedderRefused:
                self._embed_one_by_one(part, keys, stop)
            self.pending -= len(part)
            self._advance(len(part))

    def _embed_one_by_one(
        self, ids: Sequence[int], keys: dict[int, str], stop: Callable[[], bool]
    ) -> None:
        """A batch was refused: find the texts the embedder refuses, so that one bad
        chunk (a model that answers NaN for it, say) does not stop every other from
        being embedded. Raises EmbedderError if the embedder itself is down."""
        self.embedder.embed(["probe"])
        for chunk_id in ids:
            if stop():
                return
            try:
                self._embed([chunk_id])
            except EmbedderRefused as exc:
                self.embedder.embed(["probe"])  # still answers other text: it is this one
                if keys[chunk_id] not in self.refused:
                    log.warning("the embedder refuses a chunk; it is searchable by its words only",
                                extra={"chunk": chunk_id, "error": str(exc)})  # fmt: skip
                self.refused[keys[chunk_id]] = str(exc)

    def _embed(self, ids: Sequence[int]) -> None:
        rows = self.store.chunk_texts(ids)  # chunks deleted meanwhile are simply absent
        by_hash: dict[str, str] = {}
        for _, key, body in rows:
            by_hash.setdefault(key, body)
        texts: list[str] = []
        spans: dict[str, tuple[int, int]] = {}
        for key, body in by_hash.items():
            parts = texts_to_embed(body)
            spans[key] = (len(texts), len(texts) + len(parts))
            texts += parts
        vectors = self.embedder.embed(texts)
        blobs = [(key, to_blob(vectors[a:b])) for key, (a, b) in spans.items()]
        self.store.put_vectors(self.embedder.model_id, blobs)
        if rows:
            self.index.upsert(
                [i for i, _, _ in rows],
                [k for _, k, _ in rows],
                np.stack([vectors[spans[k][0]] for _, k, _ in rows]),
            )
        self.embedded += len(by_hash)


@dataclass(slots=True)
class SyncState:
    # The embedder's last failure, until it answers again: searches are sparse-only.
    embedder_error: str | None = None
    # A tier whose vectors could not be brought up to date for another reason (a broken
    # stored vector, a database error): its searches still use the vectors it has.
    tier_errors: dict[str, str] = field(default_factory=dict)


class VectorSync:
    """The background worker: wakes when an index changes and embeds what is missing.

    When the embedder fails (here, or on a search's query), search is sparse-only
    and says so until a retry proves it works again; the retry comes after
    ``retry_s`` or on the next change. A failure confined to one tier is
    retried the same way without holding the other tiers back.
    """

    def __init__(
        self,
        embedder: Embedder,
        tiers: dict[str, TierVectors],
        executor: Executor,
        retry_s: float = RETRY_SECONDS,
    ) -> None:
        self.embedder = embedder
        self.retry_s = retry_s
        self.tiers = tiers
        self.state = SyncState()
        self._executor = executor
        self._wake = asyncio.Event()
        self._stopping = False
        self._idle = asyncio.Event()
        self._failures = 0  # embedder failures so far: a pass clears only what it probed
        self._retry_in = retry_s  # until the next attempt: shorter when a server said so

    def notify(self) -> None:
        self._idle.clear()
        self._wake.set()

    def pending(self) -> int:
        return sum(t.pending for t in self.tiers.values())

    async def wait_idle(self) -> None:
        """Until every tier has a vector for every chunk (or a sync failed)."""
        await self._idle.wait()

    def embed_query(self, text: str) -> Vectors | None:
        """The query's vector; None if the embedder went down while this call waited its
        turn, so queued queries do not each wait out a hung server. Runs on a thread."""
        if self.state.embedder_error is not None:
            return None
        return self.embedder.embed([text])[0]

    def embedder_failed(self, error: str) -> None:
        """A search could not embed its query: stop asking until a retry succeeds."""
        self._embedder_down(error)
        self.notify()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()

    async def run(self) -> None:
        self._wake.set()  # load stored vectors and catch up at start
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                break
            if await self._sync_all():
                if not self._wake.is_set():
                    self._idle.set()
                continue
            self._idle.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._retry_in)
            self._retry_in = self.retry_s
            self._wake.set()
        self._idle.set()

    async def _sync_all(self) -> bool:
        """One pass over every tier; False when something is left to retry."""
        loop = asyncio.get_running_loop()
        # Only a probe proves recovery: a pass with nothing new to embed proves nothing,
        # and a search may report a failure while this pass runs.
        probed = self.state.embedder_error is not None
        failures = self._failures
        try:
            if probed:
                await loop.run_in_executor(self._executor, self.embedder.embed, ["probe"])
            for name, tier in self.tiers.items():
                try:
                    await loop.run_in_executor(self._executor, tier.sync, self._should_stop)
                except EmbedderError:
                    raise
                except Exception as exc:  # a bug or a broken index: say so, go on
                    self._tier_failed(name, exc)
                else:
                    self.state.tier_errors.pop(name, None)
        except EmbedderError as exc:
            self._embedder_down(str(exc))
            if isinstance(exc, EmbedderBusy):  # a lead pacing its members: as it asks
                self._retry_in = exc.retry_after
            return False
        if probed and self._failures == failures:
            log.warning("embedder recovered; hybrid search is back")
            self.state.embedder_error = None
        return self.state.embedder_error is None and not self.state.tier_errors

    def _should_stop(self) -> bool:
        return self._stopping

    def _embedder_down(self, error: str) -> None:
        if self.state.embedder_error is None:
            log.warning(
                "embedder failed; searches are sparse-only until it recovers",
                extra={"error": error, "retry_s": self.retry_s},
            )
        self.state.embedder_error = error
        self._failures += 1

    def _tier_failed(self, name: str, exc: Exception) -> None:
        if name not in self.state.tier_errors:
            log.exception("vector sync failed", extra={"tier": name})
        self.state.tier_errors[name] = f"{type(exc).__name__}: {exc}"
