"""The journal's work after an append: vectors for new embeddable events within about a
second (each linked to its ``similar`` predecessors), the injection scanner's verdicts
(read while appends pause), and reference records for recalled events, in batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from sidecar.errors import ApiError
from sidecar.journal import recall as journal_recall
from sidecar.journal.events import iso
from sidecar.journal.log import today_file
from sidecar.journal.tier import EventVectors, TierJournal
from sidecar.retrieval.embedders.base import EmbedderError, EmbedderRefused
from sidecar.retrieval.embeddings import Embeddings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

REF_FLUSH_S = 1.0  # reference records are batched: one line a second at most per tier
EMBED_BATCH = 32
POLL_S = 5.0  # background work also looks again this often (an embedder that came up)
SCAN_BATCH = 64
SCAN_WHEN_IDLE_S = 1.0
SIMILAR_MIN = 0.80
SIMILAR_TOP = 3


class Owner(Protocol):
    """What the background work uses of the journal that owns it (``journal.Journal``)."""

    tiers: dict[str, TierJournal]
    embeddings: Embeddings

    async def on_reader(self, fn: Callable[..., Any], *args: Any) -> Any: ...

    def model(self) -> str | None:
        """The embedding model that works now, if any."""


class Background:
    def __init__(self, journal: Owner) -> None:
        self.journal = journal
        self.refs: dict[str, dict[str, None]] = {}  # tier -> ids recalled, not yet recorded
        self.wake_embed = asyncio.Event()
        self.wake_scan = asyncio.Event()
        self.last_append = 0.0

    def appended(self) -> None:
        self.last_append = time.monotonic()
        self.wake_scan.set()

    # -- reference records ------------------------------------------------------------------

    async def ref_loop(self) -> None:
        while True:
            await asyncio.sleep(REF_FLUSH_S)
            try:
                await self.flush_refs()
            except ApiError as exc:
                log.warning("reference records not written; retrying", extra={"error": exc.detail})

    async def flush_refs(self) -> None:
        pending, self.refs = self.refs, {}
        for name, ids in pending.items():
            if not ids:
                continue
            record = {"kind": "ref", "ids": list(ids), "at": iso(time.time())}
            try:
                await self.journal.tiers[name].append(today_file(), [record])
            except ApiError:
                self.refs.setdefault(name, {}).update(ids)  # next time
                raise

    # -- the scanner's verdicts ---------------------------------------------------------

    async def scan_loop(self) -> None:
        """Read every new event's text with the injection scanner in the background and keep
        the verdict with the event, so recall and listing only look it up. It runs once
        appends pause for ``SCAN_WHEN_IDLE_S``: scanning costs about 0.2 ms an event of
        the interpreter's time, which a burst of appends needs more."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await self.wake_scan.wait()
            self.wake_scan.clear()
            quiet = time.monotonic() - self.last_append
            if quiet < SCAN_WHEN_IDLE_S:  # appends under way: look again once they pause
                await asyncio.sleep(SCAN_WHEN_IDLE_S - quiet)
                self.wake_scan.set()
                continue
            for tj in self.journal.tiers.values():
                if tj.index is None or not tj.ready.is_set() or tj.failed:
                    continue
                try:
                    while batch := await self.journal.on_reader(tj.index.to_scan, SCAN_BATCH):
                        if time.monotonic() - self.last_append < SCAN_WHEN_IDLE_S:
                            self.wake_scan.set()  # appends again: wait for the next pause
                            break
                        verdicts = await self.journal.on_reader(_verdicts, batch)
                        await tj.run(tj.index.set_flags, verdicts)
                except Exception as exc:
                    log.error(
                        "journal scan failed", extra={"tier": tj.tier.name, "error": str(exc)}
                    )

    # -- embedding ---------------------------------------------------------------------

    async def embed_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await self.wake_embed.wait()
            self.wake_embed.clear()
            model = self.journal.model()
            if model is None:
                continue
            for tj in self.journal.tiers.values():
                if not tj.ready.is_set() or tj.failed:
                    continue
                try:
                    await self._embed_tier(tj, model)
                    tj.embed_error = None
                except EmbedderError as exc:
                    tj.embed_error = str(exc)
                except Exception as exc:
                    tj.embed_error = f"{type(exc).__name__}: {exc}"
                    log.exception("journal embedding failed", extra={"tier": tj.tier.name})

    async def _load_vectors(self, tj: TierJournal, model: str) -> EventVectors:
        import numpy as np

        assert tj.index is not None
        rows = await self.journal.on_reader(tj.index.vectors, model)
        dim = self.journal.embeddings.vectors.embedder.dim  # type: ignore[union-attr]
        vectors = EventVectors(model, dim)
        if rows:
            matrix = np.frombuffer(b"".join(blob for _, _, blob in rows), np.float32)
            vectors.add([i for _, i, _ in rows], matrix.reshape(len(rows), dim))
        return vectors

    async def _embed_tier(self, tj: TierJournal, model: str) -> None:
        """Vectors for every embeddable event without one, oldest first; each new vector
        links to its closest predecessors (``similar``), recorded in the journal."""
        assert tj.index is not None
        if tj.vectors is None or tj.vectors.model != model:
            tj.vectors = await self._load_vectors(tj, model)
        while True:
            after = tj.embed_after
            batch = await self.journal.on_reader(tj.index.to_embed, model, after, EMBED_BATCH)
            if not batch:
                return
            rows, ids = await self._embed_batch(tj, batch)
            tj.embed_after = batch[-1][0]
            if not ids:
                continue
            linked = await self.journal.on_reader(_already_linked, tj, ids)
            records = _similar_links(tj.vectors, ids, rows, linked, iso(time.time()))
            if records:
                await tj.append(today_file(), records)
            blobs = [
                (event_id, row.astype("float32").tobytes())
                for event_id, row in zip(ids, rows, strict=True)
            ]
            await tj.run(tj.index.add_vectors, model, blobs)
            tj.vectors.add(ids, rows)
            tj.embedded_since_start += len(ids)

    async def _embed_batch(
        self, tj: TierJournal, batch: list[tuple[int, str, str]]
    ) -> tuple[npt.NDArray[np.float32], list[str]]:
        """The batch's vectors; an event the embedder refuses is set aside (recalled by its
        words only) and the rest are embedded one by one."""
        import numpy as np

        try:
            return await self.journal.embeddings.embed_texts([t for _, _, t in batch]), [
                i for _, i, _ in batch
            ]
        except EmbedderRefused as exc:
            if len(batch) == 1:
                tj.refused[batch[0][1]] = str(exc)
                return np.zeros((0, 1), np.float32), []
        rows, ids = [], []
        for one in batch:
            got, got_ids = await self._embed_batch(tj, [one])
            if got_ids:
                rows.append(got[0])
                ids += got_ids
        return (np.vstack(rows) if rows else np.zeros((0, 1), np.float32)), ids


def _verdicts(batch: list[tuple[int, str]]) -> list[tuple[str, int]]:
    out = []
    for seq, text in batch:
        flag = journal_recall.verdict(text)
        out.append((json.dumps(flag) if flag else "", seq))
    return out


def _already_linked(tj: TierJournal, ids: list[str]) -> set[str]:
    assert tj.index is not None
    return {i for i in ids if tj.index.has_links(i, "similar")}


def _similar_links(
    vectors: EventVectors, ids: list[str], rows: npt.NDArray[np.float32], linked: set[str], at: str
) -> list[dict[str, Any]]:
    """``similar`` records from each new event to its top predecessors at cosine ≥ 0.80
    (those embedded before it, including earlier ones of the same batch)."""
    import numpy as np

    prior_ids, prior = vectors.matrix()
    before = prior @ rows.T  # (prior, batch)
    within = rows @ rows.T
    records = []
    for n, event_id in enumerate(ids):
        if event_id in linked:
            continue
        sims = np.concatenate([before[:, n], within[:n, n]])
        names = prior_ids + ids[:n]
        for j in np.argsort(-sims, kind="stable")[:SIMILAR_TOP]:
            if sims[j] < SIMILAR_MIN:
                break
            records.append(
                {
                    "kind": "relation",
                    "src": event_id,
                    "dst": names[j],
                    "relation": "similar",
                    "weight": round(float(sims[j]), 4),
                    "at": at,
                }
            )
    return records
