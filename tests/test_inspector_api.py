"""The routes the inspector's new users missed (issue 35): every learning listed in an
order without a query, and one journal event by id with its relations both ways, on a
memory laid down in the past (dated learnings, day files with their relation lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from sidecar.journal.events import uuid7
from sidecar.learnings.ranking import MAX_LIST
from tests.test_ui_browser import ago

LEARNED = [  # id, reinforcement count, last reinforced (days back), status, text
    ("l-old-often", 9, 200, "active", "Pin the base image digest in every Dockerfile."),
    ("l-new-once", 1, 2, "active", "Run the linters before asking for review."),
    ("l-mid", 4, 30, "active", "Check the changelog before bumping a dependency."),
    ("l-retired", 12, 10, "retired", "Deploy on Fridays only with the lead's consent."),
]
EPISODE, CONSOLIDATION, OTHER = str(uuid7()), str(uuid7()), str(uuid7())


def entry(id_: str, count: int, days: int, status: str, text: str) -> str:
    day = ago(days)[:10]
    return (f"---\nid: {id_}\ntype: procedural\ndomain: task\nimportance: 0.5\n"
            f"reinforcement_count: {count}\nlast_reinforced: '{day}'\nstatus: {status}\n"
            f"created: '{ago(300)[:10]}'\n---\n{text}\n\n")  # fmt: skip


def event(id_: str, days: float, type_: str, summary: str) -> dict[str, Any]:
    return {"id": id_, "ts": ago(days), "recorded_at": ago(days), "type": type_,
            "severity": "info", "summary": summary, "payload": {}, "session_id": "s-old",
            "source": "agent", "agent_id": "vm"}  # fmt: skip


@pytest.fixture
def seeded(tier_dirs: tuple[Path, Path]) -> None:
    """Learnings and a journal with relations, written before the daemon starts."""
    agent, _ = tier_dirs
    (agent / "learnings").mkdir()
    broken = "---\nid: l-broken\nreinforcement_count: lots\n---\nRotate the CI token.\n"
    (agent / "learnings/work.md").write_text("".join(entry(*e) for e in LEARNED) + broken)
    (agent / "journal").mkdir()
    day = ago(20)[:10]
    lines = [
        event(EPISODE, 20, "operator.said", "Operator: status reports as prose, please."),
        event(OTHER, 20, "deploy.failed", "The api deploy failed on a missing secret."),
        event(CONSOLIDATION, 19.9, "memory.consolidated", "Consolidated the operator's words."),
        {"kind": "relation", "src": CONSOLIDATION, "dst": EPISODE, "relation": "supports",
         "weight": 1.0, "at": ago(19.9)},
        {"kind": "relation", "src": EPISODE, "dst": OTHER, "relation": "contradicts",
         "weight": 0.5, "at": ago(19.9)},
    ]  # fmt: skip
    (agent / f"journal/{day}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


async def get(client: TestClient, path: str, expect: int = 200, **params: Any) -> Any:
    resp = await client.get(path, params=params)
    body = await resp.json()
    assert resp.status == expect, body
    return body


async def test_learnings_are_listed_in_each_order_without_a_query(
    seeded: None, client: TestClient
) -> None:
    by_count = await get(client, "/memory/learnings", order="reinforced", scope="agent")
    ids = ["l-old-often", "l-mid", "l-new-once", "l-broken"]
    assert [e["id"] for e in by_count["learnings"]] == ids
    assert by_count["total"] == 4  # active only, by default
    broken = by_count["learnings"][-1]  # a count that is no number: read as 0, listed
    assert (broken["reinforcement_count"], broken["text"]) == (0, "Rotate the CI token.")
    top = by_count["learnings"][0]
    assert top["text"] == LEARNED[0][4] and top["reinforcement_count"] == 9
    # prominence = importance x decay x (1 + count), the decay from 200 days back
    assert top["prominence"] == pytest.approx(0.5 * top["decay"] * 10, abs=1e-5)
    assert top["decay"] == pytest.approx(2 ** (-200 / 90), abs=1e-5)
    recent = await get(client, "/memory/learnings", order="recent", scope="agent")
    assert [e["id"] for e in recent["learnings"][:3]] == ["l-new-once", "l-mid", "l-old-often"]
    prominent = await get(client, "/memory/learnings", scope="agent")
    assert [e["id"] for e in prominent["learnings"][:3]] == ["l-mid", "l-old-often", "l-new-once"]
    every = await get(client, "/memory/learnings", order="reinforced", status="any", limit=2)
    assert [e["id"] for e in every["learnings"]] == ["l-retired", "l-old-often"]
    assert every["total"] == 5 and every["learnings"][0]["prominence"] == 0
    assert every["learnings"][0]["text"] == LEARNED[3][4]  # read from its file: not indexed


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"order": "loudest"}, "bad_order"),
        ({"limit": "0"}, "bad_limit"),
        ({"limit": str(MAX_LIST + 1)}, "bad_limit"),
        ({"limit": "ten"}, "bad_limit"),
        ({"status": "gone"}, "bad_status"),
        ({"scope": "everyone"}, "bad_scope"),
        ({"query": "deploy"}, "unknown_parameter"),
    ],
)
async def test_a_bad_listing_is_a_400_naming_the_parameter(
    client: TestClient, params: dict[str, str], code: str
) -> None:
    body = await get(client, "/memory/learnings", 400, **params)
    assert body["error"] == code and body["detail"]


async def test_an_event_is_looked_up_with_its_relations_both_ways(
    seeded: None, client: TestClient
) -> None:
    body = await get(client, f"/memory/journal/{EPISODE}", scope="agent")
    assert (body["id"], body["type"], body["scope"]) == (EPISODE, "operator.said", "agent")
    links = {(r["relation"], r["direction"], r["other"]["id"]): r for r in body["relations"]}
    assert set(links) == {("contradicts", "out", OTHER), ("supports", "in", CONSOLIDATION)}
    supports = links[("supports", "in", CONSOLIDATION)]["other"]
    assert supports["type"] == "memory.consolidated" and supports["ts"].startswith(ago(19.9)[:10])
    back = await get(client, f"/memory/journal/{CONSOLIDATION}")
    assert [(r["relation"], r["direction"], r["other"]["id"]) for r in back["relations"]] == [
        ("supports", "out", EPISODE)
    ]
    alone = await client.post("/memory/journal", json={"type": "note.x", "summary": "alone"})
    new = (await alone.json())["ids"][0]
    assert (await get(client, f"/memory/journal/{new}"))["relations"] == []


async def test_an_unknown_event_or_bad_scope_is_a_json_error(client: TestClient) -> None:
    body = await get(client, "/memory/journal/no-such-event", 404)
    assert body["error"] == "unknown_event" and "no-such-event" in body["detail"]
    body = await get(client, f"/memory/journal/{EPISODE}", 400, scope="both")
    assert body["error"] == "bad_scope"
    body = await get(client, f"/memory/journal/{EPISODE}", 400, k="3")
    assert body["error"] == "unknown_parameter"
