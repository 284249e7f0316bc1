"""The daemon: composes the capabilities and owns their lifecycle.

Each capability keeps its own state and threads: the tier indexes and their
writer (``index.indexes``), the embedder and vectors (``retrieval.embeddings``),
search (``retrieval.search``), notes (``notes.notes``), the event journal
(``journal.journal``) and the memory block (``context.builder``). This module
wires them together, starts and stops them in order, and answers the questions
about all of them at once: status and health. What a capability is to this module,
and the hooks between capabilities, are in ``sidecar.capability``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from aiohttp import web

from sidecar.capability import Capability, Health, Hooks
from sidecar.config import Settings
from sidecar.context import routes as context_routes
from sidecar.context.builder import ContextBuilder
from sidecar.crew.client import LeadClient, LeadUnavailable, unreachable
from sidecar.disk.tiers import TIER_NAMES, Tier
from sidecar.errors import ApiError
from sidecar.facts import routes as facts_routes
from sidecar.facts.facts import Facts
from sidecar.index.indexes import TierIndexes
from sidecar.index.parse_pool import ParsePool
from sidecar.index.store import IndexStore
from sidecar.journal import routes as journal_routes
from sidecar.journal.index import Filters
from sidecar.journal.journal import Journal
from sidecar.learnings import routes as learnings_routes
from sidecar.learnings.extraction import Extraction
from sidecar.learnings.learnings import Learnings
from sidecar.lifecycle import routes as lifecycle_routes
from sidecar.lifecycle.distill import Distiller
from sidecar.lifecycle.engine import Lifecycle
from sidecar.llm.client import LLMClient
from sidecar.llm.factory import make_client
from sidecar.notes import routes as notes_routes
from sidecar.notes.browse import Browser
from sidecar.notes.notes import Notes
from sidecar.operators import routes as operators_routes
from sidecar.operators.operators import Operators
from sidecar.retrieval import routes as search_routes
from sidecar.retrieval.embeddings import Embeddings
from sidecar.retrieval.search import Search
from sidecar.sessions import routes as sessions_routes
from sidecar.sessions.sessions import Sessions
from sidecar.stores import describe, open_store
from sidecar.working import routes as working_routes
from sidecar.working.working import Working

log = logging.getLogger(__name__)


class ServedTiers(Capability):
    """The tiers this daemon serves: their indexes and the watcher, and the crew tier
    when it is kept elsewhere (asked of the crew lead, or read from its store)."""

    def __init__(
        self, indexes: TierIndexes, lead: LeadClient | None, crew_reader: IndexStore | None
    ) -> None:
        self.indexes, self.lead, self.crew_reader = indexes, lead, crew_reader

    async def open(self) -> None:
        await self.indexes.open()

    async def start(self) -> None:
        if self.lead is not None:
            await self.lead.start()
        await self.indexes.start()

    async def stop(self) -> None:
        await self.indexes.stop()
        if self.lead is not None:
            await self.lead.close()

    async def close(self) -> None:
        await self.indexes.close()
        if self.crew_reader is not None:
            self.crew_reader.close()

    async def health(self) -> Health:
        reasons: list[str] = []
        await self.indexes.probe()  # damage to an index file shows here first
        tiers = self.indexes.health(reasons)
        for name, state in self.indexes.tiers.items():
            tiers[name]["store"] = describe(state.store)
        if self.lead is not None:
            tiers["crew"] = self.lead.health()
            if not self.lead.reachable:
                reasons.append(f"crew: lead unreachable: {self.lead.last_error or 'not yet asked'}")
        if self.crew_reader is not None:  # searched here, from the lead's namespace
            problem = await self.indexes.read(self.crew_reader.problem)
            tiers["crew"] = {**tiers.get("crew", {}), "state": "broken" if problem else "ready",
                             "reads": "direct", "store": describe(self.crew_reader)}  # fmt: skip
            if problem:
                reasons.append(f"crew: {problem}")
        watcher_down = self.indexes.watcher_reason()
        if watcher_down:
            reasons.append(watcher_down)
        watcher = "ready" if self.indexes.watcher_ready.is_set() else "down"
        return Health(reasons, {"watcher": watcher, "tiers": tiers})

    async def status(self, scope: str) -> dict[str, Any]:
        return await self.indexes.status(scope)


class MemoryService:
    def __init__(self, settings: Settings, parse_pool: ParsePool | None = None) -> None:
        """``parse_pool``: parser workers already parsing a cold tier (``head_start``)."""
        self.settings = settings
        hooks = self.hooks = Hooks()
        self.lead: LeadClient | None = None
        if settings.lead_url:
            self.lead = LeadClient(settings.lead_url, settings.crew_token or "")
        self.indexes = TierIndexes(
            settings.tiers(),
            settings.chunk_chars,
            settings.reconcile_interval,
            settings.role,
            self._open_store,
            parse_pool,
            hooks=hooks,
        )
        self.embeddings = Embeddings(settings, self.indexes, hooks)
        reader = settings.crew_reader()  # a member reading the crew index in PostgreSQL
        self.crew_reader = open_store(*reader, read_only=True) if reader else None
        self.search = Search(self.indexes, self.embeddings, self.lead, self.crew_reader, hooks)
        self.notes = Notes(settings, self.indexes, hooks)
        self.browser = Browser(settings, self.indexes, self.notes.read, hooks)  # MCP resources
        self.journal = Journal(settings, self.indexes, self.embeddings, self.lead, hooks)
        self.learnings = Learnings(
            settings, self.indexes, self.notes, self.embeddings, self.lead, hooks
        )
        llm = _llm(settings)
        self.operators = Operators(settings, self.indexes, self.notes, self.journal, llm, hooks)
        self.working = Working(settings, self.journal, llm, hooks)
        self.facts = Facts(settings, self.journal, self.embeddings, llm, self.working, hooks)
        self.extraction = Extraction(self.learnings, self._session_events, llm, self.lead, hooks)
        distiller = llm and Distiller(settings, llm, self.notes, self.learnings, self.journal)
        self.lifecycle = Lifecycle(settings, self.indexes, hooks, distiller)  # None: no LLM
        self.search.archives = self.lifecycle.archive.store  # searched when asked
        has_crew = settings.role == "lead" or self.lead is not None or reader is not None
        self.context = ContextBuilder(
            settings, self.search, self.journal, self.learnings, self.facts, has_crew
        )
        self.sessions = Sessions(settings, self.journal, self.learnings, self.working,
                                 self.operators, self.context, hooks)  # fmt: skip
        # Opened and started in this order, stopped and closed in reverse: each after
        # what it uses, so what it uses outlives its last job.
        self.capabilities: tuple[Capability, ...] = (
            ServedTiers(self.indexes, self.lead, self.crew_reader),  # all read through them
            self.notes,  # writes through the tier indexes
            # Its stores are open before the embedder loads, so they get vectors too.
            self.learnings,
            # Vectors of the stores above; a batch being embedded is stored before they close.
            self.embeddings,
            # Embeds its events; recalled events' reference records are written at stop.
            self.journal,
            self.facts,  # reads the journal's tiers at open, hears its recorded events
            self.extraction,  # reads the journal, writes learnings, hears ended sessions
            self.lifecycle,  # tends the history of everything above, once it is open
            self.working,  # its sleep pass records summaries in the journal
            self.context,  # the memory block reads all of the above
            self.sessions,  # a start answers the block; an end runs through the above
        )

    def _open_store(self, tier: Tier) -> IndexStore:
        """The tier's index where the settings put it: its SQLite file, or PostgreSQL."""
        location, namespace = self.settings.store_for(tier)
        return open_store(location, namespace, default=tier.index_path, single_writer=True)

    async def _session_events(self, tier: str, session_id: str, limit: int) -> list[Any]:
        """A session's events, oldest first, for its learnings' extraction."""
        return (await self.journal.listing(tier, Filters(session_id=session_id), None, limit))[
            "events"
        ]

    def add_routes(self, app: web.Application) -> None:
        """Each capability registers its own HTTP routes."""
        search_routes.add_routes(app, self.search)
        notes_routes.add_routes(app, self.notes)
        notes_routes.add_browse_routes(app, self.browser)
        journal_routes.add_routes(app, self.journal)
        learnings_routes.add_routes(app, self.learnings)
        facts_routes.add_routes(app, self.facts)
        lifecycle_routes.add_routes(app, self.lifecycle)
        working_routes.add_routes(app, self.working)
        operators_routes.add_routes(app, self.operators)
        context_routes.add_routes(app, self.context)
        sessions_routes.add_routes(app, self.sessions)

    async def start(self) -> None:
        """Open every capability, then start every one."""
        for cap in self.capabilities:
            await cap.open()
        for cap in self.capabilities:
            await cap.start()
        log.info(
            "sidecar started",
            extra={
                "role": self.settings.role,
                "tiers": {n: str(s.tier.root) for n, s in self.indexes.tiers.items()},
                "retrieval": self.embeddings.retrieval(),
                "model": self.embeddings.embedder.model_id if self.embeddings.embedder else None,
            },
        )

    async def stop(self) -> None:
        """Stop every capability (each finishes the jobs it accepted), then close each."""
        for cap in reversed(self.capabilities):
            await cap.stop()
        for cap in reversed(self.capabilities):
            await cap.close()
        log.info("sidecar stopped")

    async def status(self, scope: str) -> dict[str, Any]:
        """One tier's index and vectors; a member asks the lead about the crew tier.
        ``both``: each tier's, under ``tiers``, and their files and chunks added up."""
        if scope == "both":
            tiers = {name: await self.status(name) for name in TIER_NAMES}
            return {"scope": "both", "tiers": tiers,
                    **{key: sum(t.get(key, 0) for t in tiers.values())
                       for key in ("total_files", "total_chunks")}}  # fmt: skip
        if scope == "crew" and self.crew_reader is not None:
            try:
                stats = await self.indexes.read(self.crew_reader.stats)
            except Exception as exc:  # the shared store is out of reach: say so, as search does
                why = self.crew_reader.problem(exc)
                if why is None:
                    raise
                raise ApiError(503, "crew_store_unavailable", f"crew index: {why}") from None
            return {"scope": "crew", "store": describe(self.crew_reader), **stats.to_json()}
        if scope == "crew" and self.lead is not None:
            try:
                return await self.lead.answer("GET", "/memory/status?scope=crew")
            except LeadUnavailable as exc:
                raise unreachable(self.settings.lead_url, exc) from None
        body: dict[str, Any] = {}
        for cap in self.capabilities:
            body.update(await cap.status(scope))
        return body

    async def reindex(self, scope: str) -> dict[str, Any]:
        accepted = self.indexes.reindex(scope)
        await self.journal.rebuild(scope)
        await self.learnings.rebuild(scope)
        return accepted

    async def health(self) -> dict[str, Any]:
        """Overall state with every reason it is degraded; never silent about one."""
        reasons: list[str] = []
        body: dict[str, Any] = {"status": "ok", "role": self.settings.role}
        for cap in self.capabilities:
            part = await cap.health()
            reasons += part.reasons
            body.update(part.fields)
        if reasons:
            body["status"] = "degraded"
            body["reasons"] = reasons
        return body


def _llm(settings: Settings) -> LLMClient | None:
    """The LLM client for consolidation, or None when no server is configured."""
    if not settings.llm_url:
        return None
    key = os.environ.get(settings.llm_api_key_env) if settings.llm_api_key_env else None
    return make_client(
        settings.llm_api, settings.llm_url, settings.llm_model, key, settings.llm_timeout
    )
