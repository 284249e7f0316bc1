"""Search across tiers: each local tier ranked on a search thread, a member's crew half
asked of the lead, and the tiers fused by rank.

One tier's ranking (BM25, vectors or both) is ``ranking.rank_tier``; how BM25 and
vectors combine within a tier is ``fusion``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.capability import Hooks
from sidecar.crew.client import LeadClient, LeadUnavailable, unreachable
from sidecar.disk.tiers import is_note
from sidecar.errors import ApiError
from sidecar.index.indexes import TierIndexes, TierState
from sidecar.index.store import Hit, IndexStore
from sidecar.metrics import timed
from sidecar.retrieval.embeddings import Embeddings
from sidecar.retrieval.modes import DENSE, HYBRID, MODES, SPARSE
from sidecar.retrieval.query import MODE_FALLBACK, MODE_TERMS, PlannedQuery, plan, terms
from sidecar.retrieval.ranking import (
    Pool,
    Result,
    bm25_pool,
    dense_fill_last,
    rank_pool,
    rank_tier,
    rrf_fuse,
)

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors


@dataclass(slots=True)
class SearchResponse:
    results: list[Result]
    query_mode: str
    query_terms: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)  # what could not be searched, and why
    mode: str = SPARSE  # the retrieval that ran: hybrid, sparse or dense

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "results": [r.to_json(self.query_terms) for r in self.results],
            "count": len(self.results),
            "query_mode": self.query_mode,
            "mode": self.mode,
        }
        if self.degraded:
            body["degraded"] = self.degraded
        return body


class Search:
    def __init__(
        self,
        indexes: TierIndexes,
        embeddings: Embeddings,
        lead: LeadClient | None,
        crew_reader: IndexStore | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.indexes = indexes
        self.hooks = hooks or Hooks()  # fires session_seen
        self.embeddings = embeddings
        self.lead = lead
        # A member whose crew index is in PostgreSQL searches it here (BM25, read-only)
        # instead of asking the lead.
        self.crew_reader = crew_reader
        # A tier's archive index (kept by ``lifecycle``), searched when a request asks.
        self.archives: Callable[[str], IndexStore | None] = lambda tier: None

    @timed("search")
    async def search(
        self,
        query: str,
        scope: str,
        limit: int,
        mode: str | None = None,
        archive: bool = False,
        session_id: str | None = None,
    ) -> SearchResponse:
        """Each tier ranked by BM25, dense vectors or both; tiers fused by rank; a member
        asks the lead for the crew tier. ``archive``: each local tier's archive too, by
        BM25, fused with the tier's own hits by rank. ``session_id``: the session searching,
        which is not idle."""
        self.hooks.tell_seen(session_id)
        elsewhere = self.lead is not None or self.crew_reader is not None
        states = self.indexes.for_scope(scope, lead_has_crew=elsewhere)
        asked = mode
        mode = self._mode(asked, local=bool(states))
        planned = plan(query)
        if planned is None and mode != DENSE:
            raise ApiError(400, "empty_query", "the query has no searchable words")
        degraded: list[str] = []
        query_vector: Vectors | None = None
        found: list[Any] = [None] * len(states)  # each tier's BM25 pool, when read early
        if states:
            embedding = asyncio.ensure_future(self.embeddings.query_vector(query, mode))
            vectors = self.embeddings.vectors
            if mode == HYBRID and planned is not None and vectors is not None:
                # BM25 and the pool's stored vectors are read while the query embeds
                model = vectors.embedder.model_id
                found = await asyncio.gather(
                    *(self.indexes.read(bm25_pool, st.store, planned, limit, model)
                      for st in states),
                    return_exceptions=True,
                )  # fmt: skip
            query_vector, why_not = await embedding
            if why_not is not None:
                degraded.append(why_not)
                mode = SPARSE
        searches = [
            self._search_tier(st, planned, limit, mode, query_vector, early)
            for st, early in zip(states, found, strict=True)
        ]
        names = [s.tier.name for s in states]
        if len(names) < (2 if scope == "both" else 1):  # the crew tier is the lead's
            if self.crew_reader is not None:
                searches.append(self.indexes.read(
                    rank_tier, self.crew_reader, "crew", planned, limit, SPARSE))  # fmt: skip
            else:
                searches.append(self._search_lead(query, limit, asked, archive))
            names.append("crew")
        outcomes = await asyncio.gather(*searches, return_exceptions=True)
        ranked: dict[str, list[Result]] = {}
        modes: set[str] = set()
        rebuilding: ApiError | None = None  # a tier left out while its index is rebuilt
        for name, outcome in zip(names, outcomes, strict=True):
            if name == "crew" and self.crew_reader is not None and isinstance(outcome, Exception):
                why = self.crew_reader.problem(outcome) or f"{type(outcome).__name__}: {outcome}"
                if scope == "crew":
                    raise ApiError(503, "crew_store_unavailable", f"crew index: {why}")
                degraded.append(f"crew: {why}")
                continue
            if isinstance(outcome, LeadUnavailable):
                if scope == "crew":
                    raise unreachable(self.lead.url if self.lead else None, outcome)
                degraded.append("crew: lead unreachable")
                continue
            if (
                isinstance(outcome, ApiError)
                and scope == "both"
                and (name == "crew" or outcome.error == "index_rebuilding")
            ):
                # The lead refused its half (say dense without an embedder), or one tier
                # is being rebuilt: answer from the other.
                degraded.append(f"{name}: {outcome.error}: {outcome.detail}")
                if outcome.error == "index_rebuilding":
                    rebuilding = rebuilding or outcome
                continue
            if isinstance(outcome, BaseException):
                raise outcome
            if isinstance(outcome, SearchResponse):  # the lead's answer for the crew tier
                ranked[name] = outcome.results
                modes.add(outcome.query_mode)
                degraded += outcome.degraded
                if scope == "crew":
                    mode = outcome.mode
                continue
            ranked[name], query_mode = outcome
            modes.add(query_mode)
        if rebuilding is not None and not ranked:  # nothing was searched: say when to retry
            raise rebuilding
        query_mode = (
            MODE_FALLBACK if MODE_FALLBACK in modes else planned.mode if planned else MODE_TERMS
        )
        for name, hits in ranked.items():  # rows an older version indexed, until reconciled
            ranked[name] = [r for r in hits if is_note(r.hit.path)]
        if archive and planned is not None:
            for st in states:
                ranked[st.tier.name] = await self._with_archive(
                    st.tier.name, ranked, planned, limit, degraded
                )
        if scope == "both":
            everything = sum(len(r) for r in ranked.values())
            results = dense_fill_last(rrf_fuse(ranked, everything))[:limit]
        else:
            results = ranked[scope]
        return SearchResponse(results, query_mode, terms(query), degraded, mode)

    def _mode(self, asked: str | None, local: bool) -> str:
        """The retrieval to run: as asked, or hybrid by default when vectors exist.

        ``local``: some tier is searched here (not only the lead's crew tier, which
        the lead ranks with its own embedder)."""
        vectors = self.embeddings.vectors
        if asked is None:
            return HYBRID if vectors is not None else SPARSE
        if asked not in MODES:
            raise ApiError(400, "bad_mode", f"'mode' must be one of {', '.join(MODES)}")
        if asked == DENSE and vectors is None and local:
            why = self.embeddings.embedder_error or "started with --embedder none"
            raise ApiError(
                503, "dense_unavailable", "no embedder is loaded, so there is no dense index: "
                f"{why}; use mode=sparse",
            )  # fmt: skip
        return asked

    async def _search_tier(
        self, state: TierState, planned: PlannedQuery | None, limit: int, mode: str,
        query_vector: Vectors | None, early: Any = None,
    ) -> tuple[list[Result], str]:  # fmt: skip
        """``early``: this tier's BM25 pool, already read while the query embedded (an
        error there is met again, and handled, by running the whole ranking now). When it
        holds enough hits, what is left (a few dot products) runs here, sparing a round
        trip through a search thread."""
        name = state.tier.name
        self.indexes.raise_if_broken(name)  # a tier being rebuilt answers 503 at once
        vectors = self.embeddings.vectors
        tier_vectors = vectors.tiers[name] if vectors else None
        pool = early if isinstance(early, Pool) and mode == HYBRID else None
        try:
            if pool is not None and query_vector is not None and tier_vectors is not None:
                ranked = rank_pool(name, pool, query_vector, limit, planned)
                if ranked is not None:
                    return ranked, pool.query_mode
            return await self.indexes.read(
                rank_tier, state.store, name, planned, limit, mode, query_vector, tier_vectors,
                pool,
            )  # fmt: skip
        except Exception as exc:
            await self.indexes.check(name, exc)  # 503 if the index turned out to be broken
            raise

    async def _with_archive(
        self, name: str, ranked: dict[str, list[Result]], planned: PlannedQuery, limit: int,
        degraded: list[str],
    ) -> list[Result]:  # fmt: skip
        """A tier's hits and its archive's, fused by rank; the tier's alone, saying why,
        when its archive cannot be searched."""
        active = ranked.get(name, [])
        store = self.archives(name)
        if store is None:
            degraded.append(f"{name}: archive: not searchable (GET /memory/status, lifecycle)")
            return active
        try:
            archived, _ = await self.indexes.read(rank_tier, store, name, planned, limit, SPARSE)
        except Exception as exc:
            degraded.append(f"{name}: archive: {type(exc).__name__}: {exc}")
            return active
        return rrf_fuse({name: active, f"{name}:archive": archived}, limit)

    async def _search_lead(
        self, query: str, limit: int, mode: str | None, archive: bool
    ) -> SearchResponse:
        """The crew half of a member's search, answered by the lead's sidecar."""
        assert self.lead is not None
        request: dict[str, Any] = {"query": query, "scope": "crew", "limit": limit}
        if archive:
            request["archive"] = True
        if mode is not None:
            request["mode"] = mode
        body = await self.lead.answer("POST", "/memory/search", request)
        results = []
        for r in body["results"]:
            hit = Hit(r["file"], r["start_line"], r["end_line"], r["heading"], r["snippet"],
                      r["score"])  # fmt: skip
            results.append(Result("crew", hit, r["score"], rendered=r, ranks=r.get("ranks")))
        degraded = [f"crew: {d}" for d in body.get("degraded", [])]
        return SearchResponse(results, body["query_mode"], [], degraded, body.get("mode", SPARSE))
