"""Semantic facts: what routes, tools and the memory block call, and the consolidation worker.

Episodes are the journal's episodic events (``consolidation.episodic``: telemetry never
is one). Once a tier has 3 or more that no job has seen (or one with
``payload.surprise >= 0.85``), the worker runs one job: the related active facts
(by meaning, else by words), one LLM call, and every resulting record plus the
"consolidated" marker appended to ``facts/log.jsonl`` at once (``consolidation.py``
says what the records are), then the job's ``memory.consolidated`` event and its
``supports`` relations to the journal (``evidence.py``). The worker has its own thread
and task: recording, indexing and searching never wait for it. Without an LLM it is off,
and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.config import Settings
from sidecar.disk import jsonl
from sidecar.errors import ApiError
from sidecar.facts import consolidation, evidence, summary
from sidecar.facts import log as facts_log
from sidecar.facts.consolidation import Episode
from sidecar.facts.index import Fact, FactsIndex
from sidecar.journal.events import epoch, iso, uuid7
from sidecar.journal.journal import Journal
from sidecar.llm.client import LLMClient, LLMError, ask
from sidecar.retrieval.embedders.base import EmbedderError
from sidecar.retrieval.embeddings import Embeddings
from sidecar.retrieval.modes import HYBRID
from sidecar.retrieval.query import plan
from sidecar.working.working import Working

log = logging.getLogger(__name__)

THRESHOLD = 3  # unconsolidated episodes that start a job
FLASHBULB = 0.85  # an episode this surprising starts one at once
RETRY_AFTER_S = 60.0  # after a failed job
SEED_LIMIT = 500  # recent events looked at, at start, for ones no job has seen


@dataclass(slots=True)
class TierFacts:
    name: str
    index: FactsIndex
    pending: dict[str, Episode] = field(default_factory=dict)  # not consolidated yet
    flashbulb: bool = False
    last_error: str | None = None
    failed_at: float | None = None
    torn: jsonl.SetAside | None = None
    unlinked: list[dict[str, Any]] = field(default_factory=list)  # markers, no event yet
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one job at a time


class Facts(Capability):
    def __init__(
        self,
        settings: Settings,
        journal: Journal,
        embeddings: Embeddings,
        llm: LLMClient | None,
        working: Working,
        hooks: Hooks,
    ) -> None:
        self.settings = settings
        self.hooks = hooks  # hears recorded
        self.working = working
        self.journal = journal
        self.embeddings = embeddings
        self.llm = llm
        self.tiers: dict[str, TierFacts] = {}
        self.failed: dict[str, str] = {}  # tier -> why its facts could not be opened
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="sidecar-facts")
        self._wake = asyncio.Event()
        self.tasks = Tasks()
        self._running: asyncio.Task[Any] | None = None
        self._cap = settings.caps.facts_log

    # -- lifecycle -------------------------------------------------------------------

    async def open(self) -> None:
        """A tier whose facts cannot be opened (its log a directory, its cache a directory:
        an unreadable cache file is begun again) is left out and reported: the daemon serves
        everything else."""
        for name, tier in self.journal.tiers.items():
            try:
                self.tiers[name] = await self._open_tier(name, tier.tier.root)
            except Exception as exc:
                self.failed[name] = f"{type(exc).__name__}: {exc}"[:300]
                log.exception("facts failed to open", extra={"tier": name})
        self.hooks.recorded.append(self._recorded)

    async def _open_tier(self, name: str, root: Path) -> TierFacts:
        index = await self._run(FactsIndex, root)
        try:
            torn = None
            if (root / facts_log.LOG).exists():
                torn = await self._run(jsonl.set_aside_torn_tail, root, facts_log.LOG)
            await self._run(index.load)
            await self._run(summary.move_old, index)
        except BaseException:
            await self._run(index.close)
            raise
        return TierFacts(name, index, torn=torn)

    async def start(self) -> None:
        for tf in self.tiers.values():
            try:
                latest = await self.journal.latest(tf.name, SEED_LIMIT, episodic=True)
            except ApiError as exc:  # the journal failed to open: the daemon serves on
                tf.last_error = f"episodes not read: {exc.detail}"
                log.error("consolidation has no episodes", extra={"tier": tf.name,
                                                                  "error": exc.detail})  # fmt: skip
                continue
            for event in latest:
                if event["id"] not in tf.index.fold.consolidated and consolidation.episodic(event):
                    self._add(tf, event)
            await self._link(tf, tf.index.fold.jobs)
        if self.llm is None:
            log.warning("semantic consolidation is off: no LLM configured (--llm-url); "
                        "episodes stay recallable, no facts are distilled")  # fmt: skip
            return
        self.tasks.run(self._worker(), "facts-worker")
        self._wake.set()

    async def stop(self) -> None:
        """A job already calling the LLM is abandoned (nothing of it was written); one
        appending finishes, since the append is on the facts thread."""
        await self.tasks.cancel()

    async def close(self) -> None:
        if self.llm is not None:
            await self.llm.close()
        for tf in self.tiers.values():
            await self._run(tf.index.close)
        self._thread.shutdown()

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    # -- which episodes wait --------------------------------------------------------------

    def _recorded(self, tier: str, records: list[dict[str, Any]]) -> None:
        tf = self.tiers.get(tier)
        if tf is None:
            return
        for record in records:
            if consolidation.episodic(record):
                self._add(tf, record)
        if len(tf.pending) >= THRESHOLD or tf.flashbulb:
            self._wake.set()

    def _add(self, tf: TierFacts, event: dict[str, Any]) -> None:
        ts = epoch(event["ts"]) or time.time()  # what the journal wrote: always a time
        tf.pending[event["id"]] = Episode(event["id"], ts, event["type"], event["summary"])
        surprise = (event.get("payload") or {}).get("surprise")
        if isinstance(surprise, int | float) and surprise >= FLASHBULB:
            tf.flashbulb = True

    def _due(self, tf: TierFacts) -> bool:
        if tf.failed_at is not None and time.monotonic() - tf.failed_at < RETRY_AFTER_S:
            return False
        return len(tf.pending) >= THRESHOLD or (tf.flashbulb and bool(tf.pending))

    async def _worker(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RETRY_AFTER_S)
            self._wake.clear()
            for tf in self.tiers.values():
                while self._due(tf):
                    if not await self._job_or_report(tf):
                        break

    async def _job_or_report(self, tf: TierFacts) -> bool:
        try:
            await self.consolidate_tier(tf)
        except (LLMError, EmbedderError, OSError, facts_log.FactsFull) as exc:
            tf.last_error, tf.failed_at = str(exc), time.monotonic()
            log.error("consolidation failed; the episodes wait for the next try",
                      extra={"tier": tf.name, "error": str(exc)})  # fmt: skip
            return False
        tf.last_error = tf.failed_at = None
        return True

    # -- one job -----------------------------------------------------------------------

    async def consolidate(self, scope: str | None = None) -> dict[str, Any]:
        """Run the sleep pass, then consolidate every waiting episode now, whatever the
        threshold (``sidecar consolidate``); the jobs run as they would on their own.
        Without an LLM only the sleep pass runs, and the answer says why."""
        names = [scope] if scope else list(self.tiers)
        for name in names:
            self._tier(name)
        promoted = {name: (await self.working.sleep(name))["promoted"] for name in names}
        if self.llm is None:
            return {"promoted": promoted, "jobs": {},
                    "facts": "off: no LLM is configured (--llm-url, --llm-model)"}  # fmt: skip
        done: dict[str, Any] = {}
        for name in names:
            tf = self._tier(name)
            jobs = []
            while tf.pending:
                try:
                    job = await self.consolidate_tier(tf)
                    if job is not None:
                        jobs.append(job)
                except (LLMError, EmbedderError) as exc:
                    tf.last_error = str(exc)
                    waiting = f"{len(tf.pending)} episode(s) still wait"
                    raise ApiError(
                        502, "llm_failed", f"{exc}; nothing was applied, the {waiting}"
                    ) from None
            done[name] = jobs
        return {"promoted": promoted, "jobs": done}

    async def consolidate_tier(self, tf: TierFacts) -> dict[str, Any] | None:
        """One job over the oldest waiting episodes; None if none wait (any more)."""
        async with tf.lock:  # the worker and ``sidecar consolidate`` never overlap
            if not tf.pending:
                return None
            return await self._job(tf)

    async def _job(self, tf: TierFacts) -> dict[str, Any]:
        assert self.llm is not None
        episodes = sorted(tf.pending.values(), key=lambda e: (e.ts, e.id))
        episodes = episodes[: consolidation.MAX_EPISODES]
        related = await self._related(tf, episodes)
        shown = {f.id: f for f in related}
        started = time.perf_counter()
        answer = await ask(self.llm, consolidation.SYSTEM, consolidation.prompt(related, episodes),
                           consolidation.SCHEMA, "consolidation",
                           consolidation.whole_answer)  # fmt: skip
        llm_s = time.perf_counter() - started
        new_texts = [(i["category"], i["fact"], i["keywords"]) for i in answer.data["facts"]]
        vectors = await self._vectors([f"{c}: {t} {' '.join(k)}" for c, t, k in new_texts])
        by_text = {t: v for (_, t, _), v in zip(new_texts, vectors, strict=True) if v is not None}
        now, job = time.time(), uuid7()
        p = await self._run(consolidation.plan_in, tf.index, answer.data, shown, episodes,
                            by_text, now, job)  # fmt: skip
        marker = {
            "kind": "consolidated", "episode_ids": [e.id for e in episodes], "at": iso(now),
            "job": job, "model": self.llm.model_id, "prompt_tokens": answer.prompt_tokens,
            "answer_tokens": answer.answer_tokens, "attempts": answer.attempts,
        }  # fmt: skip
        if p.notes:
            marker["notes"] = p.notes
        if p.records:  # named here, written to the journal once the facts are durable
            marker["event"] = uuid7()
            marker["supports"] = evidence.supports(p.records, marker["episode_ids"])
            marker["facts"] = evidence.facts_of(p.records)
        started = time.perf_counter()
        root = tf.index.root
        await self._run(facts_log.append, root, [*p.records, marker], self._cap)
        if "event" in marker:
            tf.unlinked.append(marker)
        await self._run(tf.index.load)
        apply_s = time.perf_counter() - started
        for e in episodes:
            tf.pending.pop(e.id, None)
        tf.flashbulb = False
        made = [r for r in p.records if r["kind"] == "fact"]
        model = self._model()
        if model is not None:
            items = [(tf.index.fold.facts[r["id"]], by_text[r["fact"]])
                     for r in made if r["fact"] in by_text]  # fmt: skip
            await self._run(tf.index.put_vectors, model, items)
        await self._run(summary.write, tf.index)
        await self._link(tf, tf.unlinked)
        log.info("consolidated", extra={"tier": tf.name, "episodes": len(episodes), **p.counts})
        return {"job": job, "episodes": len(episodes), "actions": p.counts, "notes": p.notes,
                "prompt_tokens": answer.prompt_tokens, "answer_tokens": answer.answer_tokens,
                "llm_s": round(llm_s, 3), "apply_s": round(apply_s, 4),
                "event": marker.get("event")}  # fmt: skip

    async def _link(self, tf: TierFacts, markers: list[dict[str, Any]]) -> None:
        """The journal events of applied jobs that lack one (``evidence``); a failure
        leaves them for the next job or start, counted in status."""
        try:
            await evidence.link(self.journal, tf.name, markers, tf.index.fold.facts,
                                self.settings.agent_id)  # fmt: skip
            tf.unlinked = []
        except (ApiError, OSError) as exc:
            tf.unlinked = [m for m in markers if m.get("event")]
            log.error("consolidation events not written; they wait for the next job",
                      extra={"tier": tf.name, "error": str(exc)})  # fmt: skip

    def _model(self) -> str | None:
        vectors = self.embeddings.vectors
        return vectors.embedder.model_id if vectors is not None else None

    async def _vectors(self, texts: list[str]) -> list[Any]:
        """Unit vectors of ``texts``, or Nones when no embedder is up (words decide then)."""
        if not texts or self.embeddings.vectors is None:
            return [None] * len(texts)
        try:
            return list(await self.embeddings.embed_texts(texts))
        except EmbedderError:
            return [None] * len(texts)

    async def _related(self, tf: TierFacts, episodes: list[Episode]) -> list[Fact]:
        """At most 20 active facts the episodes may touch: nearest by meaning to each
        episode, else the best BM25 matches of their words."""
        limit = consolidation.MAX_FACTS_IN_PROMPT
        await self._embed_missing(tf)
        vectors = await self._vectors([e.summary for e in episodes])
        words = " ".join(e.summary for e in episodes)
        return list(await self._run(consolidation.related, tf.index, vectors, words, limit))

    async def _embed_missing(self, tf: TierFacts) -> None:
        model = self._model()
        if model is None:
            return
        missing = await self._run(tf.index.missing_vectors, model)
        if missing:
            vectors = await self._vectors([f.embed_text for f in missing])
            items = [(f, v) for f, v in zip(missing, vectors, strict=True) if v is not None]
            await self._run(tf.index.put_vectors, model, items)

    # -- reading -----------------------------------------------------------------------

    def _tier(self, scope: str) -> TierFacts:
        if scope in self.failed:
            raise ApiError(503, "facts_unavailable", f"the {scope} tier's facts could not be "
                           f"opened at start-up ({self.failed[scope]}); the daemon's log says "
                           "where. Fix or move that file and restart the sidecar")  # fmt: skip
        if scope not in self.tiers:
            raise ApiError(503, "tier_unavailable", f"this sidecar does not keep the {scope} "
                           "tier's facts (the crew lead does)")  # fmt: skip
        return self.tiers[scope]

    async def search(
        self, query: str, scope: str, category: str | None, limit: int, as_of: float | None
    ) -> dict[str, Any]:
        tf = self._tier(scope)
        await self._embed_missing(tf)
        vector, why_not = await self.embeddings.query_vector(query, HYBRID)
        planned = plan(query)
        found = await self.journal.on_reader(
            tf.index.search, planned.match if planned else None, vector, category, as_of, limit
        )
        body: dict[str, Any] = {
            "facts": [{**f.to_json(), "score": round(s, 6)} for f, s in found],
            "count": len(found),
        }
        if why_not:
            body["degraded"] = [why_not]
        return body

    async def for_block(self, query: str | None, limit: int = 10) -> list[str]:
        """``- [category] fact (sources: N)`` lines for the memory block: the facts that
        bear on the task, or without one the best corroborated."""
        lines: list[str] = []
        for name, tf in self.tiers.items():
            if query:
                found = (await self.search(query, name, None, limit, None))["facts"]
                lines += [f"- [{f['category']}] {f['fact']} (sources: {f['sources']})"
                          for f in found]  # fmt: skip
            else:
                best = sorted(tf.index.active(), key=lambda f: (-len(f.sources), -f.valid_at))
                lines += [f"- [{f.category}] {f.fact} (sources: {len(f.sources)})"
                          for f in best[:limit]]  # fmt: skip
        return lines

    async def invalidate(self, scope: str, fact_id: str, reason: str) -> dict[str, Any]:
        tf = self._tier(scope)
        fact = tf.index.fold.facts.get(fact_id)
        if fact is None:
            raise ApiError(404, "unknown_fact", f"no fact {fact_id} in the {scope} tier")
        if fact.invalid_at is not None:
            raise ApiError(409, "already_invalid", f"{fact_id} stopped being true at "
                           f"{iso(fact.invalid_at)}")  # fmt: skip
        record = {"kind": "invalidate", "id": fact_id, "at": iso(time.time()),
                  "reason": f"operator: {reason}" if reason else "operator"}  # fmt: skip
        await self._run(facts_log.append, tf.index.root, [record], self._cap)
        await self._run(tf.index.load)
        await self._run(summary.write, tf.index)
        return tf.index.fold.facts[fact_id].to_json()

    def history(self, scope: str, fact_id: str) -> dict[str, Any]:
        chain = self._tier(scope).index.history(fact_id)
        if not chain:
            raise ApiError(404, "unknown_fact", f"no fact {fact_id} in the {scope} tier")
        events = self._tier(scope).index.fold.evidence
        versions = [f.to_json() for f in chain]
        for body, fact in zip(versions, chain, strict=True):
            if fact.job in events:  # the journal event that links it to its episodes
                body["evidence"] = events[fact.job]
        return {"id": fact_id, "versions": versions}

    async def status(self, scope: str) -> dict[str, Any]:
        return {"facts": self._status(scope)}

    def _status(self, scope: str) -> dict[str, Any] | None:
        if scope in self.failed:
            return {"error": self.failed[scope]}
        tf = self.tiers.get(scope)
        if tf is None:
            return None
        fold = tf.index.fold
        body: dict[str, Any] = {
            "consolidation": "on" if self.llm is not None else "off",
            "active": sum(1 for f in fold.facts.values() if f.valid()),
            "invalid": sum(1 for f in fold.facts.values() if not f.valid()),
            "pending_episodes": len(tf.pending),
            "jobs": len(fold.jobs),
            "tokens": sum(j.get("prompt_tokens", 0) + j.get("answer_tokens", 0) for j in fold.jobs),
            "unparsed_lines": fold.unparsed,
            "problems": fold.problems,
        }
        if tf.last_error:
            body["last_error"] = tf.last_error
        if tf.unlinked:  # jobs applied, their journal event not yet written
            body["unlinked_jobs"] = len(tf.unlinked)
        if tf.torn is not None:
            body["rejected_tail"] = {"line": tf.torn.line, "bytes": tf.torn.bytes}
        return body

    async def health(self) -> Health:
        reasons = [f"{n}: facts failed to open: {why}" for n, why in self.failed.items()]
        if self.llm is None:
            off = {"state": "off", "reason": "no LLM configured (--llm-url)"}
            return Health(reasons, {"consolidation": off})
        errors = {n: tf.last_error for n, tf in self.tiers.items() if tf.last_error}
        reasons += [f"{n}: consolidation failing, episodes wait: {e}" for n, e in errors.items()]
        state = {"state": "failing" if errors else "on", "model": self.llm.model_id}
        return Health(reasons, {"consolidation": state})
