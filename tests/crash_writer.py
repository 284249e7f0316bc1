"""A separate writer process for the crash and cross-process tests.

    python tests/crash_writer.py versions ROOT START
        Replace FILES in turn with complete, recognisable versions START, START+1, ...
        through ``sidecar.disk.durable.write_file``, printing each version number once its
        write has returned. Runs until killed.

    python tests/crash_writer.py append ROOT REL TAG COUNT
        Print "ready", wait for one line on stdin, then append COUNT lines "TAG i" to
        ROOT/REL through ``sidecar.disk.durable.write_file`` and print "done".

The version format is shared with the tests through ``render`` and ``parse``.
"""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

from sidecar.disk import durable

FILES = ("AGENT.md", "daily/2026-11-21.md", "daily/2026-11-22.md")
# Lines per version: from a few bytes to about 200 KB, so kills land mid-write too.
SIZES = (1, 3, 40, 400, 2_000, 6_000, 9_000)


def file_of(version: int) -> str:
    return FILES[version % len(FILES)]


def render(version: int) -> bytes:
    """The full content of ``version``: header, numbered lines, then a checksum line."""
    lines = random.Random(version).choice(SIZES)
    body = [f"{file_of(version)} version {version} lines {lines}\n"]
    body += [f"version {version} line {i} {'x' * (i % 7)}\n" for i in range(lines)]
    data = "".join(body).encode()
    return data + f"sha256 {hashlib.sha256(data).hexdigest()}\n".encode()


def parse(data: bytes) -> int:
    """The version ``data`` is a complete copy of; ValueError if it is anything else."""
    _, sep, last = data.rstrip(b"\n").rpartition(b"\n")
    if not sep or not last.startswith(b"sha256 "):
        raise ValueError(f"no checksum line at the end ({len(data)} bytes)")
    version = int(data.split(b" ", 3)[2])
    if data != render(version):
        raise ValueError(f"not a complete copy of version {version} ({len(data)} bytes)")
    return version


def run_versions(root: Path, start: int) -> None:
    version = start
    while True:
        content = render(version)
        durable.write_file(root, file_of(version), lambda _old, c=content: c)
        sys.stdout.write(f"{version}\n")
        sys.stdout.flush()
        version += 1


def run_append(root: Path, rel: str, tag: str, count: int) -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        line = f"{tag} {i}\n".encode()
        durable.write_file(root, rel, lambda old, ln=line: (old or b"") + ln)
    print("done", flush=True)


def main(argv: list[str]) -> None:
    if argv[0] == "versions":
        run_versions(Path(argv[1]), int(argv[2]))
    elif argv[0] == "append":
        run_append(Path(argv[1]), argv[2], argv[3], int(argv[4]))
    else:
        raise SystemExit(f"unknown command {argv[0]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
