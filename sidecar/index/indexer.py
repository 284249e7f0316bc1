"""Bring an index store in line with the markdown files of one tier.

Plain synchronous functions: the daemon runs them on its reindex worker thread,
the offline CLI calls them directly.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sidecar.disk.tiers import (
    HardLinked,
    TooLarge,
    UnsafePath,
    decode_text,
    is_indexable_name,
    open_confined,
    read_regular,
    read_regular_in,
    split_relative,
    walk_markdown,
)
from sidecar.index.chunking import DEFAULT_MAX_CHARS, chunk_markdown
from sidecar.index.dates import found_date
from sidecar.index.store import BuildFile, FileState, IndexedFile, IndexStore

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 16 * 1024 * 1024
# A file modified this close to when we last looked may change again within the
# same mtime tick, so size and mtime alone cannot prove it unchanged.
_RACY_NS = 2_000_000_000


@dataclass(slots=True)
class SyncResult:
    indexed: int = 0  # files whose chunks were (re)written
    removed: int = 0
    unchanged: int = 0

    def add(self, other: SyncResult) -> None:
        self.indexed += other.indexed
        self.removed += other.removed
        self.unchanged += other.unchanged

    @property
    def changed(self) -> int:
        return self.indexed + self.removed


Skipped = dict[str, str]  # tier-relative path -> why it is not indexed


def _skip(rel: str, reason: str, skipped: Skipped | None) -> None:
    """Record (and log, once) a file that is there but refused."""
    if skipped is not None and skipped.get(rel) != reason:
        log.warning("file not indexed", extra={"file": rel, "reason": reason})
        skipped[rel] = reason


def _read(root: Path, rel: str, skipped: Skipped | None) -> tuple[bytes, FileState] | None:
    """The file's bytes and state, or None if it is not a plain readable file we index.

    A file that is there but refused (a link, a second hard link, over the size
    limit, unreadable) is recorded in ``skipped`` with the reason, so status can
    name it; the size is checked before a byte is read.
    """
    return _settle(rel, _checked(rel, lambda: read_regular(root, rel, MAX_FILE_BYTES)), skipped)


# What reading one file gave: its bytes and state, why it is refused, or None (gone, or
# not a regular file: never a note).
ReadResult = tuple[bytes, FileState] | str | None


def _checked(rel: str, read: Callable[[], tuple[bytes, os.stat_result] | None]) -> ReadResult:
    try:
        got = read()
    except UnsafePath as exc:
        return str(exc) if isinstance(exc, HardLinked) else None
    except TooLarge as exc:
        return str(exc)
    except PermissionError:
        return "permission denied"
    if got is None:
        return None
    data, st = got
    return data, FileState(st.st_size, st.st_mtime_ns, hashlib.sha256(data).hexdigest())


def record_skip(rel: str, why: str | None, skipped: Skipped | None) -> None:
    """What a build's read of ``rel`` found: refused (and why), or fine after all."""
    if why is not None:
        _skip(rel, why, skipped)
    elif skipped is not None:
        skipped.pop(rel, None)


def count_notes(root: Path, sub: str = "") -> int:
    """How many files a full build below ``root/sub`` will look at (for its progress)."""
    return sum(1 for _ in walk_markdown(root, sub))


def _settle(rel: str, got: ReadResult, skipped: Skipped | None) -> tuple[bytes, FileState] | None:
    """Record a refusal in ``skipped`` (or clear an old one); the bytes if any."""
    if isinstance(got, str):
        return _skip(rel, got, skipped)
    if skipped is not None:
        skipped.pop(rel, None)
    return got


def read_many(root: Path, rels: Iterable[str]) -> Iterator[tuple[str, ReadResult]]:
    """Read many files, each as ``_read`` would, opening each folder once for all of its
    files in a row (a build lists them folder by folder) rather than once per file."""
    dir_fd: int | None = None
    folder: str | None = None
    try:
        for rel in rels:
            parent, _, name = rel.rpartition("/")
            if parent != folder:
                if dir_fd is not None:
                    os.close(dir_fd)
                    dir_fd = None
                folder = parent
                try:
                    dir_fd = (
                        open_confined(root, parent, os.O_RDONLY | os.O_DIRECTORY)
                        if parent
                        else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    )
                except OSError:
                    dir_fd = None  # gone or not a plain folder now: read each file alone
            if dir_fd is None:
                yield rel, _checked(rel, lambda r=rel: read_regular(root, r, MAX_FILE_BYTES))
            else:
                yield (
                    rel,
                    _checked(
                        rel,
                        lambda d=dir_fd, n=name, r=rel: read_regular_in(d, n, r, MAX_FILE_BYTES),
                    ),
                )
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


# One file of a build, read and parsed: (path, what it holds, why it is refused); both
# None when it is gone or is not a regular file.
Parsed = tuple[str, BuildFile | None, str | None]


def read_parsed(root: Path, rels: Iterable[str], max_chars: int) -> list[Parsed]:
    """Read and parse files as notes for a build: in the daemon's own process, or in a
    parser worker process (``parse_pool``)."""
    out: list[Parsed] = []
    for rel, got in read_many(root, rels):
        if isinstance(got, str):
            out.append((rel, None, got))
        elif got is None:
            out.append((rel, None, None))
        else:
            out.append((rel, parse_note(rel, *got, max_chars), None))
    return out


def parse_note(rel: str, data: bytes, state: FileState, max_chars: int) -> IndexedFile:
    parsed = chunk_markdown(decode_text(data), max_chars, found_date(rel.rsplit("/", 1)[-1]))
    return IndexedFile(rel, state, parsed.metadata, parsed.chunks)


# How a file's bytes become what its index holds: notes by default; a capability with
# its own file format (learnings) passes its own.
Parser = Callable[[str, bytes, FileState, int], IndexedFile]


def _stat_unchanged(known: FileState | None, st: os.stat_result) -> bool:
    if known is None or known.size != st.st_size or known.mtime_ns != st.st_mtime_ns:
        return False
    return time.time_ns() - st.st_mtime_ns > _RACY_NS


def sync_file(
    store: IndexStore,
    root: Path,
    rel: str,
    max_chars: int = DEFAULT_MAX_CHARS,
    skipped: Skipped | None = None,
    parse: Parser = parse_note,
) -> SyncResult:
    """Reindex one path after a change event: the content hash decides, never the mtime."""
    try:
        parts = split_relative(rel)
    except ValueError:
        return SyncResult()
    known = store.file_state(rel)
    got = _read(root, rel, skipped) if is_indexable_name(parts[-1]) else None
    if got is None:
        return SyncResult(removed=store.remove_files([rel]) if known else 0)
    data, state = got
    if known is not None and known.sha256 == state.sha256:
        # Typically the watcher's event for a write whose reindex already ran:
        # hashing proved it unchanged, so there is nothing to parse.
        if known != state:
            store.touch_file(rel, state)
        return SyncResult(unchanged=1)
    store.replace_file(parse(rel, data, state, max_chars))
    return SyncResult(indexed=1)


def index_written(
    store: IndexStore,
    rel: str,
    data: bytes,
    mtime_ns: Callable[[], int],
    max_chars: int = DEFAULT_MAX_CHARS,
    parse: Parser = parse_note,
) -> None:
    """Index the bytes a durable write is putting in place, without reading them back.

    ``mtime_ns`` blocks until the write's rename is done and returns the new file's
    mtime (or raises, and nothing changes): parsing and staging overlap the write's
    fsync, and the commit follows the rename, so the text is never searchable
    before it is on disk.
    """
    sha = hashlib.sha256(data).hexdigest()
    item = parse(rel, data, FileState(len(data), 0, sha), max_chars)
    store.replace_file(item, lambda: FileState(len(data), mtime_ns(), sha))


def sync_tree(
    store: IndexStore,
    root: Path,
    sub: str = "",
    max_chars: int = DEFAULT_MAX_CHARS,
    skipped: Skipped | None = None,
    parse: Parser = parse_note,
) -> SyncResult:
    """Reconcile everything below ``sub`` (the whole tier when empty).

    Files whose size and mtime match the index are skipped without reading;
    the rest are hashed; indexed paths no longer on disk are removed.
    """
    plan = plan_tree(store, root, sub, skipped)
    result = SyncResult(unchanged=plan.unchanged)
    for rel in [*plan.changed, *plan.new]:
        result.add(sync_file(store, root, rel, max_chars, skipped, parse))
    if plan.vanished:
        result.removed += store.remove_files(plan.vanished)
    return result


@dataclass(slots=True)
class TreePlan:
    """What a reconcile below one folder has to do, before it reads any file."""

    new: list[str]  # on disk, not in the index: a build indexes these in bulk
    changed: list[str]  # in the index, but size or mtime differ (or too recent to tell)
    vanished: list[str]  # in the index, no longer on disk
    unchanged: int


def plan_tree(
    store: IndexStore, root: Path, sub: str = "", skipped: Skipped | None = None
) -> TreePlan:
    """Walk below ``sub`` and compare with the index. New files come in walk order (folder
    by folder), which is what lets ``read_many`` open each folder once."""
    prefix = f"{sub}/" if sub else ""
    known = {p: s for p, s in store.file_states().items() if not sub or p.startswith(prefix)}
    plan = TreePlan([], [], [], 0)
    seen: set[str] = set()
    for rel, st in walk_markdown(root, sub):
        seen.add(rel)
        state = known.get(rel)
        if state is None:
            plan.new.append(rel)
        elif _stat_unchanged(state, st):
            plan.unchanged += 1
        else:
            plan.changed.append(rel)
    if skipped is not None:
        for rel in [p for p in skipped if (not sub or p.startswith(prefix)) and p not in seen]:
            del skipped[rel]  # gone, or no longer markdown
    plan.vanished = [p for p in known if p not in seen]
    return plan


def load_tree(
    root: Path,
    max_chars: int = DEFAULT_MAX_CHARS,
    skipped: Skipped | None = None,
    sub: str = "",
    parse: Parser = parse_note,
) -> Iterator[IndexedFile]:
    """Every indexable file below root/sub, parsed, for a full rebuild."""
    if skipped is not None:
        skipped.clear()
    for rel, _ in sorted(walk_markdown(root, sub)):
        got = _read(root, rel, skipped)
        if got is not None:
            yield parse(rel, *got, max_chars)
