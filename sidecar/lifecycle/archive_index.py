"""The archive's own search index: ``archive/`` of each tier in a SQLite file of its own
(``.archive-index.sqlite`` in the tier folder), apart from the notes index.

Apart, because the archive grows to many times the active tier: in the notes index its
words would lengthen every posting list an ordinary search walks (measured: a year of
logs made searches over twice as slow). Searched when a request asks for it (``archive``
in ``POST /memory/search``). Derived like every index: reconciled with the files at start,
after each pass, and on every watcher event below ``archive/``; deleting it loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from sidecar.capability import Tasks
from sidecar.disk.tiers import ARCHIVE_DIR, is_archived
from sidecar.index import indexer
from sidecar.index.store import IndexStore
from sidecar.stores.sqlite import SQLiteStore

log = logging.getLogger(__name__)

FILENAME = ".archive-index.sqlite"


class ArchiveIndex:
    """Each tier's archive index; every change runs on ``executor`` (one thread)."""

    def __init__(self, chunk_chars: int, executor: Executor) -> None:
        self.chunk_chars, self.executor = chunk_chars, executor
        self.roots: dict[str, Path] = {}
        self.stores: dict[str, IndexStore] = {}
        self.problems: dict[str, str] = {}  # tier -> why its archive index is unusable
        # counted on the index's thread after each change, so status reads them without
        # queueing behind a sync (and without a connection of its own to a moved file)
        self.counts: dict[str, dict[str, Any]] = {}
        self.tasks = Tasks()

    async def open(self, roots: dict[str, Path]) -> None:
        self.roots = roots
        for tier, root in roots.items():
            try:
                self.stores[tier] = await self._run(SQLiteStore, root / FILENAME)
                continue
            except Exception as exc:  # a damaged file: start it afresh, it is derived
                log.warning("archive index unusable; rebuilding it",
                            extra={"tier": tier, "error": str(exc)})  # fmt: skip
            try:
                await self._run(_remove, root / FILENAME)
                self.stores[tier] = await self._run(SQLiteStore, root / FILENAME)
            except Exception as exc:  # the daemon serves on; the archive is unsearched
                self.problems[tier] = f"cannot open {root / FILENAME}: {exc}"
                log.error("archive index unavailable", extra={"tier": tier, "error": str(exc)})

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def store(self, tier: str) -> IndexStore | None:
        """The tier's archive index to search, None if it has none (or it is unusable)."""
        return None if tier in self.problems else self.stores.get(tier)

    async def sync(self, tier: str, rel: str = "") -> None:
        """Reconcile the index with ``archive/`` (or one file of it)."""
        store, root = self.stores.get(tier), self.roots.get(tier)
        if store is None or root is None:
            return
        try:
            if rel:
                await self._run(indexer.sync_file, store, root, rel, self.chunk_chars)
            else:
                await self._run(indexer.sync_tree, store, root, ARCHIVE_DIR, self.chunk_chars)
            await self._count(tier)
            self.problems.pop(tier, None)
        except Exception as exc:
            self.problems[tier] = f"{type(exc).__name__}: {exc}"
            log.error("archive index sync failed", extra={"tier": tier, "error": str(exc)})

    async def _count(self, tier: str) -> None:
        self.counts[tier] = (await self._run(self.stores[tier].stats)).to_json()

    def changed(self, tier: str, rel: str) -> None:
        """A watcher event on a file that is not a note (``hooks.file_changed``)."""
        if is_archived(rel) and rel.endswith(".md") and tier in self.stores:
            self.tasks.oneoff(self.sync(tier, rel), f"archive-index-{tier}")

    async def status(self, tier: str) -> dict[str, Any]:
        store = self.stores.get(tier)
        if tier in self.problems:
            return {"state": "broken", "problem": self.problems[tier]}
        if store is None:
            return {"state": "none"}
        if tier not in self.counts:  # counted by its first sync, at the first pass
            return {"state": "syncing"}
        return {"state": "ready", **self.counts[tier]}

    async def close(self) -> None:
        await self.tasks.finish()
        for store in self.stores.values():
            await self._run(store.close)


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
