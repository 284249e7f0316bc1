"""The reindex worker: strict FIFO, no duplicate waiting jobs, drains on shutdown."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from sidecar.index.queue import FILE, TREE, JobKey, ReindexQueue


class Recorder:
    """Runs jobs on the worker thread; the first one blocks until released."""

    def __init__(self) -> None:
        self.ran: list[JobKey] = []
        self.gate = threading.Event()
        self.started = threading.Event()
        self.fail: set[JobKey] = set()

    def __call__(self, key: JobKey) -> str:
        self.started.set()
        self.gate.wait(10)
        self.ran.append(key)
        if key in self.fail:
            raise OSError(f"cannot index {key.path}")
        return key.path


@pytest.fixture
async def queue_and_recorder() -> AsyncIterator[tuple[ReindexQueue, Recorder]]:
    recorder = Recorder()
    with ThreadPoolExecutor(1) as pool:
        queue = ReindexQueue(recorder, pool)
        queue.start()
        yield queue, recorder
        recorder.gate.set()
        await queue.drain_and_stop()


def key(path: str, kind: str = FILE) -> JobKey:
    return JobKey("agent", kind, path)


async def test_jobs_run_in_submission_order(
    queue_and_recorder: tuple[ReindexQueue, Recorder],
) -> None:
    queue, rec = queue_and_recorder
    futures = [queue.submit(key(p)) for p in ["c.md", "a.md", "b.md", "d.md"]]
    rec.gate.set()
    assert await asyncio.gather(*futures) == ["c.md", "a.md", "b.md", "d.md"]
    assert [k.path for k in rec.ran] == ["c.md", "a.md", "b.md", "d.md"]


async def test_a_waiting_path_is_not_queued_twice(
    queue_and_recorder: tuple[ReindexQueue, Recorder],
) -> None:
    queue, rec = queue_and_recorder
    first = queue.submit(key("busy.md"))
    await asyncio.to_thread(rec.started.wait, 10)  # busy.md is running now
    a1 = queue.submit(key("a.md"))
    b = queue.submit(key("b.md"))
    a2 = queue.submit(key("a.md"))
    again = queue.submit(key("busy.md"))  # running already: must run once more
    assert a1 is a2
    assert again is not first
    assert queue.depth() == 4
    rec.gate.set()
    await asyncio.gather(first, a1, b, again)
    assert [k.path for k in rec.ran] == ["busy.md", "a.md", "b.md", "busy.md"]
    assert queue.depth() == 0


async def test_failed_job_reports_and_worker_goes_on(
    queue_and_recorder: tuple[ReindexQueue, Recorder],
) -> None:
    queue, rec = queue_and_recorder
    rec.fail.add(key("bad.md"))
    bad = queue.submit(key("bad.md"))
    good = queue.submit(key("good.md"))
    rec.gate.set()
    with pytest.raises(OSError, match=r"cannot index bad\.md"):
        await bad
    assert "bad.md" in queue.last_error["agent"]
    assert await good == "good.md"
    assert "agent" not in queue.last_error  # a later success clears the error


async def test_drain_finishes_every_accepted_job() -> None:
    rec = Recorder()
    with ThreadPoolExecutor(1) as pool:
        queue = ReindexQueue(rec, pool)
        queue.start()
        futures = [queue.submit(key(f"{i}.md")) for i in range(20)]
        futures.append(queue.submit(key("", TREE)))
        stopping = asyncio.create_task(queue.drain_and_stop())
        await asyncio.to_thread(rec.started.wait, 10)
        with pytest.raises(RuntimeError, match="shut down"):
            queue.submit(key("late.md"))
        rec.gate.set()
        await stopping
    assert all(f.done() and not f.exception() for f in futures)
    assert len(rec.ran) == 21
