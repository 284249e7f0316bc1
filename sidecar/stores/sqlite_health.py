"""Whether a SQLite store's file is still usable: what its health and status report.

An error says the index itself is broken (as opposed to a busy, full or read-only disk),
or the file was deleted, replaced or overwritten under the daemon, which SQLite may not
notice for a long time.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

# What says the index itself is unusable, as opposed to a busy, full or read-only disk.
# SQLITE_IOERR (its WAL deleted under it, say), SQLITE_CORRUPT, SQLITE_NOTADB; a full disk
# (SQLITE_FULL) or a busy one is not the index's fault.
_BROKEN_CODES = frozenset({10, 11, 26})
_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
_BROKEN_MESSAGES = (
    "malformed", "not a database", "no such table", "no such column", "disk i/o error",
)  # fmt: skip


def identity(path: Path) -> tuple[int, int] | None:
    """Which file ``path`` is (device, inode), or None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def problem(
    path: Path, opened: tuple[int, int] | None, header_fd: int, exc: BaseException | None
) -> str | None:
    """What is wrong with the index at ``path``, which the store opened as file ``opened``
    and holds ``header_fd`` on (-1 once closed); ``exc``: an error it met, if any."""
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        text = str(exc).lower()
        if (code is not None and code & 0xFF in _BROKEN_CODES) or any(
            m in text for m in _BROKEN_MESSAGES
        ):
            return f"index unusable ({exc})"
    now = identity(path)
    if now is None:
        return "index file vanished"
    if now != opened:
        return "index file replaced by another file"
    if header_fd < 0:
        return None  # closed: a health probe racing shutdown has nothing to report
    try:
        head = os.pread(header_fd, len(_HEADER), 0)
    except OSError as err:
        return f"index file unreadable ({err.strerror})"
    if head != _HEADER:  # overwritten or truncated in place: SQLite may not notice soon
        return "index file is no longer a SQLite database"
    return None
