"""Journal retention under SIGKILL: a separate process (tests/journal_trimmer.py) trims
months of history and is killed at random moments of the pass; after each kill every
event is on disk exactly once, whole or trimmed, every archive decompresses to its day
file as laid down, and after a last whole pass the index is what a rebuild makes."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sidecar.journal.index import FILENAME, JournalIndex
from sidecar.journal.retention import EXCERPT_CHARS, split_lines
from tests.journal_history import History, index_state, lay_down, whole_payload
from tests.sidecar_process import wait_for

REPO = Path(__file__).resolve().parent.parent
TRIMMER = REPO / "tests" / "journal_trimmer.py"
WINDOW = 10
KILLS = 5


def trimmer(root: Path, now: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(TRIMMER), str(root), repr(now), str(WINDOW)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip


def archives(root: Path) -> list[Path]:
    folder = root / "archive" / "journal"
    return sorted(folder.glob("*.jsonl.gz")) if folder.is_dir() else []


def check_disk(root: Path, history: History) -> int:
    """Every day file is as laid down or its trimmed form (line for line, each event once,
    whole or cut to its excerpt), archived first; returns the trimmed days."""
    packed = {f"journal/{p.name.removesuffix('.gz')}": p for p in archives(root)}
    for rel, path in packed.items():
        assert gzip.decompress(path.read_bytes()) == history.files[rel], rel
    on_disk = {p.relative_to(root).as_posix() for p in (root / "journal").glob("*.jsonl")}
    assert on_disk == set(history.files)
    trimmed = 0
    for rel, original in history.files.items():
        data = (root / rel).read_bytes()
        if data == original:
            continue
        assert rel in packed, f"{rel} was trimmed before it was archived"
        trimmed += 1
        old_lines, new_lines = split_lines(original), split_lines(data)
        assert len(old_lines) == len(new_lines), rel
        for old_raw, new_raw in zip(old_lines, new_lines, strict=True):
            if old_raw == new_raw:
                continue
            old, new = json.loads(old_raw), json.loads(new_raw)
            whole = whole_payload(old_raw)
            assert new.pop("payload") == {"excerpt": whole[:EXCERPT_CHARS]}
            assert new.pop("trimmed")["payload_bytes"] == len(whole.encode())
            del old["payload"]
            assert new == old
    return trimmed


def kill_repeatedly(root: Path, history: History, now: float, rng: random.Random) -> int:
    """Kill the trimmer ``KILLS`` times, each once it has archived a few more days and a
    random moment after; check the disk after each. Returns how many kills landed."""
    landed = 0
    for _ in range(KILLS):
        before = len(archives(root))
        proc = trimmer(root, now)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n", proc.stderr.read() if proc.stderr else ""
            step = rng.randint(1, 6)

            def progressed(p: Any = proc, b: int = before, s: int = step) -> bool:
                return len(archives(root)) >= b + s or p.poll() is not None

            wait_for(progressed, timeout=60, what="the trimmer to archive more days")
            time.sleep(rng.uniform(0, 0.01))  # a random moment in the next day's steps
            if proc.poll() is None:
                landed += 1
        finally:
            proc.kill()
            proc.wait(10)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        check_disk(root, history)
    return landed


def test_sigkill_during_trimming_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    now = time.time()
    history = lay_down(root, now, 120, WINDOW, per_day=3)
    seed = int.from_bytes(os.urandom(4))
    try:
        landed = kill_repeatedly(root, history, now, random.Random(seed))
    except AssertionError as exc:
        exc.add_note(f"random seed {seed}")
        raise
    assert landed >= 1, "every pass finished before its kill: the kills proved nothing"
    proc = trimmer(root, now)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    answer: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert answer["problems"] == []
    due = {rel for rel, data in history.files.items()
           if any(history.token[i].encode() in data for i in history.ordinary)}  # fmt: skip
    assert check_disk(root, history) == len(due) == len(archives(root))

    live = JournalIndex(root / FILENAME)
    fresh = JournalIndex(tmp_path / "fresh.sqlite")
    try:
        assert not live.rebuilt
        for rel in sorted(history.files):
            live.catch_up(root, rel)  # what start-up reads: nothing new, nothing replaced
        fresh.rebuild(root)
        assert index_state(live.reader()) == index_state(fresh.reader())
        (count,) = live.reader().execute("SELECT count(*) FROM events").fetchone()
        assert count == len(history.events)
    finally:
        live.close()
        fresh.close()
