"""Where a journal line becomes durable: append-only day files with group commit.

A tier's journal is ``journal/YYYY-MM-DD.jsonl`` (the UTC day of recording), one
JSON object a line: events, and the records that change what is known about them
(``{"kind": "ref"}`` when recall used them, ``{"kind": "relation"}`` for links).
Nothing is ever edited in place, so the index can always be rebuilt from here.

Appends from many requests share one ``write`` and one ``fsync`` per file: while
one group is being synced, the next collects, so a lone writer waits for exactly
one fsync and sixteen concurrent ones for about two. A write that fails part way
(a full disk) is cut back to the last whole line before the error is returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import stat
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from sidecar.disk.durable import fsync
from sidecar.disk.jsonl import Line, open_owned, parse_line, torn_start, write_all
from sidecar.disk.tiers import open_confined

log = logging.getLogger(__name__)

JOURNAL_DIR = "journal"
_DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.jsonl$")


def day_file(day: str) -> str:
    """The tier-relative file of a UTC day (``2026-11-25``)."""
    return f"{JOURNAL_DIR}/{day}.jsonl"


def today_file() -> str:
    """Today's file (UTC), where records about earlier events are appended."""
    return day_file(datetime.now(UTC).date().isoformat())


def is_journal_file(rel: str) -> bool:
    head, _, name = rel.partition("/")
    return head == JOURNAL_DIR and bool(_DAY_FILE.match(name))


def journal_files(root: Path) -> list[str]:
    """Every day file of the tier, oldest first; links and non-files are left out."""
    try:
        names = os.listdir(root / JOURNAL_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for name in sorted(names):
        if _DAY_FILE.match(name):
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(root / JOURNAL_DIR / name).st_mode):
                    out.append(day_file(name.removesuffix(".jsonl")))
    return out


# -- appending ----------------------------------------------------------------------


class JournalFull(Exception):
    """Appending would take a day file or (``whole``) the whole journal over its cap."""

    def __init__(self, detail: str, whole: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.whole = whole


@dataclass(slots=True)
class Append:
    """One request's lines for one file: written whole or not at all."""

    rel: str
    data: bytes
    items: Any  # handed to ``on_durable`` once the bytes are synced
    start: int = 0  # byte offset the lines were written at
    inode: int = 0  # of the file they went to
    future: asyncio.Future[Any] | None = None
    error: BaseException | None = None
    torn: Line | None = None  # a partial line before ours, which our newline ended


def torn_line(fd: int, size: int) -> Line | None:
    """The file's last line if another program left it without its newline, as the line
    it becomes once our append ends it: listed as a problem, its record kept if it is one."""
    start = torn_start(fd, size)
    if start is None:
        return None
    record, error = parse_line(os.pread(fd, size - start, start))
    why = "no newline: ended by the daemon's next append"
    return Line(0, size + 1, record, f"{why}; {error}" if error else why)


@dataclass(slots=True)
class _Open:
    fd: int
    size: int  # what this process has written or read up to
    inode: int
    whole: bool = False  # our own append ended it, so it ends in a newline: no read to check


class Owner(Protocol):
    """What the group committer asks of the tier journal it writes for (``tier.py``), on
    the writer thread."""

    def on_durable(self, appends: list[Append]) -> list[Any]:
        """Right after a group is synced (the index folds it in); a result an append."""

    def outside_append(self, rel: str, size: int) -> None:
        """The file grew behind our back (an outside edit): read its new lines first."""

    def check_room(self, rel: str, new_size: int, added: int) -> None:
        """Raise ``JournalFull`` if the file at ``new_size`` (``added`` bytes more) would
        pass a cap."""

    def known_size(self, rel: str) -> int:
        """Bytes of the file the index has read: a file opened for its first append since
        start may have grown since, and those lines must be read before ours follow them."""


@dataclass
class Appender:
    """A tier's group committer, writing for its ``owner``."""

    root: Path
    executor: Executor
    owner: Owner
    _pending: list[Append] = field(default_factory=list)
    _flusher: asyncio.Task[None] | None = None
    _files: dict[str, _Open] = field(default_factory=dict)
    groups: int = 0  # fsync groups so far, to see that commits are shared
    appended: int = 0

    async def append(self, rel: str, data: bytes, items: Any) -> Any:
        """Durable on return; the result is what ``owner.on_durable`` gave for it."""
        item = Append(rel, data, items, future=asyncio.get_running_loop().create_future())
        self._pending.append(item)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="journal-commit")
        assert item.future is not None
        # A caller that goes away does not take its lines back: they are being written.
        return await asyncio.shield(item.future)

    async def drain(self) -> None:
        if self._flusher is not None:
            await asyncio.shield(self._flusher)

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            group, self._pending = self._pending, []
            try:
                results = await loop.run_in_executor(self.executor, self._commit, group)
            except BaseException as exc:
                for item in group:
                    if item.future is not None and not item.future.done():
                        item.future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for item, res in zip(group, results, strict=True):
                if item.future is None or item.future.done():
                    continue
                if item.error is not None:
                    item.future.set_exception(item.error)
                else:
                    item.future.set_result(res)

    def _file(self, rel: str) -> _Open:
        opened = self._files.get(rel)
        if opened is not None:
            try:
                same = os.lstat(self.root / rel).st_ino == opened.inode
            except FileNotFoundError:
                same = False
            if same:
                return opened
            # Deleted or replaced behind our back: lines written to the old file would be lost.
            os.close(self._files.pop(rel).fd)
        for old in [r for r in self._files if r != rel]:  # yesterday's file is done
            os.close(self._files.pop(old).fd)
        os.makedirs(self.root / JOURNAL_DIR, 0o755, exist_ok=True)
        created = False
        try:
            fd = open_owned(self.root, rel, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            fd = open_confined(
                self.root, rel, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644
            )
            created = True
        if created:  # the new name must survive a crash as much as its lines
            dir_fd = os.open(self.root / JOURNAL_DIR, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fsync(dir_fd)
            finally:
                os.close(dir_fd)
        st = os.fstat(fd)
        opened = self._files[rel] = _Open(
            fd, 0 if created else self.owner.known_size(rel), st.st_ino
        )
        return opened

    def _commit(self, group: list[Append]) -> list[Any]:
        """On the writer thread: one write and one fsync per file, then the index."""
        by_file: dict[str, list[Append]] = {}
        for item in group:
            by_file.setdefault(item.rel, []).append(item)
        durable: list[Append] = []
        for rel, items in by_file.items():
            try:
                durable += self._write_file(rel, items)
            except Exception as exc:
                for item in items:
                    item.error = exc
        self.groups += 1
        self.appended += len(durable)
        results = self.owner.on_durable(durable) if durable else []
        by_id = {id(item): res for item, res in zip(durable, results, strict=True)}
        return [by_id.get(id(item)) for item in group]

    def _write_file(self, rel: str, items: list[Append]) -> list[Append]:
        opened = self._file(rel)
        size = os.fstat(opened.fd).st_size
        if size != opened.size:  # someone else appended (or cut) the file
            self.owner.outside_append(rel, size)
            # Reading them may have rebuilt the index, which closes our descriptors: the
            # file is opened again rather than written through a number since reused.
            opened = self._file(rel)
            size = opened.size = os.fstat(opened.fd).st_size
            opened.whole = False
        prefix, torn = b"", None if opened.whole else torn_line(opened.fd, size)
        if torn is not None:  # an outside edit left a partial line: ours start on a new one
            prefix = b"\n"
        accepted: list[Append] = []
        total = len(prefix)
        for item in items:
            try:
                self.owner.check_room(rel, size + total + len(item.data), total + len(item.data))
            except JournalFull as exc:
                item.error = exc
                continue
            total += len(item.data)
            accepted.append(item)
        if not accepted:
            return []
        accepted[0].torn = torn  # folded (and listed) before the lines that end it
        data = prefix + b"".join(item.data for item in accepted)
        try:
            write_all(opened.fd, data)
            fsync(opened.fd)
        except OSError:
            # Never leave half a group behind: cut back to where it started.
            with contextlib.suppress(OSError):
                os.ftruncate(opened.fd, size)
                fsync(opened.fd)
            raise
        pos = size + len(prefix)
        for item in accepted:
            item.start, item.inode = pos, opened.inode
            pos += len(item.data)
        opened.size, opened.whole = pos, data.endswith(b"\n")
        return accepted

    def close(self) -> None:
        for opened in self._files.values():
            os.close(opened.fd)
        self._files.clear()
