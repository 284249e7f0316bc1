"""One tier's journal: its day files, its index, its vectors and its single writer.

Every change to a tier's journal — an append, a catch-up after an outside edit, a
rebuild, new vectors — runs on the tier's one journal thread, so the index has a
single writer and folds lines in the order they reached the disk. Reads use
their own connections on the readers' threads.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.config import Caps
from sidecar.disk import jsonl
from sidecar.disk.jsonl import Line, SetAside, set_aside_torn_tail
from sidecar.disk.tiers import Tier
from sidecar.errors import ApiError
from sidecar.journal import log as journal_log
from sidecar.journal.index import FILENAME, JournalIndex, ReplacedFile
from sidecar.journal.log import Appender, JournalFull

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

MakeRoom = Callable[[str], Awaitable[bool]]
RETRY_AFTER_S = 2  # a journal at its cap while maintenance trims: the client's wait


def encode(record: dict[str, Any]) -> bytes:
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return line.encode() + b"\n"


@dataclass
class EventVectors:
    """The tier's event vectors for one model, in memory for a brute-force scan
    (10,000 MiniLM vectors are 15 MB and scan in about a millisecond)."""

    model: str
    dim: int
    ids: list[str] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    _rows: Any = None  # float32 matrix with spare capacity
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ids: list[str], rows: npt.NDArray[np.float32]) -> None:
        import numpy as np

        with self._lock:
            n = len(self.ids)
            if self._rows is None or n + len(ids) > len(self._rows):
                grown = np.zeros((max(1024, 2 * (n + len(ids))), self.dim), np.float32)
                if self._rows is not None:
                    grown[:n] = self._rows[:n]
                self._rows = grown
            self._rows[n : n + len(ids)] = rows
            self.positions.update((event_id, n + i) for i, event_id in enumerate(ids))
            self.ids = [*self.ids, *ids]  # a new list: readers keep the one they took

    def matrix(self) -> tuple[list[str], npt.NDArray[np.float32]]:
        with self._lock:
            ids = self.ids
            rows = self._rows[: len(ids)] if self._rows is not None else None
        if rows is None:
            import numpy as np

            return [], np.zeros((0, self.dim), np.float32)
        return ids, rows

    def __len__(self) -> int:
        return len(self.ids)


class TierJournal:
    def __init__(self, tier: Tier, caps: Caps, make_room: list[MakeRoom]) -> None:
        self.tier = tier
        self.caps = caps
        self.make_room = make_room  # ``Hooks.make_room``: heard by the lifecycle engine
        self.writer = ThreadPoolExecutor(1, thread_name_prefix=f"sidecar-journal-{tier.name}")
        self.index: JournalIndex | None = None
        self.sizes: dict[str, int] = {}  # bytes of each day file the index has read
        self.appender = Appender(tier.root, self.writer, self)
        self.set_aside: list[SetAside] = []
        self.ready = asyncio.Event()  # the index has caught up with the files, or failed to
        self.failed: str | None = None  # why opening failed: the tier's requests get a 503
        self.vectors: EventVectors | None = None
        self.embedded_since_start = 0
        self.embed_after = 0  # events up to this seq have been offered to the embedder
        self.refused: dict[str, str] = {}  # event id -> why the embedder refused it
        self.embed_error: str | None = None

    # -- on the writer thread ---------------------------------------------------------

    def open(self) -> None:
        """Set torn tails aside, open the index, and read what it has not seen yet."""
        root = self.tier.root
        os.makedirs(root, 0o755, exist_ok=True)
        for rel in journal_log.journal_files(root):
            try:
                torn = set_aside_torn_tail(root, rel)
            except (OSError, ValueError) as exc:
                log.error("journal file unreadable", extra={"file": rel, "error": str(exc)})
                continue
            if torn is not None:
                self.set_aside.append(torn)
                log.warning(
                    "torn journal line set aside",
                    extra={
                        "tier": self.tier.name,
                        "file": torn.file,
                        "line": torn.line,
                        "bytes": torn.bytes,
                        "kept_in": torn.file + jsonl.REJECTED_SUFFIX,
                    },
                )
        self.index = JournalIndex(root / FILENAME)
        self.catch_up_all()

    def catch_up_all(self) -> None:
        assert self.index is not None
        if self.index.rebuilt:
            self.rebuild()
            return
        try:
            for rel in journal_log.journal_files(self.tier.root):
                self.index.catch_up(self.tier.root, rel)
        except ReplacedFile as exc:
            log.warning(
                "journal file changed under the index; rebuilding",
                extra={"tier": self.tier.name, "why": str(exc)},
            )
            self.rebuild()
        self.sizes = {rel: offset for rel, (offset, _, _) in self.index.files().items()}

    def catch_up(self, rel: str) -> None:
        """An outside edit to one file (seen by the watcher): read its new lines."""
        assert self.index is not None
        try:
            self.index.catch_up(self.tier.root, rel)
        except FileNotFoundError:
            self.rebuild()  # a day file was deleted: what it held is gone from the index too
        except ReplacedFile:
            self.rebuild()
        self.sizes = {r: offset for r, (offset, _, _) in self.index.files().items()}

    def rebuild(self) -> int:
        assert self.index is not None
        self.appender.close()  # a replaced file must be opened afresh
        count = self.index.rebuild(self.tier.root)
        self.embed_after = 0  # event numbers start again
        self.sizes = {rel: offset for rel, (offset, _, _) in self.index.files().items()}
        log.info("journal index rebuilt", extra={"tier": self.tier.name, "events": count})
        return count

    def known_size(self, rel: str) -> int:
        return self.sizes.get(rel, 0)

    def outside_append(self, rel: str, size: int) -> None:
        """Someone else wrote to the file we append to: fold their lines in first."""
        self.catch_up(rel)

    def check_room(self, rel: str, new_size: int, added: int) -> None:
        if new_size > self.caps.journal_day:
            raise JournalFull(
                f"{rel} would pass its cap of {self.caps.journal_day:,} bytes; nothing was "
                "recorded. Record fewer or smaller events (put bulk output in a file, not the "
                "journal), or raise --cap-journal-day-bytes"
            )
        total = sum(self.sizes.values()) + added  # active day files: archives do not count
        if total > self.caps.journal_tier:
            raise JournalFull(
                f"the {self.tier.name} journal would pass its cap of {self.caps.journal_tier:,} "
                "bytes; nothing was recorded, and retention found nothing more to trim (what "
                "is left is newer than --journal-retention-days, pinned, important or "
                "recently recalled). Lower --journal-retention-days, move old day files out "
                "of journal/ (they are plain JSON Lines) or raise --cap-journal-tier-bytes",
                whole=True,
            )

    def on_durable(self, appends: list[journal_log.Append]) -> list[Any]:
        """Right after a group is synced: fold its records into the index, each file's
        appends as one run of lines (they are contiguous in it), in one transaction.
        Returns how many records each append held."""
        assert self.index is not None
        runs: dict[str, tuple[list[Line], int]] = {}
        for item in sorted(appends, key=lambda a: (a.rel, a.start)):
            lines, _ = runs.setdefault(item.rel, ([], item.inode))
            if item.torn is not None:
                lines.append(item.torn)
            pos = item.start
            for record, size in item.items:
                pos += size
                lines.append(Line(0, pos, record))
            self.sizes[item.rel] = item.start + len(item.data)
        self.index.apply_group([(rel, lines, inode) for rel, (lines, inode) in runs.items()])
        return [len(item.items) for item in appends]

    def close(self) -> None:
        self.appender.close()
        if self.index is not None:
            self.index.close()

    # -- from the event loop ---------------------------------------------------------

    async def run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.writer, fn, *args)

    async def append(self, rel: str, records: list[dict[str, Any]]) -> int:
        """Durable and indexed on return: every record, or none of them and an
        ``ApiError`` saying why.

        Over the whole journal's cap, the lifecycle engine is asked to make room (it trims
        old events now) and the append is tried once more; still over, the answer is a
        retryable 503 while room was made, a 422 once nothing more can be trimmed."""
        lines = [encode(r) for r in records]
        items = [(r, len(line)) for r, line in zip(records, lines, strict=True)]
        data = b"".join(lines)
        try:
            return await self._append(rel, data, items)
        except JournalFull as exc:
            made = False
            for listener in self.make_room:
                made = await listener(self.tier.name) or made
            if not made:
                raise ApiError(422, "journal_full", exc.detail) from None
        try:
            return await self._append(rel, data, items)
        except JournalFull:
            raise ApiError(503, "journal_busy", f"the {self.tier.name} journal is at its cap "
                           "while maintenance trims old events; nothing was recorded. Retry "
                           "shortly", {"retry_after": RETRY_AFTER_S}) from None  # fmt: skip

    async def _append(self, rel: str, data: bytes, items: list[Any]) -> int:
        """One try; ``JournalFull`` over the whole journal's cap, for ``append`` to handle."""
        try:
            return int(await self.appender.append(rel, data, items))
        except JournalFull as exc:
            if exc.whole:
                raise
            raise ApiError(422, "journal_full", exc.detail) from None
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise ApiError(507, "insufficient_storage", f"the disk holding the "
                               f"{self.tier.name} journal is full; nothing was recorded. "
                               "Free space and retry.") from None  # fmt: skip
            raise ApiError(
                500, "write_failed", f"{rel}: {exc.strerror or exc}; nothing was recorded"
            ) from None
        except ValueError as exc:  # an unsafe path (a symlink or hard link as the day file)
            raise ApiError(500, "write_failed", f"{rel}: {exc}; nothing was recorded") from None
