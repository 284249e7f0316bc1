"""Learnings: what routes, tools and the memory block call.

Files in ``learnings/`` are the source of truth; each tier's index (``index.py``) is
kept in step by jobs in the notes' FIFO queue, so a learnings file and a note are never
indexed out of order. Writes (``memory.learn``, reinforcement, compaction) go through
the notes' durable write path (``Notes.commit``). Ranking is ``ranking.py``, and how
hits are ordered and shown ``hits.py``; what compaction does to a file is
``compaction.py``, and when it runs ``upkeep.py``; sessions and their reinforcement are
``sessions.py``; learnings extracted from ended sessions, ``extraction.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.config import Settings
from sidecar.crew.client import LeadClient
from sidecar.errors import ApiError
from sidecar.index.indexes import TierIndexes, TierState
from sidecar.learnings import beyond, entries, hits
from sidecar.learnings.index import FOLDER, Change, LearningsIndex, is_learnings
from sidecar.learnings.listing import list_tier, sort_key
from sidecar.learnings.ranking import (
    REFERENCE,
    RELEVANCE,
    SCOPE_FACTORS,
    ScoredLearning,
    fits,
    index_stems,
    lend_fits,
    prominence,
)
from sidecar.learnings.sessions import LOCAL, Sessions
from sidecar.learnings.standing import read_standing, standing
from sidecar.learnings.upkeep import Upkeep
from sidecar.notes.files import today_utc
from sidecar.notes.notes import Notes
from sidecar.retrieval.embeddings import Embeddings
from sidecar.retrieval.modes import DENSE, HYBRID, SPARSE
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import rank_tier

log = logging.getLogger(__name__)

SWEEP_EVERY_S = 60.0
POOL = 50  # candidates the hybrid ranking hands to prominence and MMR


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    scope: str
    limit: int = 10
    types: tuple[str, ...] = ()
    max_chars: dict[str, int] = field(default_factory=dict)  # per type
    session_id: str | None = None
    mode: str | None = None
    ranking: str = "default"  # or "relevance", "prominence" (no MMR): to compare them


class Learnings(Capability):
    def __init__(
        self,
        settings: Settings,
        indexes: TierIndexes,
        notes: Notes,
        embeddings: Embeddings,
        lead: LeadClient | None,
        hooks: Hooks,
    ) -> None:
        self.settings = settings
        self.indexes = indexes
        self.hooks = hooks  # hears file_changed; indexes its folder's writes (own_indexers)
        self.notes = notes
        self.embeddings = embeddings
        self.lead = lead
        self.tiers: dict[str, LearningsIndex] = {}
        self.sessions = Sessions(self.tiers, notes, lead)
        self.tasks = Tasks()
        self._loop: asyncio.AbstractEventLoop | None = None  # where the index writer reports
        self._stopping = False
        self.upkeep = Upkeep(self.tiers, notes, indexes, embeddings, self.tasks)

    # -- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        """Open each local tier's index (before the embedder starts, so it gets vectors)."""
        loop = asyncio.get_running_loop()
        for name, state in self.indexes.tiers.items():
            index = await loop.run_in_executor(None, LearningsIndex, state.tier)
            await loop.run_in_executor(None, index.refresh)  # what the index already holds
            self.tiers[name] = index
            self.embeddings.add_store(f"{name}:{FOLDER}", index.store)
        self.hooks.own_indexers[FOLDER] = self._index_written
        self._loop = loop

    async def start(self) -> None:
        """Catch up with the folder (a stat per file when the index is current), then follow
        the watcher."""
        self.hooks.file_changed.append(self._file_changed)
        for name in self.tiers:
            await self.sync(name, "")
        self.tasks.run(self._timer(), "learnings-timer")

    async def stop(self) -> None:
        """End every open session (its reinforcements written), then stop the timers."""
        self._stopping = True
        self.upkeep.stop()
        await self.tasks.cancel()
        await self.sessions.end_all()
        await self.tasks.finish()

    async def close(self) -> None:
        for index in self.tiers.values():
            await asyncio.get_running_loop().run_in_executor(None, index.close)

    async def _timer(self) -> None:
        """Reconcile with the folder (what the watcher missed) and end idle sessions."""
        last_reconcile = time.monotonic()
        while True:
            await asyncio.sleep(min(SWEEP_EVERY_S, self.settings.reconcile_interval))
            await self.end_idle_sessions()
            if time.monotonic() - last_reconcile >= self.settings.reconcile_interval:
                last_reconcile = time.monotonic()
                for name in self.tiers:
                    await self.sync(name, "")

    # -- keeping the index in step ---------------------------------------------------------

    def _index_written(
        self, scope: str, rel: str, data: bytes, mtime_ns: Callable[[], int]
    ) -> None:
        """``Notes.commit`` hands each written learnings file here, on the index writer:
        whoever wrote it (``memory.write`` too), its compaction follows."""
        self.tiers[scope].index_written(rel, data, mtime_ns)
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing to follow up
                self._loop.call_soon_threadsafe(self.upkeep.changed, scope, rel)

    def _file_changed(self, tier: str, rel: str) -> None:
        if tier in self.tiers and is_learnings(rel) and not self._stopping:
            self.tasks.oneoff(self.sync(tier, rel), "learnings-sync")

    async def sync(self, tier: str, rel: str = "") -> None:
        """Index one file's changes, or reconcile the whole folder, as one FIFO job; then
        compaction follows each file found changed (a hand edit, one made while the
        daemon was down)."""
        index = self.tiers[tier]
        changed: list[str] = []

        def job(_: TierState) -> Change:
            before = index.snapshot.shas
            count = index.sync(rel)
            after = index.snapshot.shas
            changed.extend(p for p in {*before, *after} if before.get(p) != after.get(p))
            return Change(count > 0)

        try:
            await self.indexes.write(tier, f"{FOLDER}:{rel}", job)
        except Exception as exc:  # the next reconcile tries again
            log.error("learnings index sync failed",
                      extra={"tier": tier, "file": rel, "error": str(exc)})  # fmt: skip
        for path in sorted(changed):
            self.upkeep.changed(tier, path)

    async def rebuild(self, scope: str) -> None:
        for name in ["agent", "crew"] if scope == "both" else [scope]:
            if name in self.tiers:
                index = self.tiers[name]

                def job(_: TierState, index: LearningsIndex = index) -> Change:
                    index.rebuild()
                    return Change(True)

                self.tasks.oneoff(self.indexes.write(name, f"{FOLDER}:", job), "learnings-rebuild")

    # -- writing -------------------------------------------------------------------------

    async def learn(self, body: dict[str, Any]) -> dict[str, Any]:
        """Append one entry (id and defaults filled in) durably, then compact its file."""
        scope = body.get("scope", "agent")
        slug = body.get("file", "general")
        text = body["text"].strip("\n")
        today = today_utc().isoformat()
        entry_id = body.get("id") or str(uuid.uuid4())  # a replayable writer brings its own
        fields = {
            "id": entry_id,
            "type": body.get("type", "declarative"),
            "domain": body.get("domain", "task"),
            "importance": body.get("importance", entries.DEFAULT_IMPORTANCE),
            "reinforcement_count": 0,
            "last_reinforced": today,
            "status": "active",
            "created": today,
            "institutional": True if body.get("institutional") else None,
            "source": body.get("source"),  # set by extraction and distillation, not requests
        }
        rel = f"{FOLDER}/{slug}.md"
        written = await self.notes.write(scope, rel, "\n" + entries.render(fields, text), "append")
        answer: dict[str, Any] = {"id": entry_id, "scope": scope, "file": rel,
                                  "usage": written["usage"]}  # fmt: skip
        if written.get("warning"):
            answer["warning"] = written["warning"]
        compacted = await self.compact(scope, rel, dry_run=False)  # never raises: the
        if compacted["files"]:  # entry is saved, and a failed compaction only says so
            answer["compaction"] = compacted["files"][0]
        if compacted.get("failed"):
            answer["warning"] = f"saved; compaction failed: {compacted['failed'][0]['error']}"
        return answer

    async def compact(self, scope: str, file: str | None, dry_run: bool) -> dict[str, Any]:
        """Compact one learnings file, or every one of the tier; ``dry_run`` only plans."""
        return await self.upkeep.compact(scope, self._local(scope), file, dry_run)

    # -- reinforcement -------------------------------------------------------------------

    async def end_session(self, session_id: str, caller: str = LOCAL) -> dict[str, Any]:
        return await self.sessions.end(session_id, caller)

    async def end_idle_sessions(self, now: float | None = None) -> list[str]:
        return await self.sessions.end_idle(now)

    # -- retrieval -----------------------------------------------------------------------

    def default_scope(self) -> str:
        """Both tiers wherever there is a crew tier to ask (here, or at the lead)."""
        return "both" if "crew" in self.tiers or self.lead is not None else "agent"

    def _local(self, scope: str) -> LearningsIndex:
        if scope not in self.tiers:
            owner = " (the crew lead owns it)" if scope == "crew" else ""
            raise ApiError(503, "tier_unavailable",
                           f"this sidecar does not serve the {scope} tier{owner}")  # fmt: skip
        return self.tiers[scope]

    async def search(self, q: SearchQuery, caller: str = LOCAL) -> dict[str, Any]:
        names = ["agent", "crew"] if q.scope == "both" else [q.scope]
        ask_lead = "crew" in names and "crew" not in self.tiers and self.lead is not None
        local = [n for n in names if n in self.tiers]
        if not local and not ask_lead:
            self._local(names[0])
        planned = plan(q.text)
        mode = q.mode or (HYBRID if self.embeddings.vectors is not None else SPARSE)
        degraded: list[str] = []
        vector, why_not = await self.embeddings.query_vector(q.text, mode)
        if why_not and mode == DENSE:
            raise ApiError(503, "dense_unavailable", f"{why_not}; use mode=sparse")
        if why_not:
            degraded.append(why_not)
            mode = SPARSE
        if planned is None and mode != DENSE:
            raise ApiError(400, "empty_query", "the query has no searchable words")
        candidates: list[ScoredLearning] = []
        for name in local:
            candidates += await self.indexes.read(self._candidates, name, planned, mode, vector, q)
        if ask_lead:
            lead = await self._from_lead(q, degraded)
            await asyncio.get_running_loop().run_in_executor(None, _fits, q.text, lead)
            candidates += lead
        lend_fits(candidates)
        if vector is not None and q.ranking not in (RELEVANCE, REFERENCE):  # they use no match
            await self._beyond(q.text, vector, candidates, degraded)
        picked = hits.within_budgets(hits.order(candidates, q.ranking), q.limit, q.max_chars)
        if q.session_id:
            shown = {name: [c.meta["id"] for c in picked if c.tier == name] for name in local}
            await self.sessions.shown(caller, q.session_id, shown)
        found = [hits.hit(c) for c in picked]
        body: dict[str, Any] = {"hits": found, "count": len(found), "mode": mode}
        if degraded:
            body["degraded"] = degraded
        return body

    async def listing(
        self, order: str, limit: int, scope: str | None, status: str, type: str | None
    ) -> dict[str, Any]:
        """Every learning of the local tiers in ``scope``, in ``order``, no query needed."""
        scope = scope or self.default_scope()
        names = ["agent", "crew"] if scope == "both" else [scope]
        local = [n for n in names if n in self.tiers] or [self._local(names[0]).tier.name]
        loop, today = asyncio.get_running_loop(), today_utc()
        found: list[dict[str, Any]] = []
        total = 0
        for name in local:
            rows, matched = await loop.run_in_executor(
                None, list_tier, self.tiers[name], name, order, limit, status, type, today
            )
            found, total = found + rows, total + matched
        found = sorted(found, key=sort_key(order))[:limit]
        body: dict[str, Any] = {"learnings": found, "count": len(found), "total": total,
                                "order": order}  # fmt: skip
        if "crew" in names and "crew" not in local:
            body["degraded"] = ["the crew's learnings are listed at the crew lead, not here"]
        return body

    def _candidates(
        self, name: str, planned: Any, mode: str, vector: Any, q: SearchQuery
    ) -> list[ScoredLearning]:
        """One tier's candidates from the notes' ranking, with their prominence (a thread)."""
        index = self.tiers[name]
        vectors = self.embeddings.vectors
        tier_vectors = vectors.tiers.get(f"{name}:{FOLDER}") if vectors else None
        pool = POOL if not q.types else 4 * POOL
        results, _ = rank_tier(index.store, name, planned, pool, mode, vector, tier_vectors)
        today = today_utc()
        out: list[ScoredLearning] = []
        keys: list[str] = []  # each candidate's chunk, whose vector the tier holds
        for r, relevance in zip(results, hits.relevances(results), strict=True):
            meta = index.entry(r.hit.path, r.hit.start_line)
            if meta is None or (q.types and meta["type"] not in q.types):
                continue
            out.append(ScoredLearning(name, r.hit.path, meta, r.hit.text, relevance,
                                 prominence(meta, today), SCOPE_FACTORS[name]))  # fmt: skip
            keys.append(r.hit.key)
        _fits(q.text, out)
        if vector is not None and tier_vectors is not None and mode != SPARSE:
            from sidecar.retrieval.fusion import dense_score  # numpy: hybrid only

            blobs = index.store.get_vectors(tier_vectors.embedder.model_id, keys)
            for c, key in zip(out, keys, strict=True):
                if key in blobs:  # else still waiting for its vector: judged by words
                    c.cosine = dense_score(vector, blobs[key])
        return out

    async def _beyond(
        self, text: str, vector: Any, candidates: list[ScoredLearning], degraded: list[str]
    ) -> None:
        """The best-matching entries' rests (``beyond``): each without the task's words,
        embedded together on the query thread; if they cannot be, the entries keep their
        whole cosine and the answer says so (the order may differ). An entry made only of
        the task's words has nothing beyond them (and an empty text is not sent to an
        embedder that may refuse it)."""
        checked = beyond.to_check(candidates)
        if not checked:
            return
        rests = await asyncio.get_running_loop().run_in_executor(
            None, beyond.without_words, text, [c.text for c in checked]
        )
        said = [(c, rest) for c, rest in zip(checked, rests, strict=True) if rest.strip()]
        for c in checked:
            c.beyond = 0.0  # unless it says more, below
        found, why_not = None, None
        if said:
            found, why_not = await self.embeddings.query_vectors([r for _, r in said])
        if why_not:
            log.warning("learnings: rests not embedded", extra={"error": why_not})
            degraded.append(f"dense: the embedder failed on what entries say beyond the task "
                            f"({why_not}); ranked by their whole cosines")  # fmt: skip
        for i, (c, _) in enumerate(said):
            c.beyond = float(found[i] @ vector) if found is not None else None

    async def _from_lead(self, q: SearchQuery, degraded: list[str]) -> list[ScoredLearning]:
        assert self.lead is not None
        body: dict[str, Any] = {"query": q.text, "scope": "crew", "limit": q.limit}
        if q.types:
            body["types"] = list(q.types)
        if q.session_id:
            body["session_id"] = q.session_id
        path, alone = "/memory/learnings/search", "own learnings only"
        answer = await self.lead.answer_or_note(path, body, degraded, alone)
        if answer is None:
            return []
        return [
            ScoredLearning(
                "crew",
                h["file"],
                h,
                h["text"],
                h["relevance"],
                h["prominence"],
                SCOPE_FACTORS["crew"],
            )
            for h in answer.get("hits", [])
        ]

    async def institutional(self) -> list[dict[str, Any]]:
        """Active institutional directives of both tiers, for the memory block. A member
        reads the crew's straight from the shared folder, as it reads CREW.md."""
        out: list[dict[str, Any]] = []
        for name, index in self.tiers.items():
            for path in sorted(index.snapshot.by_line):
                out += [{**meta, "tier": name, "file": path}
                        for meta in index.snapshot.by_line[path].values()
                        if standing(path, meta)]  # fmt: skip
        if "crew" not in self.tiers and self.lead is not None:
            crew = await asyncio.get_running_loop().run_in_executor(
                None, read_standing, self.settings.crew_dir
            )
            out += [{**meta, "tier": "crew"} for meta in crew]
        return out

    # -- status --------------------------------------------------------------------------

    async def status(self, scope: str) -> dict[str, Any]:
        index = self.tiers.get(scope)
        if index is None:
            return {"learnings": None}
        return {"learnings": {**index.status(), "compactions": self.upkeep.status(scope)}}

    async def health(self) -> Health:
        reasons: list[str] = []
        for name, index in self.tiers.items():
            if index.skipped:
                reasons.append(
                    f"{name}: {len(index.skipped)} learnings file(s) not read (hard links, size); "
                    f"/memory/status?scope={name} names them"
                )
            problems = sum(len(v) for v in index.snapshot.problems.values())
            if problems:
                reasons.append(
                    f"{name}: {problems} learnings problem(s) (malformed front matter read with "
                    f"default metadata); /memory/status?scope={name} names file and line"
                )
        for (name, file), error in sorted(self.upkeep.failed.items()):
            reasons.append(f"{name}: compaction of {file} after a change failed: {error}")
        return Health(reasons)


def _fits(query: str, candidates: list[ScoredLearning]) -> None:
    """Each candidate's share of the query's words and its stems (stemmed by SQLite: a
    thread's work; the second look finds them cached)."""
    texts = [c.text for c in candidates]
    for c, share, stems in zip(candidates, fits(query, texts), index_stems(texts), strict=True):
        c.fit, c.stems = share, stems
