"""The month files of archived daily logs: ``archive/daily/YYYY-MM.md``, one section a day.

A section is the day's log, byte for byte, between two marker lines that name its source
file, under a heading naming the day (so search hits and readers see which day it was)::

    <!-- archived daily/2025-11-03.md bytes=1234 -->
    ## 2025-11-03

    ...the log...
    <!-- end daily/2025-11-03.md -->

The begin marker's byte count is the length of the log: a reader takes exactly that many
bytes as the section, so a log that itself holds marker lines can neither close its own
section nor open another; a count that no longer fits (a person edited the section) falls
back to the first end marker naming the day, and is reported. ``log=INO:MTIME_NS:SIZE``
names the log file last merged into the section, so a pass after a crash removes that log
only while it is the same file, unchanged (month files from before it lack the field).
Everything is bytes: text outside sections (the month's title, a person's notes, text that
is not UTF-8) is kept exactly as it was, and a section is replaced in place. Files are read
without following links (``entries``, ``read``): a link below the tier is never ours.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from sidecar.disk.tiers import UnsafePath, read_fd

_BEGIN = re.compile(
    rb"^<!-- archived (daily/(\d{4}-\d{2}-\d{2})\.md) bytes=(\d+)(?: log=(\d+:-?\d+:\d+))? -->\n",
    re.M,
)
MONTH_NAME = re.compile(r"(\d{4}-\d{2})\.md")
FOLDER = "archive/daily"  # in the tier


@dataclass(slots=True)
class Section:
    day: str  # YYYY-MM-DD
    content: bytes  # the log as archived; as found when edited by hand since
    edited: bool = False  # the byte count does not match what is between the markers
    log: str | None = None  # identity of the log file merged last (``identity``); None: unknown


def identity(st: os.stat_result) -> str:
    """A log file as it was when read: inode, modification time and size."""
    return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


@dataclass(slots=True)
class Month:
    """A month file as parts in order: raw bytes, or a day's section."""

    parts: list[bytes | Section]
    problems: list[str]

    def section(self, day: str) -> Section | None:
        for part in self.parts:
            if isinstance(part, Section) and part.day == day:
                return part
        return None

    def put(self, section: Section) -> None:
        """Replace the day's section, or add it before the first later day (else last)."""
        for i, part in enumerate(self.parts):
            if isinstance(part, Section) and part.day == section.day:
                self.parts[i] = section
                return
        for i, part in enumerate(self.parts):
            if isinstance(part, Section) and part.day > section.day:
                self.parts.insert(i, section)
                return
        self.parts.append(section)

    def days(self) -> list[str]:
        return [p.day for p in self.parts if isinstance(p, Section)]

    def render(self) -> bytes:
        out = bytearray()
        for part in self.parts:
            if isinstance(part, Section):
                if out and not out.endswith(b"\n"):
                    out += b"\n"  # a marker only counts at the start of a line
                out += _render(part)
            else:
                out += part
        return bytes(out)


def title(month: str) -> bytes:
    return f"# Daily logs of {month} (archived)\n\n".encode()


def _render(section: Section) -> bytes:
    rel = f"daily/{section.day}.md".encode()
    body = section.content
    if body and not body.endswith(b"\n"):
        body += b"\n"
    day = section.day.encode()
    log = b" log=%s" % section.log.encode() if section.log else b""
    head = b"<!-- archived %s bytes=%d%s -->\n## %s\n\n" % (rel, len(section.content), log, day)
    return head + body + b"<!-- end %s -->\n" % rel


def parse(data: bytes | None, rel: str) -> Month:
    """A month file read back. A begin marker without its end marker is left as text and
    reported: the file is still a readable note, and its day is archived again if its log
    is still in ``daily/``."""
    if not data:
        return Month([], [])
    parts: list[bytes | Section] = []
    problems: list[str] = []
    at = 0
    for m in _BEGIN.finditer(data):
        if m.start() < at:
            continue  # inside a section already taken
        source, day, count = m.group(1), m.group(2).decode(), int(m.group(3))
        log = m.group(4).decode() if m.group(4) else None
        exact = _exact(data, m.end(), source, day, count)
        if exact is not None:  # the count fits: exactly the log, whatever it holds
            if m.start() > at:
                parts.append(data[at : m.start()])
            parts.append(Section(day, data[exact[0] : exact[0] + count], log=log))
            at = exact[1]
            continue
        end = re.compile(rb"^<!-- end " + re.escape(source) + rb" -->\n?", re.M)
        closing = end.search(data, m.end())
        if closing is None:
            problems.append(f"{rel}: the section of {day} has no end marker; kept as text")
            continue
        if m.start() > at:
            parts.append(data[at : m.start()])
        body = data[m.end() : closing.start()]
        heading = b"## %s\n\n" % day.encode()
        body = body[len(heading) :] if body.startswith(heading) else body
        fits = len(body) >= count and body[count:] in (b"", b"\n")
        parts.append(Section(day, body[:count] if fits else body, edited=not fits, log=log))
        problems.append(f"{rel}: the section of {day} does not hold its bytes={count} (edited "
                        "by hand?); read up to its first end marker")  # fmt: skip
        at = closing.end()
    if at < len(data):
        parts.append(data[at:])
    return Month(parts, problems)


def _exact(data: bytes, start: int, source: bytes, day: str, count: int) -> tuple[int, int] | None:
    """Where the content of a section begun at ``start`` starts and where its end marker
    ends, when the heading, ``count`` bytes and the end marker are right there; else None."""
    heading = b"## %s\n\n" % day.encode()
    if not data.startswith(heading, start):
        return None
    body = start + len(heading)
    at = body + count
    if at > len(data):
        return None
    if count and data[at - 1 : at] != b"\n":
        if data[at : at + 1] != b"\n":
            return None
        at += 1  # the newline ``_render`` adds after a log that lacks one
    end = b"<!-- end %s -->" % source
    if not data.startswith(end, at):
        return None
    at += len(end)
    return body, at + 1 if data[at : at + 1] == b"\n" else at


def entries(folder: Path) -> list[tuple[str, os.stat_result]]:
    """Regular, visible files of a folder (none if it is missing or a link)."""
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return []
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if not entry.name.startswith(".") and stat.S_ISREG(st.st_mode):
                found.append((entry.name, st))
    return found


def read(folder: Path, name: str) -> bytes | None:
    """A regular file's bytes; None if it is missing, a link, or has other links."""
    found = read_log(folder, name)
    return None if found is None else found[0]


def read_log(folder: Path, name: str) -> tuple[bytes, str] | None:
    """``read``, with the ``identity`` of the file read."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data, st = read_fd(fd, name)
    except UnsafePath:  # not a regular file with one link: never ours to move
        return None
    return data, identity(st)


def archived_days(folder: Path) -> dict[str, bytes]:
    """Every day's section in the month files of ``folder``, as found. Blocking."""
    days: dict[str, bytes] = {}
    for name, _ in entries(folder):
        if MONTH_NAME.fullmatch(name):
            for part in parse(read(folder, name), name).parts:
                if isinstance(part, Section):
                    days[part.day] = part.content
    return days
