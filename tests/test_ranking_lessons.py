"""Lessons: what answers the task is decided by the words it holds, then prominence orders.

Real learnings files, a real index and server; entries dated in the past.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from aiohttp.test_utils import TestClient

from sidecar.config import Settings
from sidecar.learnings.ranking import fit
from sidecar.service import MemoryService


def block(key: str, importance: float, count: int, days: int, text: str, status: str = "active"
          ) -> str:  # fmt: skip
    when = (date.today() - timedelta(days=days)).isoformat()
    return (f"---\nid: {key}\nimportance: {importance}\nreinforcement_count: {count}\n"
            f"last_reinforced: '{when}'\nstatus: {status}\n---\n{text}\n")  # fmt: skip


async def ranked(client: TestClient, service: MemoryService, settings: Settings,
                 blocks: list[str], query: str) -> list[dict[str, Any]]:  # fmt: skip
    path = settings.agent_dir / "learnings" / "topic.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(blocks))
    await service.learnings.sync("agent")
    resp = await client.post("/memory/learnings/search", json={"query": query, "limit": 5})
    body = await resp.json()
    assert resp.status == 200, body
    return list(body["hits"])


def test_fit_counts_each_query_word_once() -> None:
    query = "rotate the vault token"
    assert fit(query, "Token token token: the vault token again.") == 2 / 3
    assert fit(query, "Rotate the vault token with `vault token rotate`.") == 1.0
    assert fit("", "anything") == 0.0


async def test_the_prominent_lesson_comes_first_over_a_wordier_weak_entry(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    hits = await ranked(client, service, settings, [
        # A one-off note repeating the query's words: BM25 likes it best.
        block("weak", 0.2, 0, 200, "Staging deploy, staging deploy: slow staging deploy."),
        block("proven", 0.9, 8, 3, "Bring the VPN up first, with `vpn up` from the laptop, "
              "then run make release: the staging cluster refuses every deploy over the "
              "public network with a TLS handshake error that looks like a certificate bug."),
        block("retired", 1.0, 9, 1, "Staging deploy: always deploy from the release branch.",
              "retired"),
    ], "staging deploy")  # fmt: skip
    by_relevance = sorted(hits, key=lambda h: -h["relevance"])
    # Relevance alone puts the weak note first, by more than half: it used to lead.
    assert by_relevance[0]["id"] == "weak" and by_relevance[1]["relevance"] < 0.5
    assert [h["id"] for h in hits] == ["proven", "weak"]  # retired never shown


async def test_an_exact_low_importance_answer_beats_a_prominent_loose_one(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    hits = await ranked(client, service, settings, [
        block("prominent", 0.9, 10, 2, "Orders database migrations need a lock timeout."),
        block("exact", 0.2, 0, 120, "To rotate the orders database password, run "
              "`vault rotate orders-db` and restart the workers."),
    ], "rotate the orders database password")  # fmt: skip
    assert [h["id"] for h in hits] == ["exact", "prominent"]
