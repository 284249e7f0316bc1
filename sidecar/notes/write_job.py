"""A write and its reindex as one job, and how a failed write is told to the caller.

The file I/O (``durable.write_file``) runs on a files thread. As soon as the new
bytes are built, the job's own thread parses them and stages the index update
while the fsync runs, and commits it right after the rename (while the directory
fsync runs). New text is never searchable before it is on disk; a write that
fails changes neither the file nor the index; an index failure alone leaves the
write standing. When the durable write builds again (the file changed under it),
what was staged is rolled back and the new bytes are staged instead.
"""

from __future__ import annotations

import errno
import os
import queue
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.disk import durable
from sidecar.disk.tiers import UnsafePath
from sidecar.errors import ApiError
from sidecar.notes.files import CapExceeded, MemoryFile

Builder = Callable[[bytes | None], bytes]
# Commits the new bytes to an index once the second callable (which waits for the
# rename and returns the new file's mtime) allows it; see ``indexer.index_written``.
Indexer = Callable[[bytes, Callable[[], int]], None]


@dataclass(frozen=True, slots=True)
class WriteJob:
    """What a write job did: the write's outcome or its error, and any index failure."""

    outcome: durable.WriteOutcome | None
    error: Exception | None
    index_error: Exception | None

    @property
    def changed(self) -> bool:
        """The file was written (whether or not its reindex succeeded)."""
        return self.outcome is not None


class _Retry(Exception):
    """The staged bytes were dropped (the file changed under them): stage the next ones."""


class _Ended(Exception):
    """The I/O ended before the rename: nothing to index."""


def write_and_index(
    root: Path, rel: str, build: Builder, io_pool: Executor, index: Indexer
) -> WriteJob:
    """Run on the reindex worker's thread, so the job keeps its place in the FIFO."""
    # What the I/O thread did, in order: built (bytes), then placed (mtime) or discarded
    # (the write builds again), ...; ended when the I/O is over.
    steps: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

    def build_and_share(current: bytes | None) -> bytes:
        new = build(current)
        steps.put(("built", new))
        return new

    def placed() -> int:
        kind, mtime_ns = steps.get()
        if kind == "placed":
            return int(mtime_ns)
        raise _Retry() if kind == "discarded" else _Ended()

    io = io_pool.submit(
        durable.write_file, root, rel, build_and_share,
        lambda outcome: steps.put(("placed", outcome.mtime_ns)),
        lambda: steps.put(("discarded", None)),
    )  # fmt: skip
    io.add_done_callback(lambda _: steps.put(("ended", None)))
    index_error: Exception | None = None
    while (step := steps.get())[0] == "built":
        try:
            index(step[1], placed)
        except _Retry:
            continue
        except _Ended:
            pass  # io carries the reason
        except Exception as exc:
            index_error = exc
        break
    try:
        return WriteJob(io.result(), None, index_error)
    except Exception as exc:
        return WriteJob(None, exc, None)


def write_unindexed(root: Path, rel: str, build: Builder) -> WriteJob:
    """Only the durable write, for a tier whose index is being rebuilt: the write must
    not wait for the rebuild, and the caller queues the file's reindex after it."""
    try:
        return WriteJob(durable.write_file(root, rel, build), None, None)
    except Exception as exc:
        return WriteJob(None, exc, None)


def api_error(target: MemoryFile, exc: Exception) -> Exception:
    """The error a failed write answers with; anything unexpected is raised as is."""
    if isinstance(exc, CapExceeded):
        return exc.to_api_error()
    if isinstance(exc, UnsafePath):
        return forbidden(target, str(exc))
    if isinstance(exc, OSError):
        return _os_failure(target, exc)
    return exc


# Below this a disk is full whatever --min-free-mb says: a write needs room for its temp
# file and SQLite for its journal, so health must not say ok.
FULL_BELOW = 256 * 1024


def disk_problem(root: Path, min_free: int) -> str | None:
    """Why a write cannot succeed on ``root`` right now, or None; checked afresh each time,
    so writes are offered again as soon as space returns."""
    try:
        st = os.statvfs(root)
    except OSError as exc:
        return f"{root} unavailable: {exc.strerror}"
    if not os.access(root, os.W_OK) or st.f_flag & os.ST_RDONLY:
        return f"{root} is not writable"
    free = st.f_bavail * st.f_frsize
    if free < max(min_free, FULL_BELOW):
        size = f"{free // (1024 * 1024)} MiB" if free >= 1024 * 1024 else f"{free // 1024} KiB"
        return f"only {size} free on {root}"
    return None


def forbidden(target: MemoryFile, why: str) -> ApiError:
    return ApiError(
        403, "forbidden_path", f"{target.rel} in the {target.scope} tier: {why}; nothing was "
        "written",
    )  # fmt: skip


def _os_failure(target: MemoryFile, exc: OSError) -> ApiError:
    if isinstance(exc, durable.NotDurable):
        return ApiError(
            500, "not_durable", f"{target.rel}: the new content is in place but {exc.strerror}; "
            "it may not survive a crash. Read the file before writing again.",
        )  # fmt: skip
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ApiError(
            507, "disk_full", f"no space left to write {target.rel}; nothing was written"
        )
    if exc.errno == errno.EROFS:
        return ApiError(503, "read_only", f"memory folder is read-only; {target.rel} unchanged")
    return ApiError(
        500, "write_failed", f"could not write {target.rel} ({exc.strerror or exc}); "
        "nothing was written",
    )  # fmt: skip
