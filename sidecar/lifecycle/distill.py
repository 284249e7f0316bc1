"""Distillation: what is durable in daily logs about to be archived, kept before they go.

The daily step of the lifecycle engine calls a ``Distiller`` with the logs of the
window it archives. One schema-bound LLM call per batch of logs (``distill_prompt``)
proposes an edited core file (``AGENT.md`` / ``CREW.md``), learnings and facts; each
goes through the write path every other writer uses, so each is checked on its own:

- the core edit is a ``replace`` through ``Notes.commit`` with ``Notes.write``'s checks
  (injection scan, the core cap, the tier cap: ``_write_core`` says why not ``write``),
  applied only if the file still holds what the prompt showed, and only once the
  version it replaces is durable in the core's history (``CORE_HISTORY``);
- each learning through ``Learnings.learn`` (scan, caps, compaction), with its source;
- the facts, scanned, as one ``memory.consolidated`` journal event, which facts
  consolidation picks up as an episode.

A part the guards refuse is reported and the other parts still apply: the scanner
judges text, not the model, so a clean learning beside a refused core edit is as clean
as any. Refusals are final: the batch's days count as distilled.

Exactly once, across SIGKILLs: the checked answer goes to the ledger
(``distill_ledger``) before any part is applied, and each part can tell whether it
already happened (the core holds the new text; a learning's id, derived from the job,
is indexed; an event of the job's session is in the journal). A pass that finds a plan
whose days never followed applies it again, without a model call, and then writes the
days. A batch whose answer never fit the schema, or whose model was unreachable,
applies nothing and writes nothing: the report names its days.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.disk import jsonl
from sidecar.disk.tiers import TooLarge, UnsafePath, decode_text, read_regular
from sidecar.errors import ApiError
from sidecar.journal.events import iso, uuid7
from sidecar.journal.index import Filters
from sidecar.journal.journal import Journal
from sidecar.learnings.learnings import Learnings, SearchQuery
from sidecar.lifecycle import distill_ledger as ledger
from sidecar.lifecycle import distill_prompt as dp
from sidecar.lifecycle.distill_ledger import LEDGER
from sidecar.llm.client import LLMClient, LLMError, ask
from sidecar.notes.files import CORE, CORE_FILE, CapExceeded, MemoryFile
from sidecar.notes.notes import Notes, _tier_bytes, refuse_injection
from sidecar.safety import scan

log = logging.getLogger(__name__)

CORE_HISTORY = "archive/core/{name}.jsonl"  # each version a distillation replaced
EVENT_TYPE = "memory.consolidated"
LEARNINGS_FILE = "distilled"  # learnings/distilled.md
SOURCE = "lifecycle.distill"
MAX_CORE_READ = 64 * 1024  # a core file hand-edited past this is not shown to a model
QUERY_CHARS = 300  # of the logs' text, to find the related learnings


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


class Distiller:
    """``await distiller(scope, days) -> report``; ``days`` are ``(rel, text)`` pairs."""

    def __init__(
        self,
        settings: Settings,
        llm: LLMClient,
        notes: Notes,
        learnings: Learnings,
        journal: Journal,
    ) -> None:
        self.settings = settings
        self.llm = llm
        self.notes = notes
        self.learnings = learnings
        self.journal = journal

    def _root(self, scope: str) -> Path:
        return self.settings.agent_dir if scope == "agent" else self.settings.crew_dir

    async def __call__(self, scope: str, days: list[tuple[str, str]]) -> dict[str, Any]:
        root = self._root(scope)
        given = sorted({rel for rel, _ in days})
        report: dict[str, Any] = {
            "scope": scope, "model": self.llm.model_id, "distilled": [], "skipped": [],
            "undistilled": [], "batches": [], "problems": [], "prompt_tokens": 0,
            "answer_tokens": 0, "ok": False,
        }  # fmt: skip
        try:
            found = await asyncio.to_thread(ledger.read, root, self.settings.caps.core)
        except (OSError, UnsafePath) as exc:  # distilling could repeat what it did
            report["problems"].append(f"{LEDGER} unreadable ({exc}); nothing was distilled")
            report["undistilled"] = given
            return report
        report["problems"] += found.problems
        report["skipped"] = [rel for rel in given if rel in found.done]
        done = set(found.done)
        for plan in found.unfinished:  # a crash cut these short: finish them, no model call
            result = await self._apply(scope, root, plan)
            result["resumed"] = True
            self._add(report, result, spent=False)
            done |= set(plan["days"])
        todo = [(rel, text) for rel, text in days if rel not in done]
        pending = await asyncio.to_thread(dp.batches, todo)  # a year of logs: seconds
        for n, batch in enumerate(pending):
            try:
                plan = await self._propose(scope, root, batch)
                await asyncio.to_thread(ledger.append, root, plan)
            except (LLMError, OSError, UnsafePath) as exc:
                # The model is down or off-schema, or the disk failed: the next batch would
                # fail alike (and wait out the same timeout). Nothing of it was applied.
                left = [rel for b in pending[n:] for rel, _ in b.days]
                report["problems"].append(
                    f"not distilled ({len(left)} day(s) from {left[0]}): {exc}; nothing of "
                    "these days was applied, and they are distilled at the next pass"
                )
                report["undistilled"] = left
                log.warning("distillation failed", extra={"tier": scope, "error": str(exc)})
                break
            self._add(report, await self._apply(scope, root, plan), spent=True)
        report["ok"] = not report["undistilled"]
        return report

    @staticmethod
    def _add(report: dict[str, Any], result: dict[str, Any], spent: bool) -> None:
        report["batches"].append(result)
        report["distilled"] += result["days"]
        report["problems"] += result.pop("problems")
        if spent:  # a resumed plan's call was paid for by the pass that crashed
            report["prompt_tokens"] += result["prompt_tokens"]
            report["answer_tokens"] += result["answer_tokens"]

    # -- asking ----------------------------------------------------------------------------

    async def _propose(self, scope: str, root: Path, batch: dp.Batch) -> dict[str, Any]:
        """One call; the plan the ledger keeps. Raises LLMError if no answer fits."""
        core_name = CORE_FILE[scope]
        unreadable: str | None = None  # then the logs still give learnings and facts
        try:
            current = await asyncio.to_thread(read_regular, root, core_name, MAX_CORE_READ)
        except (UnsafePath, TooLarge) as exc:
            current, unreadable = None, f"{core_name} was not read ({exc}), so not edited"
        base = None if current is None else current[0]
        core = "" if base is None else decode_text(base)
        related = await self._related(scope, batch)
        started = time.perf_counter()
        answer = await ask(
            self.llm, dp.SYSTEM.format(cap=self.settings.caps.core),
            dp.prompt(core_name, dp.UNAVAILABLE if unreadable else core, related, batch),
            dp.schema(self.settings.caps.core), "distillation", dp.check,
        )  # fmt: skip
        data = dict(answer.data)
        if data["core"] is not None and (unreadable or data["core"].strip() == core.strip()):
            data["core"] = None  # nothing to write: unchanged, or not to be touched
        return {
            "kind": "plan", "job": uuid7(), "at": iso(time.time()),
            "days": [rel for rel, _ in batch.days], "sha256": batch.sha256,
            "core_base": _sha(base), "core_unreadable": unreadable, "answer": data,
            "cost": {"model": self.llm.model_id, "prompt_tokens": answer.prompt_tokens,
                     "answer_tokens": answer.answer_tokens, "attempts": answer.attempts,
                     "llm_s": round(time.perf_counter() - started, 3)},
            "excerpted": [{"file": e.rel, "bytes": e.bytes, "shown": e.kept}
                          for e in batch.excerpts],
        }  # fmt: skip

    async def _related(self, scope: str, batch: dp.Batch) -> list[str]:
        """The existing learnings nearest the logs' words (one search; none if it fails)."""
        words = " ".join(" ".join(text.split()) for _, text in batch.days)[:QUERY_CHARS]
        try:
            q = SearchQuery(words, scope, dp.MAX_RELATED, mode="sparse", ranking="relevance")
            hits = (await self.learnings.search(q))["hits"]
        except ApiError:  # no searchable words, or the tier's learnings unavailable
            return []
        return [h["text"] for h in hits]

    # -- applying --------------------------------------------------------------------------

    async def _apply(self, scope: str, root: Path, plan: dict[str, Any]) -> dict[str, Any]:
        """Every part of a plan that has not happened yet, then its days in the ledger."""
        days, answer = plan["days"], plan["answer"]
        result: dict[str, Any] = {
            "job": plan["job"], "days": days, "prompt_tokens": 0, "answer_tokens": 0,
            **plan.get("cost", {}), "excerpted": plan.get("excerpted", []), "problems": [],
        }  # fmt: skip
        result["core"] = await self._core(scope, root, plan)
        if result["core"].get("error"):
            result["problems"].append(
                f"{result['core']['file']} not edited: {result['core']['detail']}"
            )
        result["learnings"] = await self._learnings(scope, plan, result)
        result["facts"] = self._facts(answer["facts"], result)
        result["event"] = await self._event(scope, plan, result)
        at = iso(time.time())
        lines = [{"kind": "day", "day": rel, "job": plan["job"], "at": at,
                  "sha256": plan["sha256"][rel]} for rel in days]  # fmt: skip
        try:
            await asyncio.to_thread(ledger.append, root, *lines)
        except (OSError, UnsafePath) as exc:
            result["problems"].append(f"applied, but {LEDGER} was not written ({exc}): the "
                                      "next pass applies this plan again")  # fmt: skip
        log.info("distilled", extra={"tier": scope, "days": len(days),
                 "learnings": len(result["learnings"]), "facts": len(result["facts"])})  # fmt: skip
        return result

    async def _core(self, scope: str, root: Path, plan: dict[str, Any]) -> dict[str, Any]:
        """Replace the core file with the plan's edit if it still holds what the prompt
        showed, the version it replaces durable in the history first."""
        name, new = CORE_FILE[scope], plan["answer"]["core"]
        if plan["core_unreadable"]:
            return {"file": name, "applied": False, "error": "core_unreadable",
                    "detail": plan["core_unreadable"]}  # fmt: skip
        if new is None:
            return {"file": name, "applied": False}
        text = new.rstrip("\n") + "\n"
        data = text.encode()

        def refused(error: str, detail: str) -> dict[str, Any]:
            return {"file": name, "applied": False, "proposed_bytes": len(data),
                    "error": error, "detail": detail}  # fmt: skip

        try:
            got = await asyncio.to_thread(read_regular, root, name, MAX_CORE_READ)
        except (OSError, UnsafePath, TooLarge) as exc:
            return refused("core_unreadable", f"{name} was not read ({exc}), so not edited")
        current = None if got is None else got[0]
        applied = {"file": name, "applied": True, "bytes_before": None, "bytes": len(data),
                   "dropped": plan["answer"]["dropped"], "previous": None}  # fmt: skip
        if current == data:  # this plan's edit, before a crash
            return applied
        if _sha(current) != plan["core_base"]:
            return refused("changed", f"{name} changed since the distillation read it; "
                           "the edit was not applied over it")  # fmt: skip
        if current is not None:
            history = CORE_HISTORY.format(name=name)
            line = {"job": plan["job"], "at": iso(time.time()), "file": name,
                    "days": plan["days"], "text": decode_text(current)}  # fmt: skip
            try:
                await asyncio.to_thread(_keep_version, root, history, line)
            except (OSError, UnsafePath) as exc:
                return refused("history_unwritable", f"{history} not written ({exc})")
            applied |= {"bytes_before": len(current), "previous": history}
        try:
            await self._write_core(scope, name, data, current)
        except ApiError as exc:
            return refused(exc.error, exc.detail)
        return applied

    async def _write_core(self, scope: str, name: str, data: bytes, current: bytes | None) -> None:
        """``Notes.write``'s checks (the injection scan, the core cap, the tier cap), less
        its call for room: this runs inside the maintenance pass that would make it, which
        would then wait on itself. An edit that does not grow the file passes even when the
        tier is over its cap, since condensing is how room is made; and it is applied only
        over the text the prompt showed, never over an edit made while the model thought."""
        refuse_injection(data.decode())
        caps = self.settings.caps
        (state,) = self.notes.indexes.for_scope(scope)

        def build(now: bytes | None) -> bytes:  # on the write path's thread, under its lock
            if now != current:
                raise ApiError(409, "changed", f"{name} changed since the distillation read "
                               "it; the edit was not applied over it")  # fmt: skip
            if len(data) > caps.core:
                raise CapExceeded(name, caps.core, len(data), now)
            grows = len(data) - len(now or b"")
            if grows > 0 and (held := _tier_bytes(state)) + grows > caps.tier:
                raise CapExceeded(f"the {scope} tier", caps.tier, held + grows, now, held)
            return data

        await self.notes.commit(MemoryFile(scope, name, CORE), build)

    async def _learnings(
        self, scope: str, plan: dict[str, Any], result: dict[str, Any]
    ) -> list[str]:
        """Each learning through ``learn``, under an id derived from the job, so one
        already written is found; the ids written, each refusal a problem."""
        days = plan["days"]
        source = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
        index = self.learnings.tiers.get(scope)
        written: list[str] = []
        for i, item in enumerate(plan["answer"]["learnings"]):
            entry_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"distill:{plan['job']}:{i}"))
            if index is not None and entry_id in index.snapshot.by_id:
                written.append(entry_id)
                continue
            body = {**item, "text": item["text"].strip(), "scope": scope, "id": entry_id,
                    "file": LEARNINGS_FILE, "source": source}  # fmt: skip
            try:
                written.append((await self.learnings.learn(body))["id"])
            except ApiError as exc:
                result["problems"].append(f"learning not written ({exc.error}): {exc.detail}")
        return written

    def _facts(self, facts: list[str], result: dict[str, Any]) -> list[str]:
        """The statements the scanner passes: the journal records text as given, and
        facts consolidation would carry a smuggled instruction into every memory block."""
        kept: list[str] = []
        for fact in facts:
            finding = scan(fact)
            if finding is None:
                kept.append(" ".join(fact.split()))
            else:
                result["problems"].append(
                    f"fact left out: it looks like a prompt injection (category="
                    f"{finding.category}): {fact[:80]!r}"
                )
        return kept

    async def _event(self, scope: str, plan: dict[str, Any], result: dict[str, Any]) -> str | None:
        """One ``memory.consolidated`` event naming what was kept and dropped, in the job's
        own session (so a replay finds it); None if nothing was kept, or if the journal
        refused it (a problem in the report)."""
        core, facts, days = result["core"], result["facts"], plan["days"]
        if not (facts or result["learnings"] or core["applied"]):
            return None
        session = f"distill-{plan['job']}"
        try:
            seen = await self.journal.listing(
                scope, Filters(session_id=session, types=(EVENT_TYPE,), include_superseded=True,
                               include_expired=True), None, 1,
            )  # fmt: skip
            if seen["events"]:
                return str(seen["events"][0]["id"])
            payload = {
                "job": plan["job"], "days": days, "facts": facts,
                "learnings": result["learnings"], "core": core["file"],
                "core_applied": core["applied"], "dropped": core.get("dropped", []),
                **plan.get("cost", {}),
            }  # fmt: skip
            event = {
                "type": EVENT_TYPE, "summary": dp.summary(days, facts), "payload": payload,
                "source": SOURCE, "session_id": session, "refs": {"episodic": True},
            }  # fmt: skip
            recorded = await self.journal.record(scope, {"events": [event]})
        except ApiError as exc:
            result["problems"].append(
                f"{EVENT_TYPE} event not recorded ({exc.error}: {exc.detail}); its facts "
                f"were: {facts}"
            )
            return None
        return str(recorded["ids"][0])


def _keep_version(root: Path, rel: str, line: dict[str, Any]) -> None:
    """Append the replaced version unless this job's is there already (a replay)."""
    try:
        if any((x.record or {}).get("job") == line["job"] for x in jsonl.read_lines(root, rel)):
            return
    except FileNotFoundError:
        pass
    ledger.append_lines(root, rel, line)
