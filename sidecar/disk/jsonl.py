"""Append-only JSON Lines files: read whole lines, set a torn tail aside, append durably.

The journal's day files and the facts log are such files. A line is one JSON
object; an append is one ``write`` of whole lines and an ``fsync`` before anyone
is told it happened, so a crash can only leave a last line without its newline,
which ``set_aside_torn_tail`` moves to ``<file>.rejected`` at the next start.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar import strict_json
from sidecar.disk.durable import fsync
from sidecar.disk.tiers import HardLinked, UnsafePath, open_confined

REJECTED_SUFFIX = ".rejected"
_READ_CHUNK = 1 << 20


def open_owned(root: Path, rel: str, flags: int) -> int:
    """A confined descriptor of a file only this tier owns (no link on the path, one
    hard link, a regular file)."""
    try:
        fd = open_confined(root, rel, flags | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            raise UnsafePath(f"{rel}: a symlink or non-directory is on the path") from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        if stat.S_ISREG(st.st_mode):
            raise HardLinked(f"{rel} has {st.st_nlink} links; only a file the tier owns is read")
        raise UnsafePath(f"{rel} is not a regular file")
    return fd


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- reading ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    number: int  # 1-based
    end: int  # byte offset just past its newline
    record: dict[str, Any] | None  # None: it did not parse
    error: str | None = None


def parse_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        record = strict_json.loads_stored(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not JSON: {exc}"
    except RecursionError:  # a hand-written line nested thousands deep
        return None, "not JSON: nested too deep to read"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    return record, None


def read_lines(root: Path, rel: str, offset: int = 0, first_line: int = 1) -> Iterator[Line]:
    """Whole lines from byte ``offset`` on; a last line without its newline (an append
    in progress, or a torn tail) is not yielded."""
    fd = open_owned(root, rel, os.O_RDONLY)
    try:
        number, pos, rest = first_line, offset, b""
        while True:
            chunk = os.pread(fd, _READ_CHUNK, pos)
            if not chunk:
                return
            pos += len(chunk)
            data = rest + chunk
            start = 0
            base = pos - len(data)
            while (nl := data.find(b"\n", start)) != -1:
                raw = data[start:nl]
                if raw.strip():
                    record, error = parse_line(raw)
                    yield Line(number, base + nl + 1, record, error)
                else:
                    yield Line(number, base + nl + 1, None, "empty line")
                number += 1
                start = nl + 1
            rest = data[start:]
    finally:
        os.close(fd)


# -- torn tails -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SetAside:
    file: str
    line: int
    bytes: int


def torn_start(fd: int, size: int) -> int | None:
    """Where the last line starts if it has no newline (a torn tail, or a line another
    program is still writing); None if the file ends in a whole line."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    pos = size
    while pos > 0:
        start = max(0, pos - _READ_CHUNK)
        nl = os.pread(fd, pos - start, start).rfind(b"\n")
        if nl != -1:
            return start + nl + 1
        pos = start
    return 0


def set_aside_torn_tail(root: Path, rel: str) -> SetAside | None:
    """A crash mid-append leaves a last line without its newline: move its bytes to
    ``<file>.rejected`` (durably, first), then cut the file back to its last whole line."""
    fd = open_owned(root, rel, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        cut = torn_start(fd, size)
        if cut is None:
            return None
        tail = os.pread(fd, size - cut, cut)
        line = os.pread(fd, cut, 0).count(b"\n") + 1
        rejected = open_confined(
            root, rel + REJECTED_SUFFIX, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )
        try:
            write_all(rejected, tail + b"\n")
            fsync(rejected)
        finally:
            os.close(rejected)
        os.ftruncate(fd, cut)
        fsync(fd)
        return SetAside(rel, line, len(tail))
    finally:
        os.close(fd)


def append(root: Path, rel: str, data: bytes) -> int:
    """Append whole lines durably (created if absent); the file's new size. A write that
    fails part way is cut back, so the file never keeps half of ``data``. A last line
    without its newline (written by hand) is ended first: ours stay whole, and the reader
    sees that line as the one line it is."""
    try:
        fd = open_owned(root, rel, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError:
        fd = open_confined(root, rel, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        size = os.fstat(fd).st_size
        if torn_start(fd, size) is not None:
            data = b"\n" + data
        try:
            write_all(fd, data)
            fsync(fd)
        except OSError:
            os.ftruncate(fd, size)
            raise
        return size + len(data)
    finally:
        os.close(fd)
