"""Learnings extracted from each ended session by one LLM call (issue 32).

``sessions`` fires ``session_ended`` once per session. Each is written as ``queued`` to
the tier's ledger (``extraction/ledger.jsonl``) and taken by one worker, off the
request's path: the session's episodes (its journal events and its summary), the
learnings most related to them, one schema-constrained call (``extraction_prompt``),
and the answer applied through the learnings' write path (front matter with
``source: session:<id>``, the injection scan, the file cap, compaction). The ledger's
``extracted`` (or ``skipped``, ``failed``) line marks the session done, so each is
extracted once; a job cut short re-runs at the next start, and a learning it already
wrote (same source, same words) is not written twice. Crew learnings of a member go to
the lead (``POST /memory/learnings/extracted`` on the crew address). Without an LLM
extraction is off, and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.crew.client import LeadClient, LeadError, LeadUnavailable
from sidecar.disk.tiers import decode_text, read_confined
from sidecar.errors import ApiError
from sidecar.learnings import entries
from sidecar.learnings import extraction_prompt as ep
from sidecar.learnings.compaction import NEAR_DUPLICATE
from sidecar.learnings.learnings import Learnings, SearchQuery
from sidecar.learnings.ledger import Ledger, LedgerStep
from sidecar.learnings.sessions import CREW, LOCAL
from sidecar.llm.client import LLMClient, LLMError, ask
from sidecar.notes.files import LEARNING, MemoryFile

log = logging.getLogger(__name__)

# Sessions with fewer events teach too little for the call's fixed cost: measured with
# ``python -m bench --only extraction`` (README, "Learning extraction").
MIN_EVENTS = 10
MAX_READ = 500  # events of one session read from the journal
MAX_WAITING = 10_000  # sessions waiting in memory; past it they wait in the ledger
RETRY_AFTER_S = 60.0
MAX_ATTEMPTS = 3  # jobs for one session before it is marked failed
MAX_QUERY_CHARS = 2000  # of the episodes' words that look up related learnings

# (tier, session id, at most this many) -> the session's events, oldest first
SessionEvents = Callable[[str, str, int], Awaitable[list[dict[str, Any]]]]
Key = tuple[str, str]  # (tier, session id)

# What a member's session may not do to the crew tier. A crew learning is the crew's, not
# one session's: in the reference design retirement is the scope owner's act (stage-based,
# and compaction), while sessions add and reinforce. And the crew token is shared, so it
# cannot prove which member wrote an entry: "only its own" would rest on a claim any token
# holder can make. So members retire none; the lead's own sessions (and edits) still can.
MEMBER_MAY_NOT = ("retire",)

REMOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string", "minLength": 1, "maxLength": 128},
        "actions": {
            "type": "array",
            "maxItems": ep.MAX_ITEMS,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"enum": list(ep.ACTIONS)},
                    "tier": {"const": "crew"},
                    "target": {"type": ["string", "null"], "maxLength": 128},
                    "text": {
                        "type": "string",
                        "pattern": r"\S",  # words, not only spaces
                        "maxLength": ep.MAX_LEARNING_CHARS,
                    },
                    "type": {"enum": list(entries.TYPES)},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1},
                    "file": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"},
                    "domain": {"enum": list(entries.DOMAINS)},
                },
                "required": ["kind", "tier", "target"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["session_id", "actions"],
    "additionalProperties": False,
}


class Extraction(Capability):
    def __init__(
        self,
        learnings: Learnings,
        session_events: SessionEvents,
        llm: LLMClient | None,
        lead: LeadClient | None,
        hooks: Hooks,
    ) -> None:
        self.learnings = learnings
        self.session_events = session_events
        self.llm = llm
        self.lead = lead
        self.hooks = hooks  # hears session_ended
        self.ledgers: dict[str, Ledger] = {}
        self.waiting: OrderedDict[Key, dict[str, Any]] = OrderedDict()
        self.attempts: dict[Key, int] = {}
        self.last_error: str | None = None
        self.deferred = 0  # sessions that came past MAX_WAITING: they wait in the ledger
        self._overflow = False  # some do now: taken from the ledger when the queue drains
        self.tasks = Tasks()
        self._wake = asyncio.Event()
        self._ledger_lock = asyncio.Lock()  # an append waits while the ledger is archived
        days = learnings.settings.sessions_retention_days
        hooks.maintenance.append(LedgerStep(self.ledgers, self._ledger_lock, days, self._run))

    # -- lifecycle -------------------------------------------------------------------

    async def open(self) -> None:
        for name, state in self.learnings.indexes.tiers.items():
            ledger = Ledger(state.tier.root)
            await asyncio.get_running_loop().run_in_executor(None, ledger.load)
            self.ledgers[name] = ledger
        self.hooks.session_ended.append(self._ended)

    async def start(self) -> None:
        if self.llm is None:
            log.warning("learning extraction is off: no LLM configured (--llm-url); ended "
                        "sessions teach nothing by themselves")  # fmt: skip
            return
        self._refill()  # cut short, or past the bound, last time
        self.tasks.run(self._worker(), "extraction-worker")
        self._wake.set()

    async def stop(self) -> None:
        """A job is abandoned where it is; the ledger has it as queued, so the next start
        runs it again."""
        await self.tasks.cancel()
        await self.tasks.finish()

    # -- queueing --------------------------------------------------------------------

    def _ended(self, tier: str, session: dict[str, Any]) -> None:
        sid = session.get("session_id")
        ledger = self.ledgers.get(tier)
        if self.llm is None or ledger is None or not isinstance(sid, str) or not sid:
            return
        if sid in ledger.done or (tier, sid) in self.waiting:
            return
        self.tasks.oneoff(self._queue(tier, sid, session), "extraction-queue")

    async def _queue(self, tier: str, sid: str, session: dict[str, Any]) -> None:
        kept = {k: session.get(k) for k in ("agent_id", "operator", "started_at", "ended_at",
                                            "events", "summary_id", "memory_updated")}  # fmt: skip
        record = {"kind": "queued", "session_id": sid, "at": time.time(), "session": kept}
        try:
            await self._append(tier, record)
        except OSError as exc:
            self.last_error = f"ledger not written: {exc}"
            log.error("session not queued for extraction", extra={"session": sid,
                                                                   "error": str(exc)})  # fmt: skip
            return
        self._wait((tier, sid), kept)
        self._wake.set()

    def _wait(self, key: Key, session: dict[str, Any]) -> None:
        if len(self.waiting) >= MAX_WAITING:
            self.deferred += 1
            self._overflow = True
            log.warning("extraction deferred: the queue is full", extra={"session": key[1]})
            return
        self.waiting[key] = session

    async def _worker(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RETRY_AFTER_S)
            self._wake.clear()
            while self.waiting:
                key, session = next(iter(self.waiting.items()))
                if not await self._job_or_report(key, session):
                    self.waiting.move_to_end(key)  # the others first; it is tried again later
                    break
                if not self.waiting and self._overflow:
                    self._refill()

    def _refill(self) -> None:
        """Take what waits in the ledgers (the fold keeps it) into the queue, to its bound."""
        self._overflow = False
        for name, ledger in self.ledgers.items():
            for sid, session in ledger.waiting.items():
                if (name, sid) not in self.waiting:
                    self._wait((name, sid), session)

    async def _job_or_report(self, key: Key, session: dict[str, Any]) -> bool:
        tier, sid = key
        try:
            await self.extract(tier, sid, session)
        except (LLMError, ApiError, LeadError, LeadUnavailable, OSError) as exc:
            why = str(exc) or type(exc).__name__
            self.last_error = f"session {sid}: {why}"[:500]
            tries = self.attempts[key] = self.attempts.get(key, 0) + 1
            log.error("learning extraction failed; nothing of it was applied",
                      extra={"session": sid, "attempt": tries, "error": why})  # fmt: skip
            if tries >= MAX_ATTEMPTS:
                record = {"kind": "failed", "session_id": sid, "at": time.time(), "error": why}
                with contextlib.suppress(OSError):
                    await self._append(tier, record)
                self._forget(key)
            return False
        self.last_error = None
        self._forget(key)
        return True

    def _forget(self, key: Key) -> None:
        self.waiting.pop(key, None)
        self.attempts.pop(key, None)

    # -- one job ---------------------------------------------------------------------

    async def extract(self, tier: str, sid: str, session: dict[str, Any]) -> dict[str, Any]:
        """Read the session, ask once, apply the answer, mark the session done."""
        assert self.llm is not None
        events = await self.session_events(tier, sid, MAX_READ)
        summary_id = session.get("summary_id")
        own = {summary_id, session.get("memory_updated")}  # written by the end itself
        events = [e for e in events if e["id"] != session.get("memory_updated")]
        worked = [e for e in events if e["id"] not in own]
        if len(worked) < MIN_EVENTS:
            record = {"kind": "skipped", "session_id": sid, "at": time.time(),
                      "events": len(worked), "reason": f"under {MIN_EVENTS} events"}  # fmt: skip
            await self._append(tier, record)
            return record
        known = await self._related(worked)
        started = time.perf_counter()
        answer = await ask(self.llm, ep.SYSTEM, ep.prompt(events, summary_id, known), ep.SCHEMA,
                           "extraction", ep.whole_answer)  # fmt: skip
        p = ep.plan(answer.data, known)
        notes = p.notes + await self.apply(p.actions, sid)
        record = {
            "kind": "extracted", "session_id": sid, "at": time.time(), "events": len(worked),
            "model": self.llm.model_id, "prompt_tokens": answer.prompt_tokens,
            "answer_tokens": answer.answer_tokens, "attempts": answer.attempts,
            "counts": p.counts, "llm_s": round(time.perf_counter() - started, 3),
        }  # fmt: skip
        if notes:
            record["notes"] = notes
        await self._append(tier, record)
        log.info("learnings extracted", extra={"session": sid, **p.counts})
        return record

    async def _related(self, episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The existing learnings nearest the session's words, in both tiers it can see."""
        words = " ".join(str(e["summary"]) for e in episodes)[:MAX_QUERY_CHARS]
        q = SearchQuery(words, self.learnings.default_scope(), ep.MAX_RELATED)
        try:
            found = await self.learnings.search(q)
        except ApiError as exc:
            if exc.error == "empty_query":
                return []
            raise
        return [h for h in found["hits"] if "flagged" not in h]

    # -- applying --------------------------------------------------------------------

    async def apply(self, actions: list[ep.Action], sid: str) -> list[str]:
        """Each action through the learnings' write path; notes on what was not done. The
        crew's, on a member, go to the lead first: a lead out of reach fails the job before
        anything is written here."""
        local = set(self.learnings.tiers)
        notes: list[str] = []
        remote = [a for a in actions if a.tier == "crew" and "crew" not in local]
        if self.lead is not None:  # what the lead refuses a member (``MEMBER_MAY_NOT``)
            notes += [f"{a.target}: a crew learning is retired only on the lead; not sent"
                      for a in remote if a.kind in MEMBER_MAY_NOT]  # fmt: skip
            remote = [a for a in remote if a.kind not in MEMBER_MAY_NOT]
        if remote and self.lead is not None:
            body = {"session_id": sid, "actions": [a.to_json() for a in remote]}
            answer = await self.lead.request("POST", "/memory/learnings/extracted", body)
            notes += [f"lead: {n}" for n in answer.get("notes", [])]
        elif remote:
            for a in remote:
                if a.kind == "new":
                    notes.append("a crew learning kept in the agent tier: no crew tier here")
                    a.tier = "agent"
        for a in actions:
            if a.tier in local:
                note = await self._apply_one(a, sid, LOCAL)
                if note:
                    notes.append(note)
        return notes

    async def apply_from_member(self, body: dict[str, Any]) -> dict[str, Any]:
        """A member's crew learnings (on the lead's crew address): new ones and
        reinforcements. Retiring one is refused whole (see ``MEMBER_MAY_NOT``)."""
        from jsonschema import Draft202012Validator  # only a lead ever checks these

        errors = [e.message for e in Draft202012Validator(REMOTE_SCHEMA).iter_errors(body)]
        if errors:
            raise ApiError(400, "bad_actions", f"the extracted learnings do not fit: {errors[0]}")
        actions = enumerate(body["actions"])
        ruled = [n for n, a in actions if entries.RULE_LINE.search(a.get("text", ""))]
        if ruled:  # a block of its own: fields no action may send (a count, a status)
            raise ApiError(
                400,
                "bad_actions",
                f"actions/{ruled[0]}/text: a line of just '---' "
                "cannot be in a learning (it would open front matter of its own)",
            )
        retired = [str(a["target"]) for a in body["actions"] if a["kind"] in MEMBER_MAY_NOT]
        if retired:
            raise ApiError(403, "retire_forbidden", f"a member may not retire crew learnings "
                           f"({', '.join(retired)}): the crew's learnings are retired on the "
                           "lead only; send new and reinforce actions")  # fmt: skip
        if "crew" not in self.learnings.tiers:
            raise ApiError(503, "tier_unavailable", "this sidecar does not serve the crew tier")
        actions = [ep.Action(a["kind"], "crew", a["target"],
                             {k: v for k, v in a.items() if k not in ("kind", "tier", "target")})
                   for a in body["actions"]]  # fmt: skip
        for a in actions:
            if a.kind == "new" and not {"text", "type", "importance", "file"} <= set(a.fields):
                raise ApiError(400, "bad_actions", "a new learning needs text, type, "
                               "importance and file")  # fmt: skip
        sid = body["session_id"]
        notes = [n for a in actions if (n := await self._apply_one(a, sid, CREW))]
        return {"applied": len(actions), "notes": notes}

    async def _apply_one(self, a: ep.Action, sid: str, caller: str) -> str | None:
        """``caller``: whose session it is (this sidecar's, or a member's through the crew
        address), as reinforcement namespaces them."""
        source = f"session:{sid}"
        shown = self.learnings.sessions.reinforced(caller, sid, a.tier)
        try:
            if a.kind == "new":
                if await self._already(a.tier, source, a.fields["text"]):
                    return f"{a.fields['file']}: already written from this session"
                await self.learnings.learn({**a.fields, "scope": a.tier, "source": source})
            elif a.kind == "reinforce" and self._source_of(a.tier, str(a.target)) == source:
                return f"{a.target}: written by this session, which does not reinforce it"
            elif a.kind == "reinforce" and a.target in shown:
                return f"{a.target}: already reinforced by this session (it was shown it)"
            elif a.kind == "reinforce":
                _, _, error = await self.learnings.sessions.reinforce(a.tier, {str(a.target)})
                if error is not None:
                    raise error
            else:
                await self._retire(a.tier, str(a.target))
        except ApiError as exc:  # refused (injection, cap): said, and the rest go on
            return f"{a.kind} not applied: {exc.error}: {exc}"
        return None

    def _source_of(self, tier: str, entry_id: str) -> str | None:
        index = self.learnings.tiers[tier]
        where = index.snapshot.by_id.get(entry_id)
        return None if where is None else index.snapshot.by_line[where[0]][where[1]].get("source")

    async def _already(self, tier: str, source: str, text: str) -> bool:
        """A learning this session already wrote says this (a job cut short, run again)."""
        index = self.learnings.tiers[tier]
        files = {path for path, metas in index.snapshot.by_line.items()
                 if any(m.get("source") == source for m in metas.values())}  # fmt: skip
        for rel in sorted(files):
            if await self._run(_says, index.root, rel, source, text):
                return True
        return False

    async def _retire(self, tier: str, entry_id: str) -> None:
        index = self.learnings.tiers[tier]
        where = index.snapshot.by_id.get(entry_id)
        if where is None:
            return

        def build(cur: bytes | None) -> bytes:
            text = entries.decode(cur)
            found, _ = entries.parse(where[0], decode_text(cur or b""))
            for e in found:
                if e.id == entry_id and e.fields_ok and e.status == "active":
                    text = entries.edit_fields(text, e.line, {"id": e.id, "status": "retired"})
            return entries.encode(text)

        await self.learnings.notes.commit(MemoryFile(tier, where[0], LEARNING), build)
        await self.learnings.compact(tier, where[0], dry_run=False)

    async def _append(self, tier: str, record: dict[str, Any]) -> None:
        async with self._ledger_lock:
            await self._run(self.ledgers[tier].append, record)

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    # -- status ----------------------------------------------------------------------

    def _state(self) -> str:
        return "off" if self.llm is None else "failing" if self.last_error else "on"

    async def status(self, scope: str) -> dict[str, Any]:
        ledger = self.ledgers.get(scope)
        if ledger is None:
            return {"extraction": None}
        body: dict[str, Any] = {
            "state": self._state(), "min_events": MIN_EVENTS,
            "waiting": sum(1 for t, _ in self.waiting if t == scope), **ledger.counts,
            "prompt_tokens": ledger.tokens["prompt"], "answer_tokens": ledger.tokens["answer"],
        }  # fmt: skip
        if self.deferred:
            body["deferred"] = self.deferred
        if ledger.bad_lines:
            body["unparsed_lines"] = ledger.bad_lines
            body["problems"] = ledger.problems
        if self.last_error:
            body["last_error"] = self.last_error
        return {"extraction": body}

    async def health(self) -> Health:
        if self.llm is None:
            off = {"state": "off", "reason": "no LLM configured (--llm-url)"}
            return Health([], {"extraction": off})
        reasons = [f"learning extraction failing: {self.last_error}"] if self.last_error else []
        reasons += [f"{n}: {ledger.bad_lines} extraction ledger line(s) not read; "
                    f"/memory/status?scope={n} names them"
                    for n, ledger in self.ledgers.items() if ledger.bad_lines]  # fmt: skip
        state = {"state": self._state(), "model": self.llm.model_id, "waiting": len(self.waiting)}
        return Health(reasons, {"extraction": state})


def _says(root: Path, rel: str, source: str, text: str) -> bool:
    """Whether an entry of ``rel`` from ``source`` says ``text`` (on a thread: a file is
    read and parsed)."""
    got = read_confined(root, rel)
    found, _ = entries.parse(rel, decode_text(got[0] if got else b""))
    mine = entries.words(text)
    return any(e.source == source and entries.jaccard(mine, entries.words(e.text)) > NEAR_DUPLICATE
               for e in found)  # fmt: skip
