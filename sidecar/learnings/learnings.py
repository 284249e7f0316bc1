"""Learnings: what routes, tools and the memory block call.

Files in ``learnings/`` are the source of truth; each tier's index (``index.py``) is
kept in step by jobs in the notes' FIFO queue, so a learnings file and a note are never
indexed out of order. Writes (``memory.learn``, reinforcement, compaction) go through
the notes' durable write path (``Notes.commit``). Ranking is ``ranking.py``; what
compaction does to a file is ``compaction.py``; sessions and their reinforcement are
``sessions.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.config import Settings
from sidecar.crew.client import LeadClient
from sidecar.disk.tiers import decode_text, read_confined, walk_markdown
from sidecar.errors import ApiError
from sidecar.index.indexer import MAX_FILE_BYTES
from sidecar.index.indexes import TierIndexes, TierState
from sidecar.learnings import compaction, entries
from sidecar.learnings.index import FOLDER, LearningsIndex, is_learnings
from sidecar.learnings.ranking import (
    PROMINENCE,
    REFERENCE,
    RELEVANCE,
    SCOPE_FACTORS,
    ScoredLearning,
    answering,
    fit,
    mmr,
    prominence,
)
from sidecar.learnings.sessions import LOCAL, Sessions
from sidecar.notes.files import LEARNING, MemoryFile, today_utc
from sidecar.notes.notes import Notes
from sidecar.retrieval.embeddings import Embeddings
from sidecar.retrieval.modes import DENSE, HYBRID, SPARSE
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import Result, rank_tier
from sidecar.safety import scan_remembered

log = logging.getLogger(__name__)

SWEEP_EVERY_S = 60.0
POOL = 50  # candidates the hybrid ranking hands to prominence and MMR
FILL_SHARE = 0.5  # a hit only the dense leg found counts at most this much relevance
# Prominence orders only the hits that answer the task: those holding at least FIT_GATE of
# the query's content words the best-fitting hit holds (``ranking.fit``). A lesson
# reinforced a dozen times must not outrank the one that answers the question just for
# sharing a word with it; a weak entry's extra BM25 for one repeated or rare word is not
# an answer either. Calibrated on the independent ranking set, not the one written with
# the ranking: default nDCG@5 0.494 -> 0.625 hybrid (relevance alone 0.514), the same
# from 0.67 to 1.0. When no hit shares a word (dense fills only) the relevance gate stays.
FIT_GATE = 0.75
RELEVANCE_GATE = 0.5


@dataclass(slots=True)
class Change:
    """What a learnings job reports to the index worker (``indexes.Change``)."""

    changed: bool
    index_error: Exception | None = None


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
        self._stopping = False
        # One compaction of a file at a time: each plans on what the one before left.
        self._compacting: dict[tuple[str, str], asyncio.Lock] = {}

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
        """``Notes.commit`` hands each written learnings file here, on the index writer."""
        self.tiers[scope].index_written(rel, data, mtime_ns)

    def _file_changed(self, tier: str, rel: str) -> None:
        if tier in self.tiers and is_learnings(rel) and not self._stopping:
            self.tasks.oneoff(self.sync(tier, rel), "learnings-sync")

    async def sync(self, tier: str, rel: str = "") -> None:
        """Index one file's changes, or reconcile the whole folder, as one FIFO job."""
        index = self.tiers[tier]

        def job(_: TierState) -> Change:
            return Change(index.sync(rel) > 0)

        try:
            await self.indexes.write(tier, f"{FOLDER}:{rel}", job)
        except Exception as exc:  # the next reconcile tries again
            log.error("learnings index sync failed",
                      extra={"tier": tier, "file": rel, "error": str(exc)})  # fmt: skip

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
        entry_id = str(uuid.uuid4())
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
        index = self._local(scope)
        paths = [file] if file else sorted(
            p for p in index.snapshot.by_line if not p.startswith(f"{FOLDER}/archive/")
        )  # fmt: skip
        today = today_utc()
        plans: list[dict[str, Any]] = []
        failed: list[dict[str, str]] = []
        for rel in paths:
            try:
                async with self._compacting.setdefault((scope, rel), asyncio.Lock()):
                    done = await self._compact_file(scope, index, rel, today, dry_run)
            except Exception as exc:  # one odd file never blocks the others
                log.error("compaction failed", extra={"file": rel, "error": str(exc)})
                failed.append({"file": rel, "error": f"{type(exc).__name__}: {exc}"})
                continue
            if done is not None:
                plans.append(done)
        answer: dict[str, Any] = {"scope": scope, "dry_run": dry_run, "files": plans}
        if failed:
            answer["failed"] = failed
        return answer

    async def _compact_file(
        self, scope: str, index: LearningsIndex, rel: str, today: Any, dry_run: bool
    ) -> dict[str, Any] | None:
        current = await self._read_text(index, rel)
        if current is None:
            return None
        loop = asyncio.get_running_loop()  # planning a large file takes a while: off the loop
        p = await loop.run_in_executor(None, compaction.plan, rel, current, today)
        if not p.changes or dry_run:
            return p.to_json() if p.changes else None
        archive = MemoryFile(scope, p.archive_file, LEARNING)
        await self.notes.commit(archive, lambda cur: compaction.add_to_archive(cur, p.moved))

        def build(cur: bytes | None) -> bytes:
            rewritten = compaction.rebase(p, current, entries.decode(cur))
            return cur or b"" if rewritten is None else entries.encode(rewritten)

        await self.notes.commit(MemoryFile(scope, rel, LEARNING), build)
        return p.to_json()

    async def _read_text(self, index: LearningsIndex, rel: str) -> str | None:
        got = await asyncio.get_running_loop().run_in_executor(None, read_confined, index.root, rel)
        return None if got is None else entries.decode(got[0])

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
            candidates += await self._from_lead(q, degraded)
        for c in candidates:
            c.fit = fit(q.text, c.text)
        picked = _within_budgets(_order(candidates, q.ranking), q.limit, q.max_chars)
        if q.session_id:
            shown = {name: [c.meta["id"] for c in picked if c.tier == name] for name in local}
            await self.sessions.shown(caller, q.session_id, shown)
        hits = [_hit(c) for c in picked]
        body: dict[str, Any] = {"hits": hits, "count": len(hits), "mode": mode}
        if degraded:
            body["degraded"] = degraded
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
        for r, relevance in zip(results, _relevances(results), strict=True):
            meta = index.entry(r.hit.path, r.hit.start_line)
            if meta is None or (q.types and meta["type"] not in q.types):
                continue
            out.append(ScoredLearning(name, r.hit.path, meta, r.hit.text, relevance,
                                 prominence(meta, today), SCOPE_FACTORS[name]))  # fmt: skip
        return out

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
                        if _standing(path, meta)]  # fmt: skip
        if "crew" not in self.tiers and self.lead is not None:
            crew = await asyncio.get_running_loop().run_in_executor(
                None, _read_standing, self.settings.crew_dir
            )
            out += [{**meta, "tier": "crew"} for meta in crew]
        return out

    # -- status --------------------------------------------------------------------------

    async def status(self, scope: str) -> dict[str, Any]:
        index = self.tiers.get(scope)
        return {"learnings": None if index is None else index.status()}

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
        return Health(reasons)


def _standing(path: str, meta: dict[str, Any]) -> bool:
    """An institutional directive still in force."""
    archived = path.startswith(f"{FOLDER}/archive/")
    return (
        bool(meta["institutional"])
        and meta["type"] == "directive"
        and (meta["status"] == "active" and not archived)
    )


def _read_standing(root: Path) -> list[dict[str, Any]]:
    """The institutional directives in a tier's learnings files, read without an index."""
    out: list[dict[str, Any]] = []
    for rel, _ in sorted(walk_markdown(root, FOLDER)):
        got = read_confined(root, rel, MAX_FILE_BYTES)
        if got is None:
            continue
        found, _ = entries.parse(rel, decode_text(got[0]))
        out += [{**e.meta(), "file": rel} for e in found if _standing(rel, e.meta())]
    return out


def _relevances(results: list[Result]) -> list[float]:
    """Each result's relevance from the notes' ranking, scaled to the best hit: BM25 (or
    hybrid) scores over the best one; a dense-only hit's cosine, at most ``FILL_SHARE``
    when words found anything (``fusion.rerank`` ranks such fills below, at -2 + cosine)."""
    worded = [r.score for r in results if r.ranks and SPARSE in r.ranks]
    top = max(worded) if worded else 0.0
    dense_only = [r.score for r in results if not (r.ranks and SPARSE in r.ranks)]
    best_sim = max(dense_only) if dense_only and not worded else 1.0
    out: list[float] = []
    for r in results:
        if r.ranks and SPARSE in r.ranks:
            out.append(r.score / top if top > 0 else 1.0)
        elif worded:
            out.append(FILL_SHARE * max(0.0, r.score + 2.0))
        else:
            out.append(max(0.0, r.score) / best_sim if best_sim > 0 else 0.0)
    return out


def _order(candidates: list[ScoredLearning], ranking: str) -> list[ScoredLearning]:
    """``default``: the hits that answer the task (``answering``) by prominence and MMR,
    then the rest by relevance; ``prominence``: the same without MMR; ``reference``: the reference's
    relevance x prominence x scope and MMR over every candidate; ``relevance`` alone."""
    by_relevance = sorted(candidates, key=lambda c: -c.relevance)
    if ranking == RELEVANCE:
        return by_relevance
    if ranking == REFERENCE:
        return mmr(candidates, len(candidates))
    strong = answering(by_relevance, RELEVANCE_GATE, FIT_GATE)
    rest = [c for c in by_relevance if c not in strong and c.prominence > 0]
    if ranking == PROMINENCE:
        return sorted(strong, key=lambda c: -c.score) + rest
    return mmr(strong, len(strong)) + rest


def _within_budgets(
    ordered: list[ScoredLearning], limit: int, budgets: dict[str, int]
) -> list[ScoredLearning]:
    """The first ``limit`` hits, skipping any whose type has used its character budget."""
    used: dict[str, int] = {}
    out: list[ScoredLearning] = []
    for c in ordered:
        kind = c.meta["type"]
        if kind in budgets and used.get(kind, 0) + len(c.text) > budgets[kind]:
            continue
        used[kind] = used.get(kind, 0) + len(c.text)
        out.append(c)
        if len(out) >= limit:
            break
    return out


def _hit(c: ScoredLearning) -> dict[str, Any]:
    meta = c.meta
    hit: dict[str, Any] = {
        "id": meta["id"], "tier": c.tier, "file": c.path, "line": meta["line"],
        "type": meta["type"], "domain": meta["domain"], "importance": meta["importance"],
        "reinforcement_count": meta["reinforcement_count"],
        "last_reinforced": meta["last_reinforced"], "status": meta["status"],
        "institutional": meta["institutional"], "text": c.text,
        "relevance": round(c.relevance, 6), "prominence": round(c.prominence, 6),
        "scope_factor": c.scope_factor, "score": round(c.score, 6),
    }  # fmt: skip
    finding = scan_remembered(c.text)
    if finding is not None:  # say so; the MCP tools withhold the text
        hit["flagged"] = {"category": finding.category, "pattern": finding.pattern}
    return hit
