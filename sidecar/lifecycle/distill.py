"""Distillation: what is durable in daily logs about to be archived, kept before they go.

The daily step of the lifecycle engine calls a ``Distiller`` with the logs of the
window it archives. One schema-bound LLM call per batch of logs (``distill_prompt``)
proposes an edited core file (``AGENT.md`` / ``CREW.md``), learnings and facts; each
goes through the write path every other writer uses, so each is checked on its own:

- the core edit is a ``replace`` through ``Notes.write`` (injection scan, the core cap,
  the tier cap), applied only if the file still holds what the prompt showed, and only
  once the version it replaces is durable in the core's history (``CORE_HISTORY``);
- each learning through ``Learnings.learn`` (scan, caps, compaction), with its source;
- the facts, scanned, as one ``memory.consolidated`` journal event, which facts
  consolidation picks up as an episode.

A part the guards refuse is reported and the other parts still apply: the scanner
judges text, not the model, so a clean learning beside a refused core edit is as clean
as any. Days are written to the ledger (``LEDGER``, append-only) once their batch is
applied, refused parts and all, and a day in the ledger is never distilled again (a
re-run after a crash between distilling and archiving). A crash after the edits and
before the ledger line distils that batch twice; compaction merges the repeated
learnings and facts consolidation reinforces the repeated facts instead of adding them.
A batch whose answer never fit the schema, or whose model was unreachable, applies
nothing and is not in the ledger: the report names it and its days.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.disk import jsonl
from sidecar.disk.tiers import TooLarge, UnsafePath, decode_text, read_regular
from sidecar.errors import ApiError
from sidecar.journal.events import iso, uuid7
from sidecar.journal.journal import Journal
from sidecar.learnings.learnings import Learnings, SearchQuery
from sidecar.lifecycle import distill_prompt as dp
from sidecar.llm.client import LLMClient, LLMError, ask
from sidecar.notes.files import CORE_FILE
from sidecar.notes.notes import Notes
from sidecar.safety import scan

log = logging.getLogger(__name__)

LEDGER = "archive/daily/.distilled.jsonl"
CORE_HISTORY = "archive/core/{name}.jsonl"  # each version a distillation replaced
EVENT_TYPE = "memory.consolidated"
LEARNINGS_FILE = "distilled"  # learnings/distilled.md
SOURCE = "lifecycle.distill"
MAX_CORE_READ = 64 * 1024  # a core file hand-edited past this is not shown to a model
QUERY_CHARS = 300  # of the logs' text, to find the related learnings


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
        report: dict[str, Any] = {
            "scope": scope, "model": self.llm.model_id, "distilled": [], "skipped": [],
            "undistilled": [], "batches": [], "problems": [], "prompt_tokens": 0,
            "answer_tokens": 0, "ok": not days,
        }  # fmt: skip
        if not days:
            return report
        try:
            done, problems = await asyncio.to_thread(read_ledger, root)
        except (OSError, UnsafePath) as exc:  # distilling could repeat what it did
            report["problems"].append(f"{LEDGER} unreadable ({exc}); nothing was distilled")
            report["undistilled"] = sorted(rel for rel, _ in days)
            return report
        report["problems"] += problems
        report["skipped"] = sorted(rel for rel, _ in days if rel in done)
        todo = [(rel, text) for rel, text in days if rel not in done]
        pending = dp.batches(todo)
        for n, batch in enumerate(pending):
            names = [rel for rel, _ in batch.days]
            try:
                result = await self._batch(scope, root, batch)
            except (LLMError, OSError) as exc:
                # The model is down or off-schema, or the disk failed: the next batch would
                # fail alike (and wait out the same timeout). Nothing of it was applied.
                why = str(exc)
                left = [rel for b in pending[n:] for rel, _ in b.days]
                report["problems"].append(
                    f"not distilled ({len(left)} day(s) from {names[0]}): {why}; nothing "
                    "of these days was applied, and they are distilled at the next pass"
                )
                report["undistilled"] = left
                log.warning("distillation failed", extra={"tier": scope, "error": why})
                break
            report["batches"].append(result)
            report["distilled"] += names
            report["prompt_tokens"] += result["prompt_tokens"]
            report["answer_tokens"] += result["answer_tokens"]
            report["problems"] += result.pop("problems")
        report["ok"] = not report["undistilled"]
        return report

    async def _batch(self, scope: str, root: Path, batch: dp.Batch) -> dict[str, Any]:
        """One call and its edits; raises (before applying anything) if no answer fits."""
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
        shown = dp.UNAVAILABLE if unreadable else core
        answer = await ask(
            self.llm, dp.SYSTEM.format(cap=self.settings.caps.core),
            dp.prompt(core_name, shown, related, batch), dp.schema(self.settings.caps.core),
            "distillation", dp.check,
        )  # fmt: skip
        data = answer.data
        days = [rel for rel, _ in batch.days]
        result: dict[str, Any] = {
            "days": days, "prompt_tokens": answer.prompt_tokens,
            "answer_tokens": answer.answer_tokens, "attempts": answer.attempts,
            "llm_s": round(time.perf_counter() - started, 3),
            "excerpted": [{"file": e.rel, "bytes": e.bytes, "shown": e.kept}
                          for e in batch.excerpts],
            "problems": [],
        }  # fmt: skip
        if unreadable:
            result["core"] = {"file": core_name, "applied": False, "error": "core_unreadable",
                              "detail": unreadable}  # fmt: skip
        else:
            result["core"] = await self._core(scope, root, core_name, base, data, days)
        if result["core"].get("error"):
            result["problems"].append(f"{core_name} not edited: {result['core']['detail']}")
        result["learnings"] = await self._learnings(scope, data["learnings"], days, result)
        facts = self._facts(data["facts"], result)
        result["facts"] = facts
        result["event"] = await self._event(scope, days, facts, result, answer)
        try:
            await asyncio.to_thread(append_ledger, root, batch, result["event"] or uuid7())
        except (OSError, UnsafePath) as exc:
            result["problems"].append(f"applied, but {LEDGER} was not written ({exc}): these "
                                      "days are distilled again at the next pass")  # fmt: skip
        log.info("distilled", extra={"tier": scope, "days": len(days),
                 "learnings": len(result["learnings"]), "facts": len(facts)})  # fmt: skip
        return result

    async def _related(self, scope: str, batch: dp.Batch) -> list[str]:
        """The existing learnings nearest the logs' words (one search; none if it fails)."""
        words = " ".join(" ".join(text.split()) for _, text in batch.days)[:QUERY_CHARS]
        try:
            q = SearchQuery(words, scope, dp.MAX_RELATED, mode="sparse", ranking="relevance")
            hits = (await self.learnings.search(q))["hits"]
        except ApiError:  # no searchable words, or the tier's learnings unavailable
            return []
        return [h["text"] for h in hits]

    async def _core(
        self, scope: str, root: Path, name: str, base: bytes | None, data: dict[str, Any],
        days: list[str],
    ) -> dict[str, Any]:  # fmt: skip
        """Replace the core file with the model's edit, if the guards allow it and the file
        is still what the prompt showed. The version it replaces is appended to the core's
        history first, so a point the model dropped wrongly can be found again."""
        new = data["core"]
        before = len(base or b"")
        current = "" if base is None else decode_text(base)
        if new is None or new.strip() == current.strip():
            return {"file": name, "applied": False, "bytes": before}
        text = new.rstrip("\n") + "\n"
        size = len(text.encode())
        history = CORE_HISTORY.format(name=name) if base is not None else None

        def refused(error: str, detail: str) -> dict[str, Any]:
            return {"file": name, "applied": False, "bytes": before, "proposed_bytes": size,
                    "error": error, "detail": detail}  # fmt: skip

        if history is not None:
            line = {"at": iso(time.time()), "file": name, "days": days, "text": current}
            try:
                await asyncio.to_thread(append_line, root, history, line)
            except (OSError, UnsafePath) as exc:
                return refused("history_unwritable", f"{history} not written ({exc})")
        try:
            await self.notes.write(scope, name, text, "replace", base=(base,))
        except ApiError as exc:
            return refused(exc.error, exc.detail)
        return {"file": name, "applied": True, "bytes_before": before, "bytes": size,
                "dropped": data["dropped"], "previous": history}  # fmt: skip

    async def _learnings(
        self, scope: str, items: list[dict[str, Any]], days: list[str], result: dict[str, Any]
    ) -> list[str]:
        """Each learning through ``learn``; the ids written, each refusal a problem."""
        first, last = days[0], days[-1]
        source = first if first == last else f"{first} to {last}"
        written: list[str] = []
        for item in items:
            body = {**item, "text": item["text"].strip(), "scope": scope,
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

    async def _event(
        self, scope: str, days: list[str], facts: list[str], result: dict[str, Any], answer: Any
    ) -> str | None:
        """One ``memory.consolidated`` event naming what was kept and dropped; None if
        nothing was, or if the journal refused it (a problem in the report)."""
        core = result["core"]
        if not (facts or result["learnings"] or core["applied"]):
            return None
        payload = {
            "days": days, "facts": facts, "learnings": result["learnings"],
            "core": {"file": core["file"], "applied": core["applied"]},
            "dropped": core.get("dropped", []), "model": self.llm.model_id,
            "prompt_tokens": answer.prompt_tokens, "answer_tokens": answer.answer_tokens,
        }  # fmt: skip
        event = {"type": EVENT_TYPE, "summary": dp.summary(days, facts), "payload": payload,
                 "source": SOURCE, "refs": {"episodic": True}}  # fmt: skip
        try:
            recorded = await self.journal.record(scope, {"events": [event]})
        except ApiError as exc:
            result["problems"].append(
                f"{EVENT_TYPE} event not recorded ({exc.error}: {exc.detail}); its facts "
                f"were: {facts}"
            )
            return None
        return str(recorded["ids"][0])


def read_ledger(root: Path) -> tuple[set[str], list[str]]:
    """The days already distilled, and each ledger line that could not be read."""
    done: set[str] = set()
    problems: list[str] = []
    try:
        for line in jsonl.read_lines(root, LEDGER):
            day = None if line.record is None else line.record.get("day")
            if isinstance(day, str):
                done.add(day)
            else:
                why = line.error or "no 'day' string"
                problems.append(f"{LEDGER} line {line.number} ignored: {why}")
    except FileNotFoundError:
        pass
    return done, problems


def append_ledger(root: Path, batch: dp.Batch, job: str) -> None:
    """One line a day, one durable append for the batch."""
    at = iso(time.time())
    records = [{"day": rel, "at": at, "job": job, "sha256": batch.sha256[rel]}
               for rel, _ in batch.days]  # fmt: skip
    append_line(root, LEDGER, *records)


def append_line(root: Path, rel: str, *records: dict[str, Any]) -> None:
    """Whole JSON lines appended durably to ``rel`` (its folder made if need be)."""
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    jsonl.append(root, rel, data.encode())
