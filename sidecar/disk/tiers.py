"""Memory tiers on disk, and confined access below a tier root.

Every path an agent or the watcher hands us is relative to a tier root. We open
it one component at a time with ``O_NOFOLLOW`` relative to the parent's file
descriptor, so a symlink anywhere on the way (even one swapped in after a check)
can never lead outside the root.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sidecar.errors import ApiError

INDEX_FILENAME = "index.sqlite"
TIER_NAMES = ("agent", "crew")
# The one scope vocabulary of the API, the MCP tools and the command line: a tier, or both.
SCOPES = (*TIER_NAMES, "both")
# Recall's older words, still accepted: its own journal, and that plus the crew's.
SCOPE_ALIASES = {"own": "agent", "crew_shared": "both"}
# Top-level folders whose markdown a capability indexes in its own format, not as notes
# (``users``: operator models, which are never indexed: only their operator sees one).
# ``archive``: history the lifecycle engine moved out of the active tier, indexed by it
# apart, so it weighs on neither the tier's cap nor an ordinary search.
ARCHIVE_DIR = "archive"
OWN_FORMAT_DIRS = frozenset({"learnings", "facts", "users", ARCHIVE_DIR})


# Control characters other than tab, newline and a CR ending a line: no note needs them,
# and in an answer they are raw binary (terminal escapes, 8-bit CSI, NULs).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


# Every byte but the ones that can start a control character once decoded (C0, DEL, CR,
# and 0xC2, the lead byte of the C1 range): bytes left after deleting these need the regex.
_PLAIN_BYTES = bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0xC2)) + bytes(range(0xC3, 0x100))
_PLAIN_BYTES += b"\t\n"


def decode_text(data: bytes) -> str:
    """A memory file's bytes as text: invalid UTF-8 and control characters become U+FFFD."""
    if not data.translate(None, _PLAIN_BYTES):  # nothing to replace: skip the slow regex
        return data.decode("utf-8", errors="replace")
    return _CONTROL.sub("\ufffd", data.decode("utf-8", errors="replace"))


@dataclass(frozen=True, slots=True)
class Tier:
    name: str  # "agent" or "crew"
    root: Path

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILENAME


def parse_scope(value: object, allowed: tuple[str, ...] = SCOPES) -> str:
    """The scope a request names, an old alias read as its word; ``400 bad_scope`` naming
    the words this caller takes otherwise."""
    scope = SCOPE_ALIASES.get(value, value) if isinstance(value, str) else value
    if scope not in allowed:
        raise ApiError(
            400, "bad_scope", f"'scope' must be one of {', '.join(allowed)}, not {value!r}"
        )
    return str(scope)


class UnsafePath(ValueError):
    """The path is not a plain relative path inside the tier, or not a file only it owns."""


class HardLinked(UnsafePath):
    """A regular file with more than one link: its bytes may belong to a file elsewhere."""


class TooLarge(ValueError):
    """The file is larger than the caller will read; nothing of it was read."""

    def __init__(self, label: str, size: int, limit: int) -> None:
        super().__init__(f"{label} is {size:,} bytes, over the {limit:,}-byte limit")
        self.size = size


def split_relative(rel: str) -> list[str]:
    """Validate a tier-relative path and return its components."""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        raise UnsafePath(f"not a relative path: {rel!r}")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"path must not contain empty, '.' or '..' parts: {rel!r}")
    return parts


def is_indexable_name(name: str) -> bool:
    """Markdown, and not hidden (editors keep swap and temp files as dotfiles)."""
    return name.endswith(".md") and not name.startswith(".")


def open_confined(root: Path, rel: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """Open ``root/rel`` without following any symlink; return the file descriptor.

    Raises FileNotFoundError, or OSError(ELOOP/ENOTDIR) when a component is a
    link or not a directory.
    """
    parts = split_relative(rel)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def read_regular(
    root: Path, rel: str, max_bytes: int | None = None
) -> tuple[bytes, os.stat_result] | None:
    """Bytes and stat of ``root/rel``; None if absent; UnsafePath for a link or non-file,
    TooLarge for a file over ``max_bytes``.

    ``O_NONBLOCK`` keeps a FIFO named like a note from hanging the caller; the type
    is checked on the open descriptor, so nothing can be swapped in after the check.
    """
    return _read_opened(
        lambda: open_confined(root, rel, os.O_RDONLY | os.O_NONBLOCK), rel, max_bytes
    )


def read_regular_in(
    dir_fd: int, name: str, rel: str, max_bytes: int | None = None
) -> tuple[bytes, os.stat_result] | None:
    """``read_regular`` for a file directly in a folder already opened confined (a scan
    reads a whole folder through its one descriptor)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    return _read_opened(lambda: os.open(name, flags, dir_fd=dir_fd), rel, max_bytes)


def _read_opened(
    opener: Callable[[], int], rel: str, max_bytes: int | None
) -> tuple[bytes, os.stat_result] | None:
    try:
        fd = opener()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            raise UnsafePath(f"{rel}: a symlink or non-directory is on the path") from exc
        raise
    return read_fd(fd, rel, max_bytes)


def read_fd(fd: int, label: str, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
    """Read an open descriptor to the end and close it; UnsafePath unless a regular file
    with one link, TooLarge (before reading anything) if over ``max_bytes``.

    Everything is checked on the descriptor itself, so it is the file we read. A
    second hard link means the same bytes also live under another name, perhaps
    outside the tier (a link to ``/etc/passwd`` made inside it, say): never ours.
    """
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{label} is not a regular file")
        if st.st_nlink > 1:
            raise HardLinked(
                f"{label} has {st.st_nlink} hard links: its content may belong to a file "
                "outside the memory folder, so it is neither read nor indexed"
            )
        if max_bytes is not None and st.st_size > max_bytes:
            raise TooLarge(label, st.st_size, max_bytes)
        chunks = []
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def read_confined(
    root: Path, rel: str, max_bytes: int | None = None
) -> tuple[bytes, os.stat_result] | None:
    """Like :func:`read_regular`, but anything that is not a plain readable file is None."""
    try:
        return read_regular(root, rel, max_bytes)
    except (UnsafePath, TooLarge):
        return None
    except PermissionError:
        return None


def is_note(rel: str) -> bool:
    """Whether a tier-relative path is a note (not in a folder with its own format)."""
    return rel.split("/", 1)[0] not in OWN_FORMAT_DIRS


def is_archived(rel: str) -> bool:
    return rel.startswith(ARCHIVE_DIR + "/")


def walk_markdown(root: Path, sub: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Yield (relative path, lstat) for every indexable regular file below root/sub.

    Symlinks (files or directories), hidden entries and anything that is not a
    regular file are skipped, so the walk never leaves the root. A walk of the whole
    tier (``sub`` empty) is a walk of its notes: folders in ``OWN_FORMAT_DIRS`` are left
    to the capability that owns them.
    """
    start = root / sub if sub else root
    try:
        st = start.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    if sub:
        try:
            os.close(open_confined(root, sub, os.O_RDONLY | os.O_DIRECTORY))
        except OSError:
            return
    stack = [(start, sub)]
    while stack:
        path, prefix = stack.pop()
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{prefix}/{entry.name}" if prefix else entry.name
            try:
                est = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(est.st_mode):
                if prefix or entry.name not in OWN_FORMAT_DIRS:
                    stack.append((Path(entry.path), rel))
            elif stat.S_ISREG(est.st_mode) and is_indexable_name(entry.name):
                yield rel, est
