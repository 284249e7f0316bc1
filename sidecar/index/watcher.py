"""Turn inotify events on the tier roots into reindex jobs.

watchfiles reports a directory that appears or is renamed as one event for the
directory only, so anything that is (or was) a directory becomes a subtree
reconcile. The periodic reconcile scan covers whatever the kernel drops.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

import watchfiles

from sidecar.disk.tiers import Tier, is_note
from sidecar.index.queue import FILE, TREE, JobKey, ReindexQueue

log = logging.getLogger(__name__)

DEBOUNCE_MS = 30
# The indexes beside the files (index.sqlite, journal.sqlite and their WAL files).
_DERIVED = re.compile(r"\.sqlite(?:-wal|-shm|-journal)?$")
STEP_MS = 5
PROBE_NAME = ".sidecar-watch-probe"
PROBE_TIMEOUT = 5.0


def tier_relative(tiers: Iterable[Tier], path: str) -> tuple[str, str] | None:
    """(tier name, relative path) of a visible file below a tier root, else None."""
    p = Path(path)
    for tier in tiers:
        try:
            parts = p.relative_to(tier.root).parts
        except ValueError:
            continue
        if parts and not any(part.startswith(".") for part in parts):
            return tier.name, "/".join(parts)
    return None


def jobs_for_event(tiers: Iterable[Tier], path: str) -> JobKey | None:
    """The job an event on ``path`` calls for, or None if it cannot affect an index."""
    p = Path(path)
    for tier in tiers:
        try:
            rel_path = p.relative_to(tier.root)
        except ValueError:
            continue
        parts = rel_path.parts
        if not parts:
            return JobKey(tier.name, TREE, "")
        if any(part.startswith(".") for part in parts) or _DERIVED.search(parts[0]):
            return None
        rel = "/".join(parts)
        if not is_note(rel):
            return None  # another capability's files: they go to ``others``
        try:
            mode = os.lstat(p).st_mode
        except FileNotFoundError:
            # Gone: a markdown file, or a directory whose files must go with it.
            return JobKey(tier.name, FILE if rel.endswith(".md") else TREE, rel)
        if stat.S_ISDIR(mode):
            return JobKey(tier.name, TREE, rel)
        if rel.endswith(".md"):  # regular file, or a symlink that must leave the index
            return JobKey(tier.name, FILE, rel)
        return None
    return None


async def watch(
    tiers: list[Tier],
    queue: ReindexQueue,
    stop: asyncio.Event,
    ready: asyncio.Event,
    others: Callable[[str, str], None] | None = None,
    seen: Callable[[str, str], None] | None = None,
) -> None:
    """Feed the queue until ``stop`` is set. Events arrive batched within ~DEBOUNCE_MS.
    Changes to other files (not notes, not hidden) go to ``others(tier, relative path)``:
    the journal and the learnings follow their own files that way. Every event below a
    tier root, notes included, also goes to ``seen(tier, relative path)``.

    ``ready`` is set once an event from :func:`probe` comes through, which proves
    the kernel watches are in place (watchfiles has no other way to tell).
    """
    roots = [str(t.root) for t in tiers]
    async for changes in watchfiles.awatch(
        *roots,
        watch_filter=None,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        stop_event=stop,
        ignore_permission_denied=True,
    ):
        keys: set[JobKey] = set()
        for _, path in changes:
            if seen is not None and (found := tier_relative(tiers, path)) is not None:
                seen(*found)
            if os.path.basename(path) == PROBE_NAME:
                ready.set()
            elif (key := jobs_for_event(tiers, path)) is not None:
                keys.add(key)
            elif others is not None and (found := tier_relative(tiers, path)) is not None:
                others(*found)
        # Subtree scans first: they may remove what a file job would look for.
        for key in sorted(keys, key=lambda k: (k.kind != TREE, k.path)):
            queue.submit(key)


async def probe(tiers: list[Tier], ready: asyncio.Event) -> bool:
    """Touch a hidden probe file until the watcher reports it; False if it never does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PROBE_TIMEOUT
    paths = [t.root / PROBE_NAME for t in tiers]
    try:
        while not ready.is_set() and loop.time() < deadline:
            for path in paths:
                try:
                    await asyncio.to_thread(path.write_bytes, b"")
                    break
                except OSError:
                    continue
            else:
                return False  # no tier root is writable: nothing to probe with
            try:
                await asyncio.wait_for(ready.wait(), 0.1)
            except TimeoutError:
                continue
    finally:
        for path in paths:
            path.unlink(missing_ok=True)
    return ready.is_set()
