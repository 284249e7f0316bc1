"""Hybrid search's BM25 pool and its stored vectors are read while the query embeds; once
the query has its vector, a pool that holds enough hits is ranked on the event loop with
no second trip through a search thread, and ranks exactly as the search thread would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.config import Settings
from sidecar.retrieval.modes import HYBRID
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import rank_tier
from sidecar.service import MemoryService
from tests.test_hybrid import hybrid_settings, started, stub  # noqa: F401 - fixtures

pytestmark = pytest.mark.usefixtures("stub")


@pytest.fixture
async def walruses(hybrid_settings: Settings) -> AsyncIterator[MemoryService]:  # noqa: F811
    """Fourteen daily logs, dated in the past, that all mention walruses."""
    root = Path(hybrid_settings.agent_dir)
    (root / "daily").mkdir(parents=True, exist_ok=True)
    for day in range(1, 15):
        (root / "daily" / f"2025-11-{day:02d}.md").write_text(
            f"# 2025-11-{day:02d}\n- walrus count {day} at the harbour\n"
            + "- the walrus pups were weighed\n" * (day % 3)
        )
    svc = await started(hybrid_settings)
    try:
        yield svc
    finally:
        await svc.stop()


def spy_on_search_threads(svc: MemoryService) -> list[str]:
    """The names of the functions each search-thread job of ``svc`` runs, in order."""
    jobs: list[str] = []
    read = svc.indexes.read

    async def recording(fn: Any, *args: Any) -> Any:
        jobs.append(fn.__name__)
        return await read(fn, *args)

    svc.indexes.read = recording  # type: ignore[method-assign]
    return jobs


async def test_a_full_pool_is_ranked_without_a_second_search_thread_job(
    walruses: MemoryService,
) -> None:
    jobs = spy_on_search_threads(walruses)
    found = await walruses.search.search("walrus harbour", "agent", 10, HYBRID)
    assert found.mode == HYBRID
    assert jobs == ["bm25_pool"]
    assert len(found.results) == 10
    # The same ranking the search thread gives when it reads the pool and vectors itself.
    vectors = walruses.embeddings.vectors
    assert vectors is not None
    query_vector = vectors.embed_query("walrus harbour")
    store = walruses.indexes.tiers["agent"].store
    planned = plan("walrus harbour")
    alone, _ = rank_tier(store, "agent", planned, 10, HYBRID, query_vector, vectors.tiers["agent"])
    assert [(r.hit.path, r.score, r.ranks) for r in found.results] == [
        (r.hit.path, r.score, r.ranks) for r in alone
    ]
    assert all(set(r.ranks or {}) == {"sparse", "dense"} for r in found.results)


async def test_a_short_pool_goes_back_to_a_search_thread_for_the_dense_fill(
    walruses: MemoryService,
) -> None:
    jobs = spy_on_search_threads(walruses)
    found = await walruses.search.search("pups weighed", "agent", 20, HYBRID)
    assert found.mode == HYBRID
    assert jobs == ["bm25_pool", "rank_tier"]  # BM25 finds 10 of 20: the dense leg fills
    legs = [set(r.ranks or {}) for r in found.results]
    assert len(legs) >= 10
    assert all(leg == {"sparse", "dense"} for leg in legs[:10])
    assert all(leg == {"dense"} for leg in legs[10:])  # fills, below every BM25 hit
