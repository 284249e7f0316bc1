"""Sessions and reinforcement: the entries a session was shown get +1 when it ends.

Sessions are namespaced by caller: the lead's own API (``LOCAL``) and the crew port
(``CREW``, every holder of the crew token) never share one, so a crew request can
neither end a session of the lead nor reach the lead's agent tier, and a crew session
only ever holds crew entries. Each (caller, session) reinforces an entry at most once:
what it reinforced is remembered after it ends (the last ``ENDED_KEPT`` sessions), so
showing the entry again under that session id and ending it again adds nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from sidecar.crew.client import LeadClient, LeadError, LeadUnavailable
from sidecar.disk.tiers import decode_text
from sidecar.learnings import entries
from sidecar.learnings.index import LearningsIndex
from sidecar.notes.files import LEARNING, MemoryFile, today_utc
from sidecar.notes.notes import Notes

log = logging.getLogger(__name__)

LOCAL, CREW = "local", "crew"  # who asks: the daemon's own API, or the crew port
SESSION_IDLE_S = 30 * 60.0  # a session with no request for this long has ended
ENDED_KEPT = 10_000  # ended sessions whose reinforced entries are remembered
MAX_OPEN = 10_000  # open sessions; past it the idlest ends at once (as it would when idle)

Key = tuple[str, str]  # (caller, session id)


@dataclass(slots=True)
class Session:
    last_seen: float
    ids: dict[str, set[str]] = field(default_factory=dict)  # tier -> entry ids returned


def _tiers_of(caller: str) -> set[str] | None:
    """The tiers a caller may reinforce (None: any)."""
    return {"crew"} if caller == CREW else None


class Sessions:
    """Open sessions by caller, and the write-back of their reinforcements."""

    def __init__(
        self, tiers: dict[str, LearningsIndex], notes: Notes, lead: LeadClient | None
    ) -> None:
        self.tiers = tiers  # the capability's own dict: filled in when it opens
        self.notes = notes
        self.lead = lead
        self.open: OrderedDict[Key, Session] = OrderedDict()  # the idlest first
        self.idle_s = SESSION_IDLE_S
        self.max_open = MAX_OPEN
        self._ended: OrderedDict[Key, dict[str, set[str]]] = OrderedDict()

    def touch(self, caller: str, session_id: str, tier: str, ids: list[str]) -> None:
        allowed = _tiers_of(caller)
        if allowed is not None and tier not in allowed:
            return
        key = (caller, session_id)
        session = self.open.setdefault(key, Session(time.monotonic()))
        session.last_seen = time.monotonic()
        self.open.move_to_end(key)
        fresh = set(ids) - self._ended.get(key, {}).get(tier, set())
        if fresh:
            session.ids.setdefault(tier, set()).update(fresh)

    async def end(self, session_id: str, caller: str = LOCAL) -> dict[str, Any]:
        """Reinforce, once each, the entries this session was shown: +1 and today's date,
        written into their files' front matter. Entries whose file could not be written
        stay with the session, so ending it again retries them."""
        key = (caller, session_id)
        session = self.open.pop(key, None)
        reinforced: dict[str, int] = {}
        failure: Exception | None = None
        allowed = _tiers_of(caller)
        if session is not None:
            for tier, ids in session.ids.items():
                if tier not in self.tiers or (allowed is not None and tier not in allowed):
                    continue
                reinforced[tier], left, error = await self.reinforce(tier, ids)
                self._remember(key, tier, ids - left)
                if left:
                    self.touch(caller, session_id, tier, sorted(left))
                    failure = failure or error
        if failure is not None:
            raise failure
        if caller == LOCAL and self.lead is not None:  # the crew's are the lead's to reinforce
            with contextlib.suppress(LeadError, LeadUnavailable):
                await self.lead.request("POST", "/memory/session/end", {"session_id": session_id})
        return {"session_id": session_id, "reinforced": reinforced}

    def reinforced(self, caller: str, session_id: str, tier: str) -> set[str]:
        """The entries of ``tier`` an ended session has reinforced (of the last
        ``ENDED_KEPT``): what else reinforces for a session does not do it twice."""
        return self._ended.get((caller, session_id), {}).get(tier, set())

    def _remember(self, key: Key, tier: str, ids: set[str]) -> None:
        done = self._ended.setdefault(key, {})
        done.setdefault(tier, set()).update(ids)
        self._ended.move_to_end(key)
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)

    async def end_idle(self, now: float | None = None) -> list[str]:
        now = time.monotonic() if now is None else now
        idle = [k for k, v in self.open.items() if now - v.last_seen >= self.idle_s]
        for caller, session_id in idle:
            try:
                await self.end(session_id, caller)
            except Exception as exc:
                log.error("reinforcement failed", extra={"session": session_id, "error": str(exc)})
        return [session_id for _, session_id in idle]

    async def shown(self, caller: str, session_id: str, ids: dict[str, list[str]]) -> None:
        """A search showed the session these entries (by tier). Past ``max_open`` sessions
        the idlest end at once: each new id opens one, and a caller with many ids would
        otherwise grow them for the idle half hour."""
        for tier, shown in ids.items():
            self.touch(caller, session_id, tier, shown)
        while len(self.open) > self.max_open:
            idlest = next(iter(self.open))
            try:
                await self.end(idlest[1], idlest[0])
            except Exception as exc:  # it cannot stay open past the bound: its entries go
                log.error("reinforcement failed", extra={"session": idlest[1], "error": str(exc)})
                self.open.pop(idlest, None)

    async def end_all(self) -> None:
        for caller, session_id in list(self.open):
            with contextlib.suppress(Exception):
                await self.end(session_id, caller)

    async def reinforce(self, tier: str, ids: set[str]) -> tuple[int, set[str], Exception | None]:
        """(entries reinforced, ids whose file failed to write, the first such error)."""
        index = self.tiers[tier]
        by_file: dict[str, set[str]] = {}
        for entry_id in ids:
            where = index.snapshot.by_id.get(entry_id)
            if where is not None:
                by_file.setdefault(where[0], set()).add(entry_id)
        today = today_utc().isoformat()
        counts: dict[str, int] = {}

        def build(cur: bytes | None, rel: str, wanted: set[str]) -> bytes:
            text = entries.decode(cur)
            found, _ = entries.parse(rel, decode_text(cur or b""))  # ids as the index has them
            done = 0
            for e in reversed(found):  # bottom up: line numbers above stay put
                if e.id not in wanted or not e.fields_ok or e.status != "active":
                    continue
                changes: dict[str, Any] = {
                    "reinforcement_count": min(e.reinforcement_count + 1, entries.MAX_COUNT),
                    "last_reinforced": today,
                }  # fmt: skip
                if e.id == entries.derived_id(rel, e.text):
                    changes = {"id": e.id, **changes}  # written down, so an edit keeps it
                try:
                    text = entries.edit_fields(text, e.line, changes)
                except Exception as exc:  # say which, and reinforce the others
                    log.warning("learning not reinforced: its front matter cannot be edited",
                                extra={"file": rel, "line": e.line, "error": str(exc)})  # fmt: skip
                    continue
                wanted = wanted - {e.id}
                done += 1
            counts[rel] = done
            return entries.encode(text)

        files = list(by_file.items())
        outcomes = await asyncio.gather(
            *(
                self.notes.commit(
                    MemoryFile(tier, rel, LEARNING), lambda c, r=rel, w=wanted: build(c, r, w)
                )
                for rel, wanted in files
            ),
            return_exceptions=True,
        )
        left: set[str] = set()
        error: Exception | None = None
        done = 0
        for (rel, wanted), outcome in zip(files, outcomes, strict=True):
            if isinstance(outcome, Exception):
                left |= wanted
                error = error or outcome
            else:
                done += counts.get(rel, 0)
        return done, left, error
