"""Crash consistency: a writer killed with SIGKILL at random moments never leaves a torn file.

A separate process (tests/crash_writer.py) replaces three files in turn with complete,
recognisable versions of up to ~240 KB through ``durable.write_file``, reporting each
finished version on its stdout. We let it run until it has reported a random number
of versions, wait a random fraction of a write, and kill it. Every file must then be
a complete copy of either the version it held before the write in flight or the
version being written; never a mix, never truncated. The temp files the kills leave
behind are removed when a MemoryService starts on the folder.
"""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

from sidecar.config import Settings
from sidecar.disk import durable
from sidecar.service import MemoryService
from tests.crash_writer import FILES, file_of, parse

REPO = Path(__file__).resolve().parent.parent
WRITER = REPO / "tests" / "crash_writer.py"
KILLS = 50


class Writer:
    """The writer process, with its stdout read line by line under a deadline."""

    def __init__(self, root: Path, start: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), "versions", str(root), str(start)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=env,
        )  # fmt: skip
        self.buf = b""

    def next_version(self, timeout: float = 10.0) -> int:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                raise AssertionError("the writer reported no progress in time")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                err = self.proc.stderr.read() if self.proc.stderr else b""
                raise AssertionError(f"the writer exited early:\n{err.decode()}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return int(line)

    def kill(self) -> list[int]:
        """SIGKILL the writer; return the versions it reported that we had not read yet."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.kill()
        self.proc.wait(10)
        rest = self.buf + self.proc.stdout.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return [int(x) for x in rest.split()]


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"*{durable.TMP_SUFFIX}") if p.is_file()]


def check_files(root: Path, allowed: dict[str, set[int | None]]) -> dict[str, int | None]:
    """Each file is a complete copy of one of its allowed versions (None: absent)."""
    found: dict[str, int | None] = {}
    for rel in FILES:
        path = root / rel
        if not path.exists():
            found[rel] = None
        else:
            try:
                found[rel] = parse(path.read_bytes())
            except ValueError as exc:
                raise AssertionError(f"{rel} is torn: {exc}") from None
        assert found[rel] in allowed[rel], f"{rel}: version {found[rel]}, not {allowed[rel]}"
    others = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith(durable.TMP_SUFFIX)
    }
    assert others <= set(FILES), f"unexpected files: {sorted(others - set(FILES))}"
    return found


def kill_writer_repeatedly(root: Path, kills: int, rng: random.Random) -> None:
    """Kill the writer ``kills`` times, checking every file after each kill."""
    current: dict[str, int | None] = dict.fromkeys(FILES)
    start = 0
    for _ in range(kills):
        writer = Writer(root, start)
        reported: list[int] = []
        try:
            for _ in range(rng.randint(1, 4)):
                reported.append(writer.next_version())
            # A random moment inside the next write (a large one takes a few milliseconds).
            time.sleep(rng.uniform(0, 0.004))
        finally:
            reported += writer.kill()
        assert reported == list(range(start, start + len(reported))), reported
        for version in reported:
            current[file_of(version)] = version
        in_flight = reported[-1] + 1
        allowed: dict[str, set[int | None]] = {rel: {current[rel]} for rel in FILES}
        allowed[file_of(in_flight)].add(in_flight)
        current = check_files(root, allowed)
        start = in_flight + 1


async def test_sigkill_mid_write_never_tears_a_file(settings: Settings) -> None:
    root = settings.agent_dir
    seed = int.from_bytes(os.urandom(4))
    try:
        kill_writer_repeatedly(root, KILLS, random.Random(seed))
    except AssertionError as exc:
        exc.add_note(f"random seed {seed}")
        raise
    # Each kill that landed mid-write left its temp file; if none did, the kills
    # above proved nothing.
    assert temp_files(root), "no kill landed mid-write"
    before = {rel: (root / rel).read_bytes() for rel in FILES if (root / rel).exists()}

    svc = MemoryService(settings)
    await svc.start()
    try:
        assert temp_files(root) == [], f"temp files left after start: {temp_files(root)}"
        after = {rel: (root / rel).read_bytes() for rel in FILES if (root / rel).exists()}
        assert after == before
        for data in after.values():
            parse(data)
    finally:
        await svc.stop()
