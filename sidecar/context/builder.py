"""Gathers what the memory block holds: both tiers' core and daily files, the
operator's notes on this user, and search hits for the task at hand.

Crew files are read straight from the shared folder on any role; search hits
come from the same search every other caller uses, so a member's crew hits are
the lead's. ``block.assemble`` then fits it all into the budget.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from sidecar.capability import Capability
from sidecar.config import Settings
from sidecar.context import block, sources
from sidecar.errors import ApiError
from sidecar.facts.facts import Facts
from sidecar.journal.index import Filters
from sidecar.journal.journal import Journal
from sidecar.journal.recall import RecallQuery
from sidecar.learnings.learnings import Learnings, SearchQuery
from sidecar.metrics import timed
from sidecar.notes.files import today_utc
from sidecar.operators.identity import check_id
from sidecar.ops import check_length
from sidecar.retrieval.search import Search

RECALLED_K = 5
LEARNED_K = 8


class ContextBuilder(Capability):
    def __init__(
        self,
        settings: Settings,
        search: Search,
        journal: Journal,
        learnings: Learnings,
        facts: Facts,
        has_crew: bool,
    ) -> None:
        self.settings = settings
        self.search = search
        self.journal = journal
        self.learnings = learnings
        self.facts = facts
        self.has_crew = has_crew  # served here (the lead) or by the lead (a member)
        self._files = ThreadPoolExecutor(1, thread_name_prefix="sidecar-context")

    async def close(self) -> None:
        self._files.shutdown()

    @timed("context")
    async def build(
        self,
        budget: int = block.DEFAULT_BUDGET,
        query: str | None = None,
        user_id: str | None = None,
        workspace_id: str | None = None,
        session_id: str = "default",
    ) -> block.MemoryBlock:
        """The prompt-ready memory block; crew files come from the shared folder."""
        if not block.MIN_BUDGET <= budget <= block.MAX_BUDGET:
            raise ApiError(400, "bad_budget", f"'budget' must be from {block.MIN_BUDGET} to "
                           f"{block.MAX_BUDGET} characters")  # fmt: skip
        if query is not None:
            check_length(query)
        if user_id and workspace_id is None:  # else the operator's model is silently left out
            raise ApiError(400, "bad_workspace_id", "'user_id' needs 'workspace_id': the "
                           "operator model is kept per user and workspace")  # fmt: skip
        for name, value in (("user_id", user_id), ("workspace_id", workspace_id)):
            if value is not None:
                check_id(name, value)  # else two identities could share one model
        today = today_utc()
        agent_dir, crew_dir = self.settings.agent_dir, self.settings.crew_dir

        def load() -> tuple[list[block.Section], ...]:
            return (
                sources.agent_sections(agent_dir, today),
                sources.crew_sections(crew_dir, today),
                sources.operator_sections(crew_dir, user_id, workspace_id),
            )

        loop = asyncio.get_running_loop()
        agent, crew, operator = await loop.run_in_executor(self._files, load)
        hits: list[block.Section] = []
        recalled: list[block.Recalled] = []
        standing = await self.learnings.institutional()
        learned: list[block.Section] = []
        if query:
            recalled = await self._recall(query)
            learned = await self._learned(query, {e["id"] for e in standing}, session_id)
            scope = "both" if self.has_crew else "agent"
            try:
                results = (await self.search.search(query, scope, 20)).results
            except ApiError as exc:
                if exc.error != "index_rebuilding":
                    raise
                results = []  # the files themselves still make a block
            shown = {("agent", s.label) for s in agent} | {("crew", s.label) for s in crew}
            hits = [
                block.Section(
                    f"{r.source}:{r.hit.path}",
                    f"{r.source}/{r.hit.path} lines {r.hit.start_line}-{r.hit.end_line}",
                    r.hit.text,
                )
                for r in results
                if (r.source, r.hit.path) not in shown
            ]
        nudge = await self.journal.nudge(session_id)
        known = await self.facts.for_block(query)
        facts = [block.Section("facts", "what is known (facts distilled from past events)",
                               "\n".join(known))] if known else []  # fmt: skip
        return block.assemble(
            agent, crew, operator, hits, budget, recalled, nudge,
            [sources.learning_section(e) for e in standing], learned, facts,
        )  # fmt: skip

    async def _learned(
        self, query: str, standing: set[str], session_id: str
    ) -> list[block.Section]:
        """The learnings that bear on the task (a use of each, for the named session)."""
        q = SearchQuery(query, self.learnings.default_scope(), LEARNED_K,
                        session_id=None if session_id == "default" else session_id)  # fmt: skip
        try:
            answer = await self.learnings.search(q)
        except ApiError:
            return []  # the block still builds without them
        return [sources.learning_section(h) for h in answer["hits"] if h["id"] not in standing]

    async def _recall(self, query: str) -> list[block.Recalled]:
        """Past events that bear on the task; the block still builds if the journal cannot."""
        scope = "both" if self.has_crew else "agent"
        try:
            answer = await self.journal.recall(
                RecallQuery(query, RECALLED_K, Filters()), scope, True
            )
        except ApiError:
            return []
        return [
            block.Recalled(
                h["id"],
                h["ts"][:10],
                h["type"],
                h["severity"],
                h.get("tier", "agent"),
                h["summary"],
            )
            for h in answer["hits"]
        ]
