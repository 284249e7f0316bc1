"""What a capability is to the service, and every hook between capabilities.

The service (``sidecar.service``) opens and starts its capabilities in one declared
order and stops and closes them in reverse; each answers for its own part of
``/healthz`` and ``/memory/status``. A capability calls another directly for what it
asks of it; what it *tells* others goes through one of the ``Hooks``, so who hears of
what is written here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)

# (scope, file, its new bytes, its mtime_ns once written), on the index writer thread.
OwnIndexer = Callable[[str, str, bytes, Callable[[], int]], None]
# (tier, event records, (user_id, workspace_id) each names or None), before they are written.
Stamp = Callable[[str, list[dict[str, Any]], list[tuple[str, str] | None]], Awaitable[None]]


@dataclass
class Health:
    """A capability's part of ``/healthz``: each reason it is degraded (none: it is
    fine), and the fields of the answer it speaks for."""

    reasons: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)


class Capability(Protocol):
    """One phase runs on every capability before the next phase starts. A class that
    names this protocol as its base inherits a default for each step that does nothing,
    so it writes only the steps it has."""

    async def open(self) -> None:
        """Read what is on disk; capabilities earlier in the order are open."""

    async def start(self) -> None:
        """Start background work; every capability is open."""

    async def stop(self) -> None:
        """Take no new work, finish what was accepted; later capabilities are stopped."""

    async def close(self) -> None:
        """Release threads, files and connections; every capability is stopped."""

    async def health(self) -> Health:
        """Why it is degraded, if it is, and its fields of ``/healthz``."""
        return Health()

    async def status(self, scope: str) -> dict[str, Any]:
        """Its fields of ``/memory/status`` for the local tier ``scope``."""
        return {}


class MaintenanceStep(Protocol):
    """One kind of history a capability keeps (daily logs, journal days), tended by the
    lifecycle engine (``sidecar.lifecycle``). The capability that owns the files owns
    the step; the engine runs the steps of a tier one at a time, never concurrently."""

    name: str  # "daily", "journal": its key in status, metrics and the maintain answer

    async def maintain(self, tier: str, now: float, dry_run: bool) -> dict[str, Any]:
        """One pass over ``tier``'s history as of ``now`` (epoch seconds): archive, trim
        or consolidate what is due, crash-safe (the new file durable before what it
        replaces goes). ``dry_run``: change nothing, answer what would be done. The
        answer always has ``active_bytes`` and ``archived_bytes`` after the pass."""
        ...

    async def usage(self, tier: str) -> dict[str, int]:
        """``active_bytes`` and ``archived_bytes`` of this kind in ``tier`` now: a glance
        (stat only) that status asks for, so it never waits behind a running pass."""
        ...


class Tasks:
    """A capability's background work: tasks that run until ``cancel`` (timers, loops),
    and one-off jobs, which ``finish`` waits for."""

    def __init__(self) -> None:
        self._running: list[asyncio.Task[Any]] = []
        self._oneoffs: set[asyncio.Future[Any]] = set()

    def run(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        self._running.append(asyncio.create_task(work, name=name))

    def oneoff(self, work: Awaitable[Any], name: str) -> None:
        task = asyncio.ensure_future(work)
        task.set_name(name)
        self._oneoffs.add(task)
        task.add_done_callback(self._oneoffs.discard)

    async def cancel(self) -> None:
        for task in self._running:
            task.cancel()
        for task in self._running:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def finish(self) -> None:
        """Wait for every one-off job; each reports its own failure."""
        if self._oneoffs:
            await asyncio.gather(*self._oneoffs, return_exceptions=True)


@dataclass
class Hooks:
    """Each hook: who fires it, who hears it. Listeners run on the event loop unless said
    otherwise and must not block it."""

    index_changed: list[Callable[[], None]] = field(default_factory=list)
    """A job changed a tier's index. Fired by ``index.indexes``; heard by the vector
    sync (``retrieval.embeddings``), which embeds what is new."""

    file_changed: list[Callable[[str, str], None]] = field(default_factory=list)
    """(tier, file): a file that is not a note changed on disk. Fired by the watcher
    (``index.indexes``); heard by the journal and learnings, which read it again."""

    watched: list[Callable[[str, str], None]] = field(default_factory=list)
    """(tier, file): any watcher event below a tier root. Fired by ``index.indexes``;
    heard by the MCP resources' browser (``notes.browse``), which lists the tier again."""

    recorded: list[Callable[[str, list[dict[str, Any]]], None]] = field(default_factory=list)
    """(tier, records): events are durable in the tier's journal. Fired by the journal
    (``journal.record``) and working memory's sleep pass; heard by consolidation
    (``facts``), which queues them as episodes."""

    stamp: list[Stamp] = field(default_factory=list)
    """(tier, records, the operator each names by its ids or None): events are about to be
    written. Fired by the journal (``journal.record``, ``journal.stamp``); heard by
    ``sessions``, which sets each record's ``operator`` to the key of the operator it
    names or of its session's operator. Raising refuses the whole batch."""

    session_seen: list[Callable[[str], None]] = field(default_factory=list)
    """(session id): a recall or a search named the session. Fired by the journal and
    search; heard by ``sessions``, whose idle clock of that session starts again."""

    own_indexers: dict[str, OwnIndexer] = field(default_factory=dict)
    """Top-level folder -> how a file written there through ``notes.commit`` is indexed,
    instead of into the notes index (on the index writer thread). Set by learnings (its
    own index) and operators (operator models are never indexed)."""

    maintenance: list[MaintenanceStep] = field(default_factory=list)
    """Steps of the lifecycle engine, in the order they run. Added at construction by
    the capability that owns the files (the daily logs by ``lifecycle``, the journal's
    days by ``journal``); run by the engine (``lifecycle``)."""

    make_room: list[Callable[[str], Awaitable[bool]]] = field(default_factory=list)
    """(tier) -> whether room was made: a write was refused because the active history
    of the tier is at its cap. Fired by notes and the journal before they answer 422;
    heard by the lifecycle engine, which runs the tier's maintenance now. A write that
    gets True tries once more."""

    session_ended: list[Callable[[str, dict[str, Any]], None]] = field(default_factory=list)
    """(tier, session): a session ended and its own steps (reinforcement, promotion of
    its working notes, its summary episode) are durable. Fired by ``sessions`` when it
    ends, and again at the next start if it ended within a day (the daemon may have died
    before a listener kept it), so a listener ignores a session it already holds; heard
    by learnings' extraction, which queues an LLM job for it."""

    def tell_seen(self, session_id: str | None) -> None:
        if session_id is None or session_id == "default":
            return
        for listener in self.session_seen:
            try:
                listener(session_id)
            except Exception:
                log.exception("a listener to seen sessions failed")

    def tell_recorded(self, tier: str, records: list[dict[str, Any]]) -> None:
        """The events are recorded whatever a listener makes of them."""
        for listener in self.recorded:
            try:
                listener(tier, records)
            except Exception:
                log.exception("a listener to recorded events failed")
