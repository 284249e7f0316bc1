"""The single reindex worker: strict FIFO, one job at a time, no duplicate waiting jobs.

Watcher events, periodic reconcile scans, rebuild requests and API writes
all go through here, so the index sees changes in the order they were
noticed and only one writer ever touches a store. Anyone may await a job; a
request for a job that is already waiting shares that job's future, since the
waiting job will read the file after the request was made anyway.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

FILE = "file"  # one path changed
TREE = "tree"  # a directory appeared, vanished or moved: reconcile below it
REBUILD = "rebuild"  # replace the whole tier index in one transaction
OPTIMIZE = "optimize"  # merge FTS5 segments
WRITE = "write"  # an API write and its reindex, as one job (one per file at a time)
HEAL = "heal"  # the index is unusable (corrupt, gone): start it afresh and rebuild
BUILD = "build"  # the next step of a cold build (jobs.py), after the jobs queued meanwhile


@dataclass(frozen=True, slots=True)
class JobKey:
    tier: str
    kind: str
    path: str = ""
    # Tells apart jobs that must never share a future: each API write carries its own
    # content, so two writes to one file are two jobs.
    ticket: int = 0


Runner = Callable[[JobKey], Any]


class ReindexQueue:
    def __init__(self, run: Runner, executor: Executor) -> None:
        self._run = run
        self._executor = executor
        self._waiting: OrderedDict[JobKey, asyncio.Future[Any]] = OrderedDict()
        self._queued_at: dict[JobKey, float] = {}  # monotonic time each job was first asked for
        self._running: JobKey | None = None
        self._running_since = 0.0  # when the running job was first asked for
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self._worker: asyncio.Task[None] | None = None
        self.last_error: dict[str, str] = {}  # tier -> message of its last failed job

    def start(self) -> None:
        self._worker = asyncio.create_task(self._loop(), name="reindex-worker")

    def submit(self, key: JobKey) -> asyncio.Future[Any]:
        """Queue a job (or join the identical waiting one) and return its future."""
        if self._closed:
            raise RuntimeError("reindex queue is shut down")
        fut = self._waiting.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._waiting[key] = fut
            self._queued_at[key] = time.monotonic()
            self._idle.clear()
            self._wakeup.set()
        return fut

    def withdraw(self, key: JobKey) -> bool:
        """Take a job that has not started off the queue; False if it is running or done."""
        fut = self._waiting.pop(key, None)
        if fut is None:
            return False
        self._queued_at.pop(key, None)
        fut.cancel()
        return True

    def depth(self, tier: str | None = None) -> int:
        """Jobs waiting or running, optionally only those of one tier. Any thread: the
        copy of the waiting keys is one C-level step."""
        keys = list(self._waiting)
        running = self._running
        if running is not None:
            keys.append(running)
        return sum(1 for k in keys if tier is None or k.tier == tier)

    def oldest_age(self, tier: str) -> float | None:
        """Seconds since the oldest job of ``tier`` still waiting or running was asked for:
        a queue that is stuck shows as an age that keeps growing, not only as depth."""
        # One C-level copy first: a metrics scrape calls this from another thread.
        times = [t for k, t in list(self._queued_at.items()) if k.tier == tier]
        running, since = self._running, self._running_since
        if running is not None and running.tier == tier:
            times.append(since)
        return time.monotonic() - min(times) if times else None

    def pending(self, tier: str, kind: str) -> bool:
        keys = list(self._waiting)
        if self._running is not None:
            keys.append(self._running)
        return any(k.tier == tier and k.kind == kind for k in keys)

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def drain_and_stop(self) -> None:
        """Refuse new jobs, finish every queued one, then stop the worker."""
        self._closed = True
        self._wakeup.set()
        if self._worker is not None:
            await self._worker

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._waiting:
                self._idle.set()
                if self._closed:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            key, fut = self._waiting.popitem(last=False)
            # Moved off ``_queued_at`` now: the same key may be queued again while it runs.
            self._running_since = self._queued_at.pop(key, time.monotonic())
            self._running = key
            try:
                result = await loop.run_in_executor(self._executor, self._run, key)
            except Exception as exc:  # a failed job must not stop the worker
                self.last_error[key.tier] = f"{key.kind} {key.path or '/'}: {exc}"
                log.error(
                    "reindex job failed",
                    extra={"tier": key.tier, "kind": key.kind, "path": key.path, "error": str(exc)},
                )
                if not fut.done():
                    fut.set_exception(exc)
                    fut.exception()  # mark retrieved: nobody may be awaiting it
            else:
                self.last_error.pop(key.tier, None)
                if not fut.done():
                    fut.set_result(result)
            finally:
                self._running = None
