"""Notes as an agent writes and reads them: checked, durable, and searchable on return.

A write is refused before anything touches the disk when it names a file the
layout does not define, would pass a cap, or looks like a prompt injection;
otherwise it is one job in the index FIFO (``write_job``) and answers only once
the new text is both durable (``disk/durable.py``) and committed to the index.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sidecar.capability import Capability, Health, Hooks
from sidecar.config import Settings
from sidecar.disk.tiers import TooLarge, UnsafePath, decode_text, read_regular, walk_markdown
from sidecar.errors import ApiError
from sidecar.index import indexer
from sidecar.index.chunking import split_lines
from sidecar.index.indexes import TierIndexes, TierState
from sidecar.index.queue import FILE, JobKey
from sidecar.metrics import INJECTION_BLOCKS, timed
from sidecar.notes import files, write_job
from sidecar.notes.files import CapExceeded
from sidecar.safety import scan, scan_remembered

log = logging.getLogger(__name__)


def _tier_bytes(state: TierState) -> int:
    """The tier's size for its cap: from the index, or from the files while the index is
    unusable (a write must not wait for, or fail with, the index's rebuild). Active bytes
    only: ``archive/`` is in neither, and has a cap of its own."""
    if state.broken is None:
        try:
            return state.store.total_bytes()
        except Exception as exc:  # the write job's index step will report it
            log.warning("tier size taken from the files", extra={"error": str(exc)})
    return sum(st.st_size for _, st in walk_markdown(state.tier.root))


def refuse_injection(content: str) -> None:
    """422 for text the memory block would withhold: nothing that reaches a model's
    context later is written in the first place."""
    finding = scan(content)
    if finding is not None:
        INJECTION_BLOCKS.labels(category=finding.category).inc()
        raise ApiError(
            422, "injection_suspected",
            f"content looks like a prompt injection (category={finding.category}, "
            f"pattern={finding.pattern}); nothing was written. Memory holds notes, not "
            "instructions: describe what happened instead of quoting commands to a model.",
            {"category": finding.category, "pattern": finding.pattern},
        )  # fmt: skip


class Notes(Capability):
    def __init__(self, settings: Settings, indexes: TierIndexes, hooks: Hooks) -> None:
        self.settings = settings
        self.indexes = indexes
        self.hooks = hooks  # asks own_indexers
        self._files = ThreadPoolExecutor(2, thread_name_prefix="sidecar-files")
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def close(self) -> None:
        self._files.shutdown()

    def _writable_tier(self, scope: str) -> TierState:
        if scope == "crew" and self.settings.role != "lead":
            raise ApiError(
                403, "crew_read_only", "crew memory is written by the crew lead; write to "
                "your agent tier (scope=agent) or ask the lead to record it",
            )  # fmt: skip
        (state,) = self.indexes.for_scope(scope)
        return state

    @timed("write")
    async def write(self, scope: str, file: object, content: object, mode: str) -> dict[str, Any]:
        """Persist durably and reindex, as one job in the FIFO queue, before answering.

        The answer comes only after the job has committed the new text to the index,
        so a search right after a successful write finds it.
        """
        if mode not in ("append", "replace"):
            raise ApiError(400, "bad_mode", "'mode' must be append or replace")
        if not isinstance(content, str):
            raise ApiError(400, "bad_content", "'content' must be a string")
        if "\x00" in content:
            raise ApiError(400, "bad_content", "'content' must not contain NUL characters")
        if mode == "append" and not content.strip():
            raise ApiError(400, "bad_content", "nothing to append: 'content' is empty")
        refuse_injection(content)
        target = files.resolve(scope, file)
        files.refuse_future_daily(target)
        state = self._writable_tier(scope)
        caps = self.settings.caps
        cap = caps.for_kind(target.kind)
        tier_full: list[int] = []  # the tier's cap was hit, not the file's

        def build(current: bytes | None) -> bytes:
            new = files.compose(current, content, mode)
            if len(new) > cap:
                raise CapExceeded(target.rel, cap, len(new), current)
            if target.kind != files.LEARNING:  # learnings have their own cap, not the tier's
                held = _tier_bytes(state)
                projected_tier = held - len(current or b"") + len(new)
                if projected_tier > caps.tier:
                    tier_full.append(projected_tier)
                    what = f"the {scope} tier"
                    raise CapExceeded(what, caps.tier, projected_tier, current, held)
            return new

        try:
            done, rebuilding = await self.commit(target, build)
        except ApiError:  # history the engine can archive must not dead-end the write
            if not tier_full or not await self._make_room(scope):
                raise
            done, rebuilding = await self.commit(target, build)
        outcome = done.outcome
        assert outcome is not None
        body: dict[str, Any] = {
            "file": target.rel,
            "scope": scope,
            "bytes_written": len(outcome.new) - len(outcome.old or b"")
            if mode == "append"
            else len(outcome.new),
            "usage": files.usage(len(outcome.new), cap),
            "indexed": done.index_error is None and not rebuilding,
        }
        if rebuilding:
            body["warning"] = (
                f"written durably; the {scope} index is being rebuilt ({state.broken}), "
                "so this is searchable once that is done"
            )
        if done.index_error is not None:  # the write stands; only search lags
            self.indexes.queue.last_error[scope] = f"write {target.rel}: {done.index_error}"
            body["warning"] = f"written durably, but not yet searchable: {done.index_error}"
            log.warning(
                "reindex after write failed",
                extra={"file": target.rel, "error": str(done.index_error)},
            )
        if 100 * len(outcome.new) >= files.WARN_PCT * cap:
            body["current_entries"] = decode_text(outcome.new)
            body["usage_text"] = files.usage_text(len(outcome.new), cap)
            body["warning"] = " ".join(filter(None, [body.get("warning"),
                f"{target.rel} is at {body['usage_text']} of its cap. Consolidate these "
                "entries now (mode=replace with a merged, shorter version) before the next "
                "append is refused."]))  # fmt: skip
        return body

    async def _make_room(self, scope: str) -> bool:
        """The tier is at its cap: its maintenance runs now (off the loop); whether it
        freed bytes, so the write is worth trying once more."""
        made = False
        for listener in self.hooks.make_room:
            try:
                made = await listener(scope) or made
            except Exception:  # the write still answers, with its 422
                log.exception("making room failed", extra={"tier": scope})
        return made

    async def commit(
        self, target: files.MemoryFile, build: write_job.Builder
    ) -> tuple[write_job.WriteJob, bool]:
        """Write ``build(current bytes)`` to ``target`` durably and index it, as one FIFO
        job; raise the ApiError a failed write answers with. Also whether the notes index
        was being rebuilt, so the new text is not searchable yet."""
        scope = target.scope
        state = self._writable_tier(scope)
        own = self.hooks.own_indexers.get(target.rel.split("/", 1)[0])
        chunk_chars = self.settings.chunk_chars

        def job(tier: TierState) -> write_job.WriteJob:  # on the index writer thread
            def index(new: bytes, mtime_ns: Callable[[], int]) -> None:
                if own is not None:
                    own(scope, target.rel, new, mtime_ns)
                else:
                    indexer.index_written(tier.store, target.rel, new, mtime_ns, chunk_chars)

            return write_job.write_and_index(tier.tier.root, target.rel, build, self._files, index)

        rebuilding = state.broken is not None and own is None
        async with self._locks.setdefault((scope, target.rel), asyncio.Lock()):
            if rebuilding:  # durable now; searchable once the rebuild and its reindex are done
                done = await asyncio.get_running_loop().run_in_executor(
                    self._files, write_job.write_unindexed, state.tier.root, target.rel, build
                )
                if done.outcome is not None:
                    with contextlib.suppress(RuntimeError):  # stopping: the next start scans
                        self.indexes.queue.submit(JobKey(scope, FILE, target.rel))
            else:
                done = await self.indexes.write(scope, target.rel, job)
        if done.error is not None:
            raise write_job.api_error(target, done.error) from done.error
        return done, rebuilding

    @timed("read")
    async def read(
        self, scope: str, file: object, start_line: int | None = None, end_line: int | None = None
    ) -> dict[str, Any]:
        """Read a memory file (crew files straight from the shared folder, on any role)."""
        target = files.resolve_read(scope, file)
        if start_line is not None and start_line < 1:
            raise ApiError(400, "bad_range", "'start_line' must be 1 or more")
        if end_line is not None and end_line < (start_line or 1):
            raise ApiError(400, "bad_range", "'end_line' must not be before 'start_line'")
        root = self.settings.agent_dir if scope == "agent" else self.settings.crew_dir
        loop = asyncio.get_running_loop()
        try:
            got = await loop.run_in_executor(
                self._files, read_regular, root, target.rel, indexer.MAX_FILE_BYTES
            )
        except UnsafePath as exc:
            raise write_job.forbidden(target, str(exc)) from None
        except TooLarge:
            mib = indexer.MAX_FILE_BYTES >> 20
            raise ApiError(
                413, "too_large", f"{target.rel} is over {mib} MiB, more than the index reads; "
                "it is not searched and cannot be read through the API",
            ) from None  # fmt: skip
        if got is None:
            where = f"in the {scope} tier"
            detail = (
                f"{target.rel} does not exist {where}" if target.kind == files.NOTE
                else files.archived_daily(target, self.settings.daily_retention_days)
                or f"{target.rel} does not exist yet {where}; write to it to create it"
            )  # fmt: skip
            raise ApiError(404, "not_found", detail)
        data = got[0]
        lines = split_lines(decode_text(data))
        if start_line is not None and start_line > max(len(lines), 1):
            raise ApiError(
                400, "bad_range", f"'start_line' {start_line} is past the end: {target.rel} "
                f"has {len(lines)} line(s)",
            )  # fmt: skip
        first = start_line or 1
        last = min(end_line or len(lines), len(lines))
        content = "\n".join(lines[first - 1 : last])
        body: dict[str, Any] = {
            "file": target.rel,
            "scope": scope,
            "content": content,
            "bytes": len(content.encode("utf-8")),  # of what is answered: the lines read
            "file_bytes": len(data),
            "start_line": first,
            "end_line": last,
            "total_lines": len(lines),
        }
        finding = scan_remembered(content)
        if finding is not None:  # say so; the MCP tools withhold the text
            body["flagged"] = {"category": finding.category, "pattern": finding.pattern}
        return body

    async def write_health(self) -> tuple[bool, str | None]:
        """Can a write succeed right now? Used to gate the MCP write tools."""
        loop = asyncio.get_running_loop()
        settings = self.settings  # one snapshot, so a check never mixes two configurations
        for name, state in self.indexes.tiers.items():
            if name == "crew" and settings.role != "lead":
                continue
            reason = await loop.run_in_executor(
                self._files, write_job.disk_problem, state.tier.root, settings.min_free_bytes
            )
            if reason:
                return False, f"{name}: {reason}"
            if name in self.indexes.queue.last_error:
                return False, f"{name}: index unusable: {self.indexes.queue.last_error[name]}"
        return True, None

    async def health(self) -> Health:
        writable, why_not = await self.write_health()
        reasons = [] if writable else [f"writes unavailable: {why_not}"]
        return Health(reasons, {"write_path": {"ok": writable, "reason": why_not}})
