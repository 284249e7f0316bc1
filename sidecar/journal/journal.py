"""Episodic memory: record events durably, recall them by meaning, importance and time.

The journal of each local tier lives in ``tier.py``; this module is what the
routes, tools and memory block call. What runs after an append (embedding, links,
the injection scan, reference records) is in ``background.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sidecar.capability import Capability, Health, Hooks, Tasks
from sidecar.config import Settings
from sidecar.crew.client import LeadClient
from sidecar.disk.tiers import parse_scope
from sidecar.errors import ApiError
from sidecar.index.indexes import TierIndexes
from sidecar.journal import health as journal_health
from sidecar.journal import log as journal_log
from sidecar.journal import recall as journal_recall
from sidecar.journal.background import Background
from sidecar.journal.events import NewEvent, check_batch, iso
from sidecar.journal.index import Filters
from sidecar.journal.log import day_file, today_file
from sidecar.journal.nudge import Nudge
from sidecar.journal.recall import Recalled, RecallQuery
from sidecar.journal.retention import JournalRetention
from sidecar.journal.tier import TierJournal
from sidecar.retrieval.embeddings import Embeddings

log = logging.getLogger(__name__)

HIGH_VALUE = 0.7  # the crew entries crew_shared recall brings: importance now at least this
SNAPSHOT_EVERY_S = 3600.0  # checks; one snapshot is kept per day


class Journal(Capability):
    def __init__(
        self,
        settings: Settings,
        indexes: TierIndexes,
        embeddings: Embeddings,
        lead: LeadClient | None,
        hooks: Hooks,
    ) -> None:
        self.settings = settings
        self.indexes = indexes
        self.embeddings = embeddings
        self.lead = lead
        self.hooks = hooks  # fires recorded and make_room, hears file_changed
        self.tiers: dict[str, TierJournal] = {}
        self._readers = ThreadPoolExecutor(2, thread_name_prefix="sidecar-recall")
        self._nudge = Nudge(self.on_reader)
        self._catching_up: set[tuple[str, str]] = set()
        self.background = Background(self)
        self.tasks = Tasks()
        # Per tier: a tier's efficiency is measured on the hits recall found in it.
        self.cosines: dict[str, journal_health.RecallCosines] = {}
        self.retention = JournalRetention(self.tiers, settings, self._ready)
        hooks.maintenance.append(self.retention)

    # -- lifecycle -----------------------------------------------------------------

    async def open(self) -> None:
        """Start reading each tier's journal into its index; appends queue behind it."""
        for name, state in self.indexes.tiers.items():
            tj = TierJournal(state.tier, self.settings.caps, self.hooks.make_room)
            self.tiers[name] = tj
            self.tasks.run(self._open_tier(tj), f"journal-{name}")
        self.hooks.file_changed.append(self._file_changed)

    async def _open_tier(self, tj: TierJournal) -> None:
        started = time.monotonic()
        try:
            await tj.run(tj.open)
        except Exception as exc:  # whatever it was, requests get a 503 saying so, not a wait
            tj.failed = f"{type(exc).__name__}: {exc}"[:300]
            log.exception("journal failed to open", extra={"tier": tj.tier.name})
            return
        finally:
            tj.ready.set()
        self.background.wake_embed.set()
        log.info(
            "journal ready",
            extra={"tier": tj.tier.name, "seconds": round(time.monotonic() - started, 3)},
        )

    async def start(self) -> None:
        bg = self.background
        self.tasks.run(bg.embed_loop(), "journal-embed")
        self.tasks.run(bg.scan_loop(), "journal-scan")
        self.tasks.run(bg.ref_loop(), "journal-refs")
        self.tasks.run(self._snapshot_loop(), "journal-health")
        if self.embeddings.vectors is None:
            log.warning(
                "episodic recall is sparse-only (no embedder): events are recalled by "
                "their words; /healthz says episodic: sparse-only"
            )

    async def stop(self) -> None:
        """End the loops, then write what was accepted: one-off jobs, recalled events'
        reference records, appends under way."""
        await self.tasks.cancel()
        await self.tasks.finish()
        with contextlib.suppress(Exception):
            await self.background.flush_refs()
        for tj in self.tiers.values():
            await tj.appender.drain()

    async def close(self) -> None:
        """Reads still running on a thread finish before their connections close."""
        await asyncio.to_thread(self._readers.shutdown, wait=True)
        for tj in self.tiers.values():
            await tj.run(tj.close)
            tj.writer.shutdown()

    # -- helpers -------------------------------------------------------------------

    async def on_reader(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` on a recall reader thread."""
        return await asyncio.get_running_loop().run_in_executor(self._readers, fn, *args)

    def _tier(self, name: str) -> TierJournal:
        if name not in ("agent", "crew"):  # "both" is a scope of notes, not of one journal
            raise ApiError(400, "bad_scope", "scope must be agent or crew")
        self.indexes.for_scope(name)  # the 503 naming who owns a tier not served here
        return self.tiers[name]

    def _writable(self, scope: str) -> TierJournal:
        if scope not in ("agent", "crew"):
            raise ApiError(400, "bad_scope", "scope must be agent or crew")
        if scope == "crew" and self.settings.role != "lead":
            raise ApiError(
                403,
                "crew_read_only",
                "the crew journal is written by the crew "
                "lead; record to your own journal (scope=agent)",
            )
        return self._tier(scope)

    async def _ready(self, tj: TierJournal) -> None:
        if not tj.ready.is_set():
            await tj.ready.wait()
        if tj.failed:
            raise ApiError(503, "journal_unavailable", f"the {tj.tier.name} journal could not "
                           f"be opened at start-up ({tj.failed}); the daemon's log says where. "
                           "Fix or move that file and restart the sidecar")  # fmt: skip

    def episodic(self) -> str:
        return "vector" if self.model() is not None else "sparse-only"

    def model(self) -> str | None:
        vectors = self.embeddings.vectors
        if vectors is None or vectors.state.embedder_error is not None:
            return None
        return vectors.embedder.model_id

    # -- recording -------------------------------------------------------------------

    async def record(self, scope: str, body: dict[str, Any]) -> dict[str, Any]:
        """Check, write durably (group commit), index; a batch is all or nothing.

        A journal records what happened, so text that looks like a prompt injection is
        recorded too; the scanner reads events where they leave the sidecar (recall,
        listing, the memory block), as it does for notes, which keeps 0.2 ms a event
        of scanning off the write path."""
        tj = self._writable(scope)
        now = time.time()
        events = check_batch(body, now, self.settings.agent_id)
        await self.stamp(scope, [e.record for e in events], [e.who for e in events])
        await self._ready(tj)
        await self._check_supersedes(tj, events)
        rel = day_file(datetime.fromtimestamp(now, UTC).date().isoformat())
        await tj.append(rel, [e.record for e in events])
        self.hooks.tell_recorded(scope, [e.record for e in events])
        self.background.appended()
        if any(e.embeddable for e in events):
            self.background.wake_embed.set()
        answer: dict[str, Any] = {
            "scope": scope,
            "ids": [e.record["id"] for e in events],
            "file": rel,
            "recorded_at": iso(now),
        }
        return answer

    async def stamp(
        self, scope: str, records: list[dict[str, Any]], who: list[tuple[str, str] | None]
    ) -> None:
        """Each record gets its operator's key (``hooks.stamp``) before it is written: the
        key is on the line on disk, so a rebuild indexes it again; the raw ids never are."""
        for listener in self.hooks.stamp:
            await listener(scope, records, who)

    async def _check_supersedes(self, tj: TierJournal, events: list[NewEvent]) -> None:
        targets = {e.record["supersedes"] for e in events if "supersedes" in e.record}
        if not targets:
            return
        assert tj.index is not None
        found = {r.id for r in await self.on_reader(tj.index.fetch, "id", targets)}
        missing = sorted(targets - found)
        if missing:
            raise ApiError(
                400,
                "unknown_supersedes",
                f"'supersedes' names no event in the "
                f"{tj.tier.name} journal: {missing[0]}; nothing was recorded",
            )

    async def relate(
        self, scope: str, src: str, dst: str, relation: str, weight: float
    ) -> dict[str, Any]:
        tj = self._writable(scope)
        if relation not in ("supports", "contradicts"):
            raise ApiError(
                400,
                "bad_relation",
                "'relation' must be supports or contradicts "
                "(similar links are made by the sidecar)",
            )
        if src == dst:
            raise ApiError(400, "bad_relation", "an event cannot relate to itself")
        await self._ready(tj)
        assert tj.index is not None
        found = {r.id for r in await self.on_reader(tj.index.fetch, "id", [src, dst])}
        for name, value in (("src", src), ("dst", dst)):
            if value not in found:
                raise ApiError(
                    404, "unknown_event", f"'{name}' names no event in the {scope} journal: {value}"
                )
        record = {
            "kind": "relation",
            "src": src,
            "dst": dst,
            "relation": relation,
            "weight": weight,
            "at": iso(time.time()),
        }
        await tj.append(today_file(), [record])
        return {"scope": scope, **{k: record[k] for k in ("src", "dst", "relation", "weight")}}

    # -- listing ----------------------------------------------------------------------

    async def listing(
        self, scope: str, filters: Filters, after: tuple[float, str] | None, limit: int
    ) -> dict[str, Any]:
        tj = self._tier(scope)
        await self._ready(tj)
        assert tj.index is not None
        now = time.time()
        rows = await self.on_reader(tj.index.listing, filters, now, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        events = []
        for row in rows:
            body = row.to_json()
            flag = journal_recall.flagged(row)
            if flag is not None:
                body["flagged"] = flag
            events.append(body)
        cursor = f"{rows[-1].ts!r}|{rows[-1].id}" if more and rows else None
        return {"scope": scope, "events": events, "next_cursor": cursor}

    async def event(self, scope: str, event_id: str) -> dict[str, Any]:
        """One event by id, with every relation touching it and which way each points."""
        tj = self._tier(scope)
        await self._ready(tj)
        assert tj.index is not None
        found = await self.on_reader(tj.index.fetch, "id", [event_id])
        if not found:
            raise ApiError(404, "unknown_event", f"no event {event_id!r} in the {scope} journal; "
                           "GET /memory/journal lists its events")  # fmt: skip
        links = await self.on_reader(tj.index.relations_of, event_id)
        others = {
            r.id: r for r in await self.on_reader(tj.index.fetch, "id", {o for *_, o, _ in links})
        }
        body = found[0].to_json()
        flag = journal_recall.flagged(found[0])
        if flag is not None:
            body["flagged"] = flag
        body["relations"] = [
            {"relation": rel, "direction": way, "weight": weight,
             "other": {"id": other, **({k: o.to_json()[k] for k in ("type", "summary", "ts")}
                                       if (o := others.get(other)) else {"missing": True})}}
            for rel, way, other, weight in links
        ]  # fmt: skip
        return {"scope": scope, **body}

    # -- recall ---------------------------------------------------------------------

    async def recall(self, q: RecallQuery, scope: str, mark: bool) -> dict[str, Any]:
        """``agent`` (alias ``own``): this agent's journal. ``both`` (``crew_shared``): that
        plus the crew's high-value events (from the lead's own crew tier, or asked of the lead
        by a member). ``crew``: the crew's high-value events alone."""
        scope = parse_scope(scope)
        self.hooks.tell_seen(q.filters.session_id)  # a recall in a session: it is not idle
        if scope == "crew" and self.lead is None and "crew" not in self.tiers:
            raise ApiError(503, "tier_unavailable", "this sidecar has no crew journal and no "
                           "crew lead (--lead-url): recall with scope agent")  # fmt: skip
        return await self._recall(q, scope, mark, crew=scope != "agent", own=scope != "crew")

    async def recall_crew(self, q: RecallQuery, mark: bool) -> dict[str, Any]:
        """What the lead gives a member for crew_shared: the crew's high-value events."""
        return await self._recall(q, "crew", mark, crew=True, own=False)

    async def _recall(
        self, q: RecallQuery, scope: str, mark: bool, crew: bool, own: bool = True
    ) -> dict[str, Any]:
        now = time.time()
        warnings: list[str] = []
        plan = [("agent", q.filters)] if own else []
        ask_lead = crew and self.lead is not None
        if crew and not ask_lead and "crew" in self.tiers:
            high = replace(q.filters, include_expired=False, min_importance=HIGH_VALUE)
            plan.append(("crew", high))
        elif crew and not ask_lead:
            warnings.append("crew: this sidecar has no crew lead; own journal only")
        remote: list[dict[str, Any]] = []
        legs = []
        embedding = asyncio.create_task(self.embeddings.query_vector(q.text, "hybrid"))
        try:  # the lead and BM25 answer while the query is embedded
            if ask_lead:
                remote = await journal_recall.from_lead(self.lead, q, mark, warnings)
            for name, filters in plan:
                tj = self._tier(name)
                await self._ready(tj)
                tier_q = RecallQuery(q.text, q.k, filters, q.walk, q.ranking)
                legs.append(
                    (tj, tier_q, await self.on_reader(journal_recall.sparse_leg, tj, tier_q, now))
                )
            qvec, warning = await embedding
        finally:
            embedding.cancel()
        if warning:
            warnings.insert(0, warning)
        hits: list[Recalled] = []
        modes = [mode for _, _, (_, mode) in legs if mode]
        for tj, tier_q, (sparse, _) in legs:
            hits += await self.on_reader(journal_recall.recall_tier, tj, tier_q, sparse, qvec, now)
        hits.sort(key=lambda r: (-r.score, -r.row.ts))
        local = [h.body or h.to_json(now) for h in hits]
        bodies = sorted(local + remote, key=lambda b: -b["score"])
        bodies = bodies[: q.k]
        kept = {b["id"] for b in bodies}
        hits = [h for h in hits if h.row.id in kept]
        if q.walk and hits:
            await self._walk(hits, bodies, q.filters, now)
        if mark:
            for hit in hits:
                self.background.refs.setdefault(hit.tier, {})[hit.row.id] = None
        by_tier: dict[str, list[float]] = {}
        for hit in hits:
            if hit.candidate.cosine is not None:
                by_tier.setdefault(hit.tier, []).append(hit.candidate.cosine)
        for name, found in by_tier.items():
            self.cosines.setdefault(name, journal_health.RecallCosines()).add(found)
        return {
            "query": q.text,
            "scope": scope,
            "mode": "hybrid" if qvec is not None else "sparse-only",
            "ranking": q.ranking,
            "query_mode": modes[0] if modes else None,
            "hits": bodies,
            "warnings": warnings,
        }

    async def _walk(
        self, hits: list[Recalled], bodies: list[dict[str, Any]], filters: Filters, now: float
    ) -> None:
        by_tier: dict[str, list[Recalled]] = {}
        for hit in hits:
            by_tier.setdefault(hit.tier, []).append(hit)
        links: dict[str, list[dict[str, Any]]] = {}
        for name, group in by_tier.items():
            tj = self.tiers[name]
            links.update(await self.on_reader(journal_recall.neighbours, tj, group, filters, now))
        for body in bodies:
            if body["id"] in links:
                body["neighbours"] = links[body["id"]]

    # -- health, status, the memory block ---------------------------------------------------

    async def snapshot_health(self, scope: str) -> dict[str, Any]:
        """The tier's health report, kept as today's snapshot, with the days before."""
        tj = self._tier(scope)
        await self._ready(tj)
        assert tj.index is not None
        report = await self.on_reader(
            journal_health.compute,
            tj,
            self.cosines.get(scope, journal_health.RecallCosines()),
            self.model(),
            time.time(),
        )
        await tj.run(tj.index.add_snapshot, iso(time.time())[:10], journal_health.snapshot(report))
        report["history"] = await self.on_reader(tj.index.snapshots, journal_health.HISTORY_DAYS)
        report["episodic"] = self.episodic()
        return report

    async def _snapshot_loop(self) -> None:
        while True:
            for name in self.tiers:
                with contextlib.suppress(Exception):
                    await self.snapshot_health(name)
            await asyncio.sleep(SNAPSHOT_EVERY_S)

    async def status(self, scope: str) -> dict[str, Any]:
        return {"journal": await self._status(scope)}

    async def _status(self, scope: str) -> dict[str, Any]:
        tj = self.tiers.get(scope)
        if tj is not None and tj.failed:
            return {"indexing": False, "events": None, "error": tj.failed}
        if tj is None or tj.index is None or not tj.ready.is_set():
            return {"indexing": True, "events": None}
        try:
            stats = await self.on_reader(tj.index.stats)
        except sqlite3.DatabaseError as exc:  # its file deleted or damaged under it: say so
            log.warning("journal index unreadable", extra={"tier": scope, "error": str(exc)})
            return {"indexing": False, "events": None, "error": f"journal index unreadable "
                    f"({exc}); POST /memory/reindex rebuilds it from the day files"}  # fmt: skip
        body = journal_health.tier_status(tj, stats, self.model() is not None)
        body["archived_bytes"] = (await self.retention.usage(scope))["archived_bytes"]
        body["retention"] = self.retention.last.get(scope)  # the last pass; None: none yet
        return body

    async def health(self) -> Health:
        reasons = journal_health.reasons(self.tiers)
        for name, last in self.retention.last.items():
            if last["problems"]:
                reasons.append(f"{name}: journal retention left {len(last['problems'])} day "
                               "file(s) whole; /memory/status says why")  # fmt: skip
        return Health(reasons, {"episodic": self.episodic()})

    async def nudge(self, session_id: str) -> str | None:
        return await self._nudge.text(self.tiers.get("agent"), session_id)

    # -- outside edits -------------------------------------------------------------------

    def _file_changed(self, tier: str, rel: str) -> None:
        tj = self.tiers.get(tier)
        if tj is None or tj.failed or not journal_log.is_journal_file(rel):
            return
        if (tier, rel) in self._catching_up:
            return
        try:
            size = os.stat(tj.tier.root / rel).st_size
        except OSError:
            size = -1  # gone: the catch-up rebuilds without it
        if tj.sizes.get(rel) == size:
            return  # our own append, indexed before it was answered
        self._catching_up.add((tier, rel))
        self.tasks.oneoff(self._catch_up(tj, rel), "journal-catch-up")

    async def _catch_up(self, tj: TierJournal, rel: str) -> None:
        await self._ready(tj)
        self._catching_up.discard((tj.tier.name, rel))
        try:
            await tj.run(tj.catch_up, rel)
        except Exception as exc:
            log.error("journal catch-up failed", extra={"file": rel, "error": str(exc)})
        self.background.wake_embed.set()

    async def latest(
        self, scope: str, limit: int, episodic: bool = False, operator: str | None = None
    ) -> list[dict[str, Any]]:
        """The tier's last recorded events (``episodic``: of those embedded; ``operator``:
        of that operator's), newest first."""
        tj = self._tier(scope)
        await self._ready(tj)
        assert tj.index is not None
        rows = await self.on_reader(tj.index.latest, limit, episodic, operator)
        return [row.to_json() for row in rows]

    async def last_recorded(self, scope: str, kind: str) -> float:
        """When the tier last recorded an event of type ``kind`` (0: never)."""
        tj = self._tier(scope)
        await self._ready(tj)
        assert tj.index is not None
        return float(await self.on_reader(tj.index.last_recorded, kind))

    async def rebuild(self, scope: str) -> None:
        names = ["agent", "crew"] if scope == "both" else [scope]
        for name in names:
            if name in self.tiers and not self.tiers[name].failed:  # no index to rebuild
                tj = self.tiers[name]
                self.tasks.oneoff(tj.run(tj.rebuild), "journal-rebuild")
