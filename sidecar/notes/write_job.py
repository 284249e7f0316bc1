"""A write and its reindex as one job, and how a failed write is told to the caller.

The file I/O (``durable.write_file``) runs on a files thread. As soon as the new
bytes are built, the job's own thread parses them and stages the index update
while the fsync runs, and commits it right after the rename (while the directory
fsync runs). New text is never searchable before it is on disk; a write that
fails changes neither the file nor the index; an index failure alone leaves the
write standing.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path

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


def write_and_index(
    root: Path, rel: str, build: Builder, io_pool: Executor, index: Indexer
) -> WriteJob:
    """Run on the reindex worker's thread, so the job keeps its place in the FIFO."""
    built: Future[bytes] = Future()
    placed: Future[int] = Future()  # the new file's mtime, once it is in place

    def build_and_share(current: bytes | None) -> bytes:
        try:
            new = build(current)
        except BaseException as exc:
            built.set_exception(exc)
            raise
        built.set_result(new)
        return new

    def failed_early(io: Future[durable.WriteOutcome]) -> None:
        # The I/O ended before build ran or before the rename: nothing to index.
        for step in (built, placed):
            if not step.done():
                step.set_exception(io.exception() or RuntimeError("write cancelled"))

    io = io_pool.submit(
        durable.write_file, root, rel, build_and_share,
        lambda outcome: placed.set_result(outcome.mtime_ns),
    )  # fmt: skip
    io.add_done_callback(failed_early)
    index_error: Exception | None = None
    try:
        new = built.result()
    except Exception:
        pass  # io carries the reason
    else:
        try:
            index(new, placed.result)
        except Exception as exc:
            index_error = exc
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
