"""Sessions: a start that answers the memory block, an end that promotes, summarises and
tells the learnings' extraction.

A session is what ``sessions/log.jsonl`` says of it (``log.py``): started, the end
steps done, ended. An end runs the steps the log does not hold yet, in order, each
written once done: reinforcement of the learnings it was shown, promotion of its
working notes (working memory's sleep pass for this session, now), a
``summary.generated`` episode (with ``memory.updated`` in the same append when the
session changed memory), then ``ended`` and ``hooks.session_ended``. Killed between two
steps, the daemon reads the log at restart, the session is still open, and it ends by
idleness with only the steps left. A session id that was never started here (a search
or an event named it) ends as before: its reinforcement only.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.config import Settings
from sidecar.context.builder import ContextBuilder
from sidecar.errors import ApiError
from sidecar.journal.events import epoch, iso, uuid7
from sidecar.journal.index import Filters
from sidecar.journal.journal import Journal
from sidecar.journal.nudge import MEMORY_UPDATED
from sidecar.learnings.learnings import Learnings
from sidecar.learnings.sessions import LOCAL, SESSION_IDLE_S
from sidecar.operators import identity
from sidecar.operators.operators import Operators
from sidecar.sessions import log as session_log
from sidecar.sessions.log import Session
from sidecar.sessions.upkeep import SessionsStep
from sidecar.working.working import NOTE, SUMMARY, Working

log = logging.getLogger(__name__)

SCOPE = "agent"  # a session's events, notes and log live in the agent tier
SOURCE = "sessions"  # the source of the episodes an end writes
SWEEP_EVERY_S = 60.0
EPISODES_READ = 500  # a session's events its summary reads, the latest first
MAX_PROBLEMS = 20
# Sessions ended this recently are told again at start: killed between writing ``ended``
# and a listener keeping the news (extraction's ledger), the daemon would never tell it.
RETELL_S = 24 * 3600.0


class Sessions(Capability):
    def __init__(
        self,
        settings: Settings,
        journal: Journal,
        learnings: Learnings,
        working: Working,
        operators: Operators,
        context: ContextBuilder,
        hooks: Hooks,
    ) -> None:
        self.settings = settings
        self.root = settings.agent_dir
        self.journal = journal
        self.learnings = learnings
        self.working = working
        self.context = context
        self.hooks = hooks  # hears recorded (a session's activity); fires session_ended
        self.sessions: dict[str, Session] = {}
        self.problems: list[str] = []
        self.last_error: str | None = None  # the last idle end that failed, till one succeeds
        self.idle_s = SESSION_IDLE_S
        self.tasks = Tasks()
        self._files = ThreadPoolExecutor(1, thread_name_prefix="sidecar-sessions")
        # One start or end of a session at a time, kept while a request holds or awaits it.
        self._ending: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._log_lock = asyncio.Lock()
        hooks.recorded.append(self._recorded)
        hooks.stamp.append(self._stamp)
        hooks.session_seen.append(self._seen)
        hooks.maintenance.append(
            SessionsStep(
                self.root,
                SCOPE,
                settings.sessions_retention_days,
                lambda: self.sessions,
                self._log_lock,
                self._run,
            )
        )

    # -- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        self.sessions, problems = await self._run(session_log.fold, self.root)
        self._report(problems)

    async def start(self) -> None:
        now = time.time()
        for s in self.sessions.values():
            ended_at = epoch((s.ended or {}).get("at"))
            if ended_at is not None and now - ended_at <= RETELL_S:
                self._tell(s, ended_at)  # a listener that kept it already ignores it
        self.tasks.run(self._timer(), "sessions-idle")

    async def stop(self) -> None:
        """Open sessions stay open: they end by idleness after the restart."""
        await self.tasks.cancel()

    async def close(self) -> None:
        self._files.shutdown()

    async def health(self) -> Health:
        reasons = [f"sessions: {self.last_error}"] if self.last_error else []
        return Health(reasons, {"sessions": {"open": self._open_count(),
                                             "last_error": self.last_error}})  # fmt: skip

    async def status(self, scope: str) -> dict[str, Any]:
        if scope != SCOPE:
            return {}
        return {"sessions": {"open": self._open_count(), "known": len(self.sessions),
                             "problems": self.problems}}  # fmt: skip

    def _open_count(self) -> int:
        return sum(1 for s in self.sessions.values() if s.ended is None)

    def _report(self, problems: list[str]) -> None:
        for problem in problems:
            log.warning("session log line skipped", extra={"problem": problem})
        self.problems = [*self.problems, *problems][-MAX_PROBLEMS:]

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._files, fn, *args)

    async def _append(self, records: list[dict[str, Any]]) -> None:
        async with self._log_lock:
            await self._run(session_log.append, self.root, records)

    async def _timer(self) -> None:
        while True:
            await asyncio.sleep(min(SWEEP_EVERY_S, self.settings.reconcile_interval))
            await self.end_idle()

    def _recorded(self, tier: str, records: list[dict[str, Any]]) -> None:
        """An event named an open session: its idleness counts from now."""
        now = time.time()
        for record in records:
            session = self.sessions.get(record.get("session_id", ""))
            if session is not None and session.ended is None:
                session.last_seen = max(session.last_seen, now)

    def _seen(self, session_id: str) -> None:
        """A recall or search named an open session: it is not idle."""
        session = self.sessions.get(session_id)
        if session is not None and session.ended is None:
            session.last_seen = max(session.last_seen, time.time())

    async def _stamp(self, tier: str, records: list[dict[str, Any]],
                     who: list[tuple[str, str] | None]) -> None:  # fmt: skip
        """Each event gets the key of the operator it names by its ids, else of its
        session's operator (a session started with one): distill and sweeps filter on it.
        An event naming an operator other than its session's is refused (409), as a
        start of that session for them would be."""
        keys: dict[tuple[str, str], str] = {}
        for record, named in zip(records, who, strict=True):
            session = self.sessions.get(record.get("session_id") or "")
            of_session = session.operator if session is not None else None
            if named is None:
                if of_session is not None:
                    record["operator"] = of_session
                continue
            for name, value in zip(("user_id", "workspace_id"), named, strict=True):
                identity.check_id(name, value)
            if named not in keys:
                keys[named] = await self._operator(*named)
            if of_session is not None and of_session != keys[named]:
                raise ApiError(409, "session_operator", f"session {record['session_id']!r} "
                               "works with another operator; nothing was recorded. Record "
                               "this operator's events in a session of their own")  # fmt: skip
            record["operator"] = keys[named]

    # -- start ---------------------------------------------------------------------------

    async def begin(self, a: dict[str, Any]) -> dict[str, Any]:
        """Open a session (again: the same one) and answer the memory block for its task."""
        sid = a["session_id"] or uuid7()
        user, workspace = a["user_id"], a["workspace_id"]
        if workspace is not None and user is None:
            raise ApiError(400, "bad_user_id", "'workspace_id' needs 'user_id': a session "
                           "works with one operator, named by both")  # fmt: skip
        self._refuse_ended(sid)  # before the block, whose learnings would count as used
        # The block is built first: a request it refuses starts nothing.
        block = await self.context.build(a["budget"], a["task"], user, workspace, sid)
        operator = await self._operator(user, workspace) if user and workspace else None
        async with self._ending.setdefault(sid, asyncio.Lock()):
            self._refuse_ended(sid)
            session = self.sessions.get(sid)
            if session is not None and operator is not None and session.operator != operator:
                raise ApiError(409, "session_operator", f"session {sid!r} was started for "
                               "another operator; start a new session for this one")  # fmt: skip
            started = session is None
            if session is not None:
                session.last_seen = max(session.last_seen, time.time())
            if session is None:
                now = time.time()
                record = {"kind": "started", "session_id": sid, "at": iso(now),
                          "agent_id": a["agent_id"] or self.settings.agent_id or None,
                          "operator": operator, "task": a["task"]}  # fmt: skip
                await self._append([{k: v for k, v in record.items() if v is not None}])
                session = Session(sid, now, now, record["agent_id"], operator, a["task"])
                self.sessions[sid] = session
                log.info("session started", extra={"session": sid})
        return {"session_id": sid, "started": started, "started_at": iso(session.started_at),
                "context": block.text}  # fmt: skip

    def _refuse_ended(self, sid: str) -> None:
        session = self.sessions.get(sid)
        if session is not None and session.ended is not None:
            raise ApiError(409, "session_ended", f"session {sid!r} has ended; start a new "
                           "one (leave out session_id and one is assigned)")  # fmt: skip

    async def _operator(self, user: str, workspace: str) -> str:
        """The operator's non-reversible key: the name of their model file."""
        crew = self.settings.crew_dir
        create = self.settings.role == "lead"
        try:
            rel = (await self._run(identity.model_paths, crew, user, workspace, create))[0]
        except OSError as exc:
            raise ApiError(503, "operator_secret_unavailable", f"the crew tier's operator "
                           f"secret could not be read or created ({exc}); nothing was written. "
                           f"Make {identity.SECRET_FILE} a regular file the daemon can read"
                           ) from None  # fmt: skip
        return rel.removeprefix("users/").removesuffix(".md")

    # -- end -----------------------------------------------------------------------------

    async def end(self, session_id: str) -> dict[str, Any]:
        """Run the steps of the session's end the log does not hold yet, each once."""
        async with self._ending.setdefault(session_id, asyncio.Lock()):
            session = self.sessions.get(session_id)
            if session is None:  # never started here: reinforcement only, as always
                answer = await self.learnings.end_session(session_id)
                return {**answer, "started": False, "ended": False}
            if session.ended is not None:
                return {"session_id": session_id, "started": True, "ended": True,
                        "already_ended": True, **_ended_fields(session.ended)}  # fmt: skip
            return await self._end(session)

    async def _end(self, s: Session) -> dict[str, Any]:
        sid = s.session_id
        if "reinforced" not in s.steps:
            answer = await self.learnings.end_session(sid)
            await self._step(s, "reinforced", {"reinforced": answer["reinforced"]})
        if "promoted" not in s.steps:
            promoted = (await self.working.sleep(SCOPE, session=sid))["promoted"]
            await self._step(s, "promoted", {"promoted": [p["id"] for p in promoted]})
        if "summarised" not in s.steps:
            await self._step(s, "summarised", await self._summarise(s))
        done = _ended_fields(s.steps["summarised"])
        now = time.time()
        ended = {"kind": "ended", "session_id": sid, "at": iso(now), "events": done["events"],
                 "summary_id": done["summary_id"],
                 "memory_updated": done["memory_updated"]}  # fmt: skip
        await self._append([ended])
        s.ended = ended
        self._tell(s, now)
        log.info("session ended", extra={"session": sid, "events": ended["events"]})
        reinforced = s.steps["reinforced"].get("reinforced")
        promoted = s.steps["promoted"].get("promoted")
        return {"session_id": sid, "started": True, "ended": True, "already_ended": False,
                "reinforced": reinforced if isinstance(reinforced, dict) else {},
                "promoted": promoted if isinstance(promoted, list) else [],
                **_ended_fields(ended)}  # fmt: skip

    async def _step(self, s: Session, step: str, fields: dict[str, Any]) -> None:
        record = {"kind": "step", "session_id": s.session_id, "step": step,
                  "at": iso(time.time()), **fields}  # fmt: skip
        await self._append([record])
        s.steps[step] = record
        s.last_seen = time.time()

    async def _summarise(self, s: Session) -> dict[str, Any]:
        """The session's ``summary.generated`` episode, and ``memory.updated`` when it
        changed memory, in one append; found again rather than written twice when the
        daemon died after the append and before the step was written."""
        sid = s.session_id
        mine = await self.journal.listing(
            SCOPE, Filters(session_id=sid, include_expired=True, include_superseded=True),
            None, EPISODES_READ,
        )  # fmt: skip
        events = [e for e in mine["events"] if e.get("source") != SOURCE and e["type"] != SUMMARY]
        written = {e["type"]: e["id"] for e in mine["events"] if e.get("source") == SOURCE}
        changed = await self._changed(s)
        who = {"operator": s.operator} if s.operator else {}  # the keyed name, never the ids
        wanted: list[dict[str, Any]] = []
        episodes = [e for e in events if e["type"] != NOTE] or events  # notes: if all it has
        if episodes and "summary.generated" not in written:
            texts = [f"{e['type']}: {e['summary']}" for e in episodes]
            text, how = await self.working.summarise(texts)
            wanted.append({"type": "summary.generated", "summary": text, "session_id": sid,
                           "source": SOURCE, "payload": {"session_summary": True,
                                                         "events": len(events),
                                                         "summarised_by": how, **who}})  # fmt: skip
        if changed and MEMORY_UPDATED not in written:
            wanted.append({"type": MEMORY_UPDATED, "session_id": sid, "source": SOURCE,
                           "summary": f"Session {sid} updated memory: {', '.join(changed)}.",
                           "payload": {"changed": changed, **who}})  # fmt: skip
        if wanted:
            ids = (await self.journal.record(SCOPE, {"events": wanted}))["ids"]
            written |= {w["type"]: i for w, i in zip(wanted, ids, strict=True)}
        return {"summary_id": written.get("summary.generated"), "events": len(events),
                "memory_updated": written.get(MEMORY_UPDATED)}  # fmt: skip

    async def _changed(self, s: Session) -> list[str]:
        """What memory the session changed: its promoted working notes, and notes written
        while it was open (a served tier's notes index changed since it started and since
        the last ``memory.updated``, which another session's end may have recorded)."""
        changed = []
        since = max(s.started_at, await self.journal.last_recorded(SCOPE, MEMORY_UPDATED))
        if s.steps.get("promoted", {}).get("promoted"):
            changed.append("working notes promoted")
        for name, state in self.journal.indexes.tiers.items():
            try:
                stats = await self.journal.indexes.read(state.store.stats)
            except Exception as exc:  # the index is being rebuilt: the notes are unknown
                log.warning("notes index unreadable", extra={"tier": name, "error": str(exc)})
                continue
            if (stats.indexed_at or 0.0) > since:
                changed.append(f"{name} notes written")
        return changed

    def _tell(self, s: Session, now: float) -> None:
        ended = s.ended or {}
        session = {"session_id": s.session_id, "operator": s.operator, "agent_id": s.agent_id,
                   "task": s.task, "started_at": iso(s.started_at), "ended_at": iso(now),
                   "events": ended.get("events", 0), "summary_id": ended.get("summary_id"),
                   "memory_updated": ended.get("memory_updated")}  # fmt: skip
        for listener in self.hooks.session_ended:
            try:
                listener(SCOPE, session)
            except Exception:
                log.exception("a listener to ended sessions failed")

    async def _active(self, s: Session, now: float) -> bool:
        """Whether the session was searching learnings within ``idle_s``, or the journal
        holds an event of it that recent (one recorded before a restart, which the log does
        not see): its clock moves up to it."""
        searched = self.learnings.sessions.open.get((LOCAL, s.session_id))
        if searched is not None:  # on the monotonic clock, which a search last set
            s.last_seen = max(s.last_seen, time.time() - (time.monotonic() - searched.last_seen))
        recent = Filters(session_id=s.session_id, since=now - self.idle_s, include_expired=True,
                         include_superseded=True)  # fmt: skip
        try:
            events = (await self.journal.listing(SCOPE, recent, None, EPISODES_READ))["events"]
        except ApiError:  # the journal is not ready: the session waits for the next sweep
            return True
        seen = [t for e in events if (t := epoch(e.get("recorded_at"))) is not None]
        s.last_seen = max([s.last_seen, *seen])
        return now - s.last_seen < self.idle_s

    async def end_idle(self, now: float | None = None) -> list[str]:
        """End every open session idle for ``idle_s``; one that fails is tried next sweep."""
        now = time.time() if now is None else now
        idle = [s.session_id for s in list(self.sessions.values())
                if s.ended is None and now - s.last_seen >= self.idle_s]  # fmt: skip
        idle = [sid for sid in idle if not await self._active(self.sessions[sid], now)]
        failed = None
        for sid in idle:
            try:
                await self.end(sid)
            except Exception as exc:
                log.error("session end failed", extra={"session": sid, "error": str(exc)})
                failed = f"ending session {sid!r} failed ({exc}); it is tried again"
        self.last_error = failed
        return idle


def _ended_fields(ended: dict[str, Any]) -> dict[str, Any]:
    """What the log says of an end; a value a hand edit left unfit reads as its default."""
    events = ended.get("events")
    return {
        "ended_at": ended.get("at"),
        "summary_id": _id(ended.get("summary_id")),
        "events": events if isinstance(events, int) and not isinstance(events, bool) else 0,
        "memory_updated": _id(ended.get("memory_updated")),
    }


def _id(value: object) -> str | None:
    return value if isinstance(value, str) else None
