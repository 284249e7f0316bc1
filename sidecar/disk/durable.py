"""Where a write becomes durable: lock, temp file, fsync, rename, directory fsync.

A reader (or a crash) sees either the old file or the new one, never a mix:
the new bytes go to a temp file created exclusively in the same directory,
are fsynced, and only then renamed over the target; the directory is fsynced
so the rename itself survives power loss. Every directory on the way is opened
with ``O_NOFOLLOW`` relative to its parent, so a symlink swapped in at any
moment cannot redirect the write outside the tier.

The lock only orders writers that take it; an editor or ``echo >>`` does not. So
right before the rename the target is read again, and if it no longer holds the
bytes ``build`` was given, the new content is dropped and built afresh from what is
there now: a replace never overwrites bytes it did not read.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sidecar.disk.tiers import UnsafePath, read_fd, split_relative


def fsync(fd: int) -> None:
    """``os.fsync``, timed: a slow disk shows in the fsync latency histogram first.

    The metrics (and the Prometheus client) load on the first sync, not with this
    module: a hook that only reads the files never loads them.
    """
    from sidecar.metrics import FSYNC_SECONDS

    with FSYNC_SECONDS.time():
        os.fsync(fd)


TMP_SUFFIX = ".sidecar-tmp"
_TMP_NAME = re.compile(r"^\..+\.[0-9a-f]{12}" + re.escape(TMP_SUFFIX) + "$")


MAX_ATTEMPTS = 50  # a file rewritten faster than it can be built and synced: give up


class KeptChanging(OSError):
    """Every attempt found the target changed by another writer before its rename."""


class NotDurable(OSError):
    """The rename happened but the directory fsync failed: the new content is in place
    and visible, but may not survive a crash."""


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    old: bytes | None  # None: the file did not exist
    new: bytes
    mtime_ns: int  # of the new file, so its index entry needs no second stat


def _open_parent(root: Path, parts: list[str], create: bool) -> int:
    """A descriptor of the target's directory, creating missing directories if asked."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            try:
                nxt = _open_dir(fd, part)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    fsync(fd)  # the new entry must survive a crash as much as the file
                except FileExistsError:
                    pass
                nxt = _open_dir(fd, part)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_dir(parent_fd: int, name: str) -> int:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePath(f"{name!r} is a symlink or not a directory") from exc
        raise


def _open_leaf(dir_fd: int, name: str) -> int | None:
    """A descriptor of the target, None if it does not exist; never through a link."""
    try:
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{name!r} is a symlink") from exc
        raise


def _read_current(dir_fd: int, name: str) -> tuple[bytes | None, int]:
    """Current bytes and permission bits of the target, without following a link."""
    fd = _open_leaf(dir_fd, name)
    if fd is None:
        return None, 0o644
    data, st = read_fd(fd, repr(name))
    return data, stat.S_IMODE(st.st_mode)


def _holds(dir_fd: int, name: str, expected: bytes | None) -> bool:
    """Whether the target still holds exactly ``expected`` (None: still absent)."""
    fd = _open_leaf(dir_fd, name)
    if fd is None:
        return expected is None
    return expected is not None and read_fd(fd, repr(name))[0] == expected


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(
    root: Path,
    rel: str,
    build: Callable[[bytes | None], bytes],
    renamed: Callable[[WriteOutcome], None] | None = None,
    discarded: Callable[[], None] | None = None,
) -> WriteOutcome:
    """Replace ``root/rel`` with ``build(current bytes)``, atomically and durably.

    ``build`` runs under the lock, so concurrent writers (in any process) each see
    the result of the previous one. If it raises, nothing is written. Any failure
    before the rename leaves the target untouched and removes the temp file.
    ``renamed`` is called as soon as the new content is in place, before the
    directory fsync, so that a caller can overlap its own work with that fsync.

    If the target changed under the build (a writer that does not take the lock),
    ``discarded`` is called and ``build`` runs again on the new bytes: it must be
    a function of its argument. ``KeptChanging`` after ``MAX_ATTEMPTS`` of those.
    """
    parts = split_relative(rel)
    dir_fd = _open_parent(root, parts[:-1], create=True)
    tmp: str | None = None
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)  # other processes writing in this directory
        name = parts[-1]
        for _ in range(MAX_ATTEMPTS):
            old, mode = _read_current(dir_fd, name)
            new = build(old)
            tmp, mtime_ns = _write_temp(dir_fd, name, new, mode)
            if _holds(dir_fd, name, old):
                break
            os.unlink(tmp, dir_fd=dir_fd)
            tmp = None
            if discarded is not None:
                discarded()
        else:
            raise KeptChanging(
                errno.EAGAIN, f"{rel} kept changing while it was being written; nothing was "
                "written, try again",
            )  # fmt: skip
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
        outcome = WriteOutcome(old, new, mtime_ns)
        if renamed is not None:
            renamed(outcome)
        try:
            fsync(dir_fd)
        except OSError as exc:
            raise NotDurable(exc.errno, f"directory fsync failed: {exc.strerror}") from exc
        return outcome
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        os.close(dir_fd)  # also releases the flock


def _write_temp(dir_fd: int, name: str, data: bytes, mode: int) -> tuple[str, int]:
    """A synced temp file holding ``data`` beside ``name``: its name and mtime."""
    tmp = f".{name}.{secrets.token_hex(6)}{TMP_SUFFIX}"
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
        dir_fd=dir_fd,
    )  # fmt: skip
    try:
        try:
            _write_all(fd, data)
            fsync(fd)
            return tmp, os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def remove_stale_temps(root: Path) -> list[str]:
    """Delete temp files a crash left behind (they never replaced anything).

    A directory whose lock another process holds is skipped: its temp file may
    belong to a write in progress, not a crash.
    """
    removed: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        stale = [f for f in filenames if _TMP_NAME.match(f)]
        if not stale:
            continue
        dir_fd = os.open(dirpath, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            try:
                fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            for fname in stale:
                with contextlib.suppress(FileNotFoundError):
                    if stat.S_ISREG(os.lstat(fname, dir_fd=dir_fd).st_mode):
                        os.unlink(fname, dir_fd=dir_fd)
                        removed.append(os.path.relpath(os.path.join(dirpath, fname), root))
        finally:
            os.close(dir_fd)
    return removed
