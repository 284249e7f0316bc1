"""Compaction of each tier's learnings files: on request, and after every change.

``memory.learn`` and ``sidecar compact`` compact at once. Any other change to a file in
``learnings/``, whoever made it (a hand edit the watcher sees, or the reconcile and the
start find, a ``memory.write``, a reinforcement's write-back), is followed by a
compaction of that file once it has been quiet for ``SETTLE_S``: a burst of changes is
one compaction. A file's compactions run one at a time (each plans on what the one
before left), planning off the event loop. Text compaction has already found nothing to
do in is not planned again, so the compaction that follows ``memory.learn``'s own is a
read and a hash.

After each change the tier's stored vectors of text no entry holds any more (an entry
edited, merged away or archived) are pruned, as a job in the index's FIFO queue, so it
runs after the change is indexed; the vector sync drops them from memory on its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from sidecar.capability import Tasks
from sidecar.disk.tiers import read_confined
from sidecar.index.indexes import TierIndexes, TierState
from sidecar.learnings import compaction, entries
from sidecar.learnings.index import ARCHIVE, FOLDER, Change, LearningsIndex, is_learnings
from sidecar.notes.files import LEARNING, MemoryFile, today_utc
from sidecar.notes.notes import Notes
from sidecar.retrieval.embeddings import Embeddings

log = logging.getLogger(__name__)

SETTLE_S = 0.5  # quiet time after a file's last change before it is compacted

Key = tuple[str, str]  # (tier, file)


class Upkeep:
    def __init__(
        self,
        tiers: dict[str, LearningsIndex],
        notes: Notes,
        indexes: TierIndexes,
        embeddings: Embeddings,
        tasks: Tasks,
    ) -> None:
        self.tiers = tiers
        self.notes = notes
        self.indexes = indexes
        self.embeddings = embeddings
        self.tasks = tasks
        self._locks: dict[Key, asyncio.Lock] = {}
        self._timers: dict[Key, asyncio.TimerHandle] = {}
        self._settled: dict[Key, str] = {}  # digest of the text compaction left alone
        self.runs: dict[str, int] = {}  # tier -> compactions after a change that rewrote
        self.failed: dict[Key, str] = {}  # the last compaction after a change that failed
        self._stopping = False

    # -- after a change ----------------------------------------------------------------

    def changed(self, tier: str, rel: str) -> None:
        """A learnings file changed (on the loop): compact it once it is quiet."""
        if self._stopping or tier not in self.tiers or not _compactable(rel):
            return
        key = (tier, rel)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(SETTLE_S, self._settle, key)

    def _settle(self, key: Key) -> None:
        self._timers.pop(key, None)
        if not self._stopping:
            self.tasks.oneoff(self._after_change(*key), "learnings-compact")

    async def _after_change(self, tier: str, rel: str) -> None:
        try:
            async with self._lock(tier, rel):
                got = await self._read(self.tiers[tier], rel)
                if got is not None and self._settled.get((tier, rel)) != got[1]:
                    done = await self._compact_file(tier, self.tiers[tier], rel, False)
                    if done is not None:
                        self.runs[tier] = self.runs.get(tier, 0) + 1
                        log.info("learnings compacted after a change",
                                 extra={"tier": tier, "file": rel, "merged": len(done["merged"]),
                                        "archived": len(done["archived"])})  # fmt: skip
            await self._prune(tier)
        except Exception as exc:  # the next change, or sidecar compact, tries again
            self.failed[(tier, rel)] = f"{type(exc).__name__}: {exc}"[:300]
            log.error("learnings compaction after a change failed",
                      extra={"tier": tier, "file": rel, "error": str(exc)})  # fmt: skip
            return
        self.failed.pop((tier, rel), None)

    async def _prune(self, tier: str) -> None:
        """Drop stored vectors of text no entry holds (on the index writer, in order)."""
        vectors = self.embeddings.vectors
        if vectors is None:
            return
        model, store = vectors.embedder.model_id, self.tiers[tier].store

        def job(_: TierState) -> Change:
            store.prune_vectors(model)
            return Change(False)

        await self.indexes.write(tier, f"{FOLDER}:prune", job)

    def stop(self) -> None:
        """No compaction starts after this; one under way finishes (``Tasks.finish``)."""
        self._stopping = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def status(self, tier: str) -> dict[str, Any]:
        body: dict[str, Any] = {"after_change": self.runs.get(tier, 0)}
        failed = [{"file": f, "error": e} for (t, f), e in sorted(self.failed.items()) if t == tier]
        if failed:
            body["failed"] = failed
        return body

    # -- compacting --------------------------------------------------------------------

    def _lock(self, tier: str, rel: str) -> asyncio.Lock:
        return self._locks.setdefault((tier, rel), asyncio.Lock())

    async def compact(self, scope: str, index: LearningsIndex, file: str | None,
                      dry_run: bool) -> dict[str, Any]:  # fmt: skip
        """Compact one learnings file, or every one of the tier; ``dry_run`` only plans."""
        paths = [file] if file else sorted(
            p for p in index.snapshot.by_line if not p.startswith(f"{ARCHIVE}/")
        )  # fmt: skip
        plans: list[dict[str, Any]] = []
        failed: list[dict[str, str]] = []
        for rel in paths:
            try:
                async with self._lock(scope, rel):
                    done = await self._compact_file(scope, index, rel, dry_run)
            except Exception as exc:  # one odd file never blocks the others
                log.error("compaction failed", extra={"file": rel, "error": str(exc)})
                failed.append({"file": rel, "error": f"{type(exc).__name__}: {exc}"})
                continue
            if done is not None:
                plans.append(done)
        answer: dict[str, Any] = {"scope": scope, "dry_run": dry_run, "files": plans}
        if failed:
            answer["failed"] = failed
        return answer

    async def _compact_file(
        self, scope: str, index: LearningsIndex, rel: str, dry_run: bool
    ) -> dict[str, Any] | None:
        got = await self._read(index, rel)
        if got is None:
            return None
        current, digest = got
        loop = asyncio.get_running_loop()  # planning a large file takes a while: off the loop
        p = await loop.run_in_executor(None, compaction.plan, rel, current, today_utc())
        if not p.changes:
            self._settled[(scope, rel)] = digest
            return None
        if dry_run:
            return p.to_json()
        archive = MemoryFile(scope, p.archive_file, LEARNING)
        await self.notes.commit(archive, lambda cur: compaction.add_to_archive(cur, p.moved))

        def build(cur: bytes | None) -> bytes:
            rewritten = compaction.rebase(p, current, entries.decode(cur))
            return cur or b"" if rewritten is None else entries.encode(rewritten)

        await self.notes.commit(MemoryFile(scope, rel, LEARNING), build)
        return p.to_json()

    async def _read(self, index: LearningsIndex, rel: str) -> tuple[str, str] | None:
        """The file's text and its digest (off the loop); None if it is not there."""
        return await asyncio.get_running_loop().run_in_executor(None, _text_and_digest,
                                                                index, rel)  # fmt: skip


def _text_and_digest(index: LearningsIndex, rel: str) -> tuple[str, str] | None:
    got = read_confined(index.root, rel)
    if got is None:
        return None
    return entries.decode(got[0]), hashlib.blake2b(got[0], digest_size=16).hexdigest()


def _compactable(rel: str) -> bool:
    """A learnings file compaction works on: not the folder, not its archive."""
    return is_learnings(rel) and rel.endswith(".md") and not rel.startswith(f"{ARCHIVE}/")
