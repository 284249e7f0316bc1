"""A cold build: the files a tier's index does not hold yet, indexed in bulk, in steps.

Indexing thousands of new files one transaction each spends most of its time on
per-file statements and commits; a build reads and parses them ahead (in worker
processes when there are many) and inserts a batch per transaction. Each step
holds the writer thread for about ``STEP_S`` and then lets the jobs queued
meanwhile (API writes, watcher events) run before the next one, so writes are
answered during a long build and searches see every committed batch.

A file some other job indexed or looked at after the build listed it (a write, a
watcher event, a subtree scan) is left to that job: it read the file later than
the build's walk, and any change after that queues another job of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sidecar.index import indexer
from sidecar.index.indexer import Parsed, Skipped
from sidecar.index.parse_pool import BATCH_FILES, ParsePool, Parsing
from sidecar.index.progress import BuildProgress
from sidecar.index.store import BuildFile, IndexStore

BUILD_MIN_FILES = 100  # fewer new files than this are indexed one by one, as edits are
POOL_MIN_FILES = 400  # from this many new files on, worker processes parse them
STEP_S = 0.25  # a step commits at least this often, so searches see the build progress
COMMIT_FILES = 4000  # files per transaction at most: each commit flushes an FTS5 segment
# A small build commits in quarters at least, so the writer inserts while the workers parse
# instead of waiting for all of it and then inserting alone on one core.
COMMIT_PARTS = 4
YIELD_CHECK_FILES = 32  # how often a step asks whether another job is waiting
BUILDING = "build_started"  # meta key present while a build is unfinished


class Build:
    """The state of one cold build between its steps; used by the writer thread only."""

    def __init__(
        self,
        progress: BuildProgress,
        root: Path,
        rels: list[str],
        max_chars: int,
        pool: ParsePool | None,
    ) -> None:
        self.progress = progress
        self._parsing: Parsing | None = (
            pool.parse(root, rels, max_chars) if pool is not None and pool.usable else None
        )
        self._source: Iterator[Parsed] = self._parsing or self._in_process(root, rels, max_chars)
        # files the workers were asked for before the daemon loaded
        self.head_start = self._parsing.taken_over if self._parsing else 0
        self._commit_files = min(COMMIT_FILES, max(BATCH_FILES, len(rels) // COMMIT_PARTS))
        self._touched: set[str] = set()
        self._touched_dirs: set[str] = set()
        self.added = 0

    @staticmethod
    def _in_process(root: Path, rels: list[str], max_chars: int) -> Iterator[Parsed]:
        for start in range(0, len(rels), BATCH_FILES):
            yield from indexer.read_parsed(root, rels[start : start + BATCH_FILES], max_chars)

    def close(self) -> None:
        """A build dropped before its end (failed, replaced, the daemon stopping) stops
        its parsing: no thread or answer is left behind."""
        if self._parsing is not None:
            self._parsing.close()

    def touch(self, path: str, tree: bool = False) -> None:
        """Another job has handled ``path`` (everything below it, with ``tree``)."""
        (self._touched_dirs if tree else self._touched).add(path)

    def _ours(self, rel: str) -> bool:
        if rel in self._touched:
            return False
        if self._touched_dirs:
            parts = rel.split("/")
            if "" in self._touched_dirs or any(
                "/".join(parts[:k]) in self._touched_dirs for k in range(1, len(parts))
            ):
                return False
        return True

    def step(
        self,
        store: IndexStore,
        skipped: Skipped,
        waiting: Callable[[], bool] = lambda: False,
        budget_s: float | None = None,
    ) -> bool:
        """Insert what the next ``budget_s`` (``STEP_S``) of parsing yields, one transaction
        per ``COMMIT_FILES`` (a quarter of a small build), ending early (after committing)
        as soon as ``waiting()`` says another job wants the writer; True once every file
        is done."""
        deadline = time.monotonic() + (STEP_S if budget_s is None else budget_s)
        while True:
            items: list[BuildFile] = []
            seen = 0
            finished = True
            for rel, item, why in self._source:
                seen += 1
                if self._ours(rel):
                    indexer.record_skip(rel, why, skipped)
                    if item is not None:
                        items.append(item)
                if (
                    len(items) >= self._commit_files
                    or time.monotonic() >= deadline
                    or (seen % YIELD_CHECK_FILES == 0 and waiting())
                ):
                    finished = False
                    deadline = 0.0  # end the step after this commit
                    break
            if items:
                self.added += store.add_files(items)
            self.progress.advance(seen)
            if finished or time.monotonic() >= deadline:
                return finished
