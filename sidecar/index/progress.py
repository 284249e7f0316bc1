"""How far a long index build has got: for status, logs, metrics and the CLI's bar.

A build runs on the index writer thread; status, a metrics scrape and the log
read its progress from other threads. Each field is one attribute written by
that thread alone, so a reader sees a value that is at worst a moment old,
never a torn one, without taking a lock.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

LOG_EVERY_S = 5.0  # at most one progress line per build this often
BAR_EVERY_S = 0.1  # redraws of the terminal bar


def iso_utc(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass(slots=True)
class BuildProgress:
    """One full build of a tier's index: ``kind`` is cold, reindex or heal."""

    tier: str
    kind: str
    files_total: int
    files_done: int = 0
    state: str = "building"  # then "done" or "failed"
    started_at: float = field(default_factory=time.time)
    _started: float = field(default_factory=time.monotonic)
    _logged: float = field(default_factory=time.monotonic)
    finished_s: float | None = None

    @property
    def seconds(self) -> float:
        if self.finished_s is not None:
            return self.finished_s
        return time.monotonic() - self._started

    @property
    def rate_per_s(self) -> float:
        seconds = self.seconds
        return self.files_done / seconds if seconds > 0 else 0.0

    def advance(self, files: int) -> None:
        """Count files done; log progress when the last line is ``LOG_EVERY_S`` old."""
        self.files_done += files
        now = time.monotonic()
        if now - self._logged >= LOG_EVERY_S:
            self._logged = now
            log.info("index build progress", extra=self.log_fields())

    def finish(self, state: str = "done") -> None:
        self.finished_s = time.monotonic() - self._started
        self.state = state

    def log_fields(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "kind": self.kind,
            "files_done": self.files_done,
            "files_total": self.files_total,
            "rate_per_s": round(self.rate_per_s, 1),
            "seconds": round(self.seconds, 3),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "kind": self.kind,
            "files_done": self.files_done,
            "files_total": self.files_total,
            "rate_per_s": round(self.rate_per_s, 1),
            "started_at": iso_utc(self.started_at),
        }


class ProgressBar:
    """``files done / total`` as a bar on a terminal; silent when ``out`` is not a tty
    (piped into a file or another program, where redraws are noise)."""

    def __init__(self, label: str, out: IO[str] | None = None, width: int = 30) -> None:
        self.label = label
        self.out = out if out is not None else sys.stderr
        self.width = width
        self.enabled = bool(getattr(self.out, "isatty", lambda: False)())
        self._drawn = 0.0
        self._shown = False

    def update(self, done: int, total: int, rate: float = 0.0, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn < BAR_EVERY_S:
            return
        self._drawn = now
        filled = min(self.width, self.width * done // total) if total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        # ESC[K clears what a longer line drawn before left to the right of this one.
        line = f"{self.label} [{bar}] {done:,}/{total:,} files  {rate:,.0f}/s"
        self.out.write(f"\r{line}\x1b[K")
        self.out.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.out.write("\n")
            self.out.flush()
            self._shown = False


def tracked(items: Iterable[T], total: int, label: str, out: IO[str] | None = None) -> Iterator[T]:
    """``items`` unchanged, drawing a bar of how many have gone by (on a terminal only)."""
    bar = ProgressBar(label, out)
    started = time.monotonic()
    done = 0
    try:
        for item in items:
            yield item
            done += 1
            bar.update(done, total, done / max(time.monotonic() - started, 1e-9))
        bar.update(done, max(total, done), done / max(time.monotonic() - started, 1e-9), True)
    finally:
        bar.close()
