"""Facts distilled from the journal, through the HTTP API, against a stand-in LLM server
that speaks Ollama's and OpenAI's wire formats (no model can run here)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.facts import log as facts_log
from sidecar.facts.consolidation import plan
from sidecar.facts.index import Fact
from sidecar.journal.events import utc_seconds
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.llm_stub import EPISODES, LLMStub, Step

ALL = [EPISODES]
EPISODIC = {"episodic": True}  # a type the embedding policy leaves out, tagged episodic


def when(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat().replace("+00:00", "Z")


def item(action: str, category: str, fact: str, keywords: list[str], existing: str | None = None,
         episodes: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    return {"action": action, "existing_fact_id": existing, "category": category, "fact": fact,
            "keywords": keywords, "episode_ids": episodes or ALL}  # fmt: skip


@pytest.fixture(params=["ollama", "openai"])
async def stub(request: pytest.FixtureRequest) -> AsyncIterator[tuple[LLMStub, str]]:
    server = await LLMStub().start()
    try:
        yield server, request.param
    finally:
        await server.stop()


async def _served(
    settings: Settings, stub: tuple[LLMStub, str], worker: bool
) -> AsyncIterator[tuple[TestClient, LLMStub, MemoryService]]:
    server, api = stub
    url = server.url + ("/v1" if api == "openai" else "")
    configured = dataclasses.replace(settings, llm_url=url, llm_model="stub-3b", llm_api=api)
    svc = MemoryService(configured)
    await svc.start()
    if not worker:  # jobs run only when a test asks (POST /memory/consolidate)
        await svc.facts.stop()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            yield c, server, svc
    finally:
        await svc.stop()


@pytest.fixture
async def llm_client(
    settings: Settings, stub: tuple[LLMStub, str]
) -> AsyncIterator[tuple[TestClient, LLMStub, MemoryService]]:
    async for served in _served(settings, stub, worker=False):
        yield served


@pytest.fixture
async def auto_client(
    settings: Settings, stub: tuple[LLMStub, str]
) -> AsyncIterator[tuple[TestClient, LLMStub, MemoryService]]:
    async for served in _served(settings, stub, worker=True):
        yield served


async def record(client: TestClient, *summaries: str, days_ago: float = 0.0) -> list[str]:
    events = [{"type": "user.said", "summary": s, "ts": when(days_ago), "refs": EPISODIC}
              for s in summaries]  # fmt: skip
    resp = await client.post("/memory/journal", json={"events": events})
    assert resp.status == 201, await resp.json()
    return list((await resp.json())["ids"])


async def consolidate(client: TestClient, status: int = 200) -> dict[str, Any]:
    resp = await client.post("/memory/consolidate", json={"scope": "agent"})
    body = await resp.json()
    assert resp.status == status, body
    return dict(body)


async def facts(client: TestClient, query: str, **extra: Any) -> list[dict[str, Any]]:
    resp = await client.post("/memory/facts", json={"query": query, **extra})
    body = await resp.json()
    assert resp.status == 200, body
    return list(body["facts"])


async def test_episodes_become_facts_with_their_sources(llm_client: Any) -> None:
    client, stub, svc = llm_client
    ids = await record(client, "I just moved to Osaka for work", "Osaka is great for ramen",
                       "My new office is near Osaka station")  # fmt: skip
    stub.script({"facts": [item("new", "identity", "The user lives in Osaka.", ["Osaka"])]})
    job = (await consolidate(client))["jobs"]["agent"][0]
    assert job["actions"]["new"] == 1 and job["episodes"] == 3
    assert job["prompt_tokens"] > 0 and job["answer_tokens"] > 0
    (fact,) = await facts(client, "where does the user live")
    assert fact["fact"] == "The user lives in Osaka." and fact["category"] == "identity"
    assert sorted(fact["source_episode_ids"]) == sorted(ids) and fact["invalid_at"] is None
    request = stub.requests[-1]
    schema = request["format"] if "format" in request else request["response_format"]
    assert schema  # the answer's JSON schema went with the request, in the API's own field
    md = (svc.settings.agent_dir / facts_log.FACTS_MD).read_text()
    assert "The user lives in Osaka." in md


async def test_a_move_updates_the_fact_and_the_old_one_knows_when_it_stopped(
    llm_client: Any,
) -> None:
    client, stub, _ = llm_client
    await record(client, "I live in Osaka", "Osaka winters are mild", "Work in Osaka", days_ago=30)
    stub.script({"facts": [item("new", "identity", "The user lives in Osaka.", ["Osaka"])]})
    await consolidate(client)
    moved = await record(client, "We moved to Tokyo last week", "Tokyo flat is small",
                         "Commute in Tokyo is long", days_ago=2)  # fmt: skip
    stub.script({"facts": [item("update", "identity", "The user lives in Tokyo.", ["Tokyo"],
                                existing="{id:Osaka}", episodes=moved[:1])]})  # fmt: skip
    job = (await consolidate(client))["jobs"]["agent"][0]
    assert job["actions"]["update"] == 1
    (now,) = await facts(client, "where does the user live")
    assert now["fact"] == "The user lives in Tokyo."
    history = await (await client.get(f"/memory/facts/{now['id']}/history")).json()
    old, new = history["versions"]
    assert old["fact"] == "The user lives in Osaka." and old["replaced_by"] == new["id"]
    assert old["invalid_at"] == new["valid_at"]  # when the move happened, not when the job ran
    assert abs(utc_seconds(old["invalid_at"]) - utc_seconds(when(2))) < 60
    before = await facts(client, "where does the user live", as_of=when(10))
    assert [f["fact"] for f in before] == ["The user lives in Osaka."]


async def test_a_fact_restated_three_ways_is_one_fact(llm_client: Any) -> None:
    client, stub, _ = llm_client
    await record(client, "I prefer tea", "Tea over coffee for me", "I drink tea every morning")
    stub.script({"facts": [
        item("new", "preference", "The user prefers tea to coffee.", ["tea", "coffee"]),
        item("new", "preference", "The user prefers tea to coffee", ["tea"]),
    ]})  # fmt: skip
    await consolidate(client)
    await record(client, "Tea again today", "Green tea is my favourite", "No coffee please")
    stub.script({"facts": [
        item("new", "preference", "The User prefers tea to coffee.", ["tea", "coffee"]),
    ]})  # fmt: skip
    job = (await consolidate(client))["jobs"]["agent"][0]
    assert job["actions"]["new"] == 0 and job["actions"]["reinforce"] == 1
    (tea,) = await facts(client, "tea coffee")
    assert tea["sources"] == 6


async def test_invented_ids_never_touch_unrelated_facts(llm_client: Any) -> None:
    client, stub, _ = llm_client
    await record(client, "My dog is called Miso", "I run every morning", "I work as a nurse")
    stub.script({"facts": [
        item("new", "identity", "The user has a dog called Miso.", ["dog", "Miso"]),
        item("new", "interest", "The user runs every morning.", ["running"]),
        item("new", "identity", "The user works as a nurse.", ["nurse"]),
    ]})  # fmt: skip
    await consolidate(client)
    await record(client, "Started a new job", "It is at the hospital", "Night shifts now")
    stub.script({"facts": [
        item("invalidate", "identity", "The user has a cat.", ["cat"], existing="made-up-id"),
        item("update", "experience", "The user works night shifts.", ["night"],
             existing="another-made-up-id"),
    ]})  # fmt: skip
    job = (await consolidate(client))["jobs"]["agent"][0]
    assert job["actions"] == {"new": 1, "reinforce": 0, "update": 0, "invalidate": 0}
    assert any("made-up-id" in n for n in job["notes"])
    active = {f["fact"] for f in await facts(client, "dog Miso running nurse night shifts")}
    assert active == {"The user has a dog called Miso.", "The user runs every morning.",
                      "The user works as a nurse.", "The user works night shifts."}  # fmt: skip


async def test_an_invalidation_hits_only_its_fact(llm_client: Any) -> None:
    client, stub, _ = llm_client
    await record(client, "I am vegetarian", "I like spicy food", "No meat for me")
    stub.script({"facts": [
        item("new", "preference", "The user is vegetarian.", ["vegetarian"]),
        item("new", "preference", "The user likes spicy food.", ["spicy"]),
    ]})  # fmt: skip
    await consolidate(client)
    await record(client, "I eat fish again now", "Had salmon", "Not vegetarian any more")
    stub.script({"facts": [
        item("invalidate", "preference", "The user is vegetarian.", ["vegetarian"],
             existing="{id:vegetarian}"),
        item("new", "preference", "The user eats fish.", ["fish"]),
    ]})  # fmt: skip
    await consolidate(client)
    active = {f["fact"] for f in await facts(client, "vegetarian spicy fish food")}
    assert active == {"The user likes spicy food.", "The user eats fish."}


async def test_a_bad_answer_is_asked_again_then_nothing_is_applied(llm_client: Any) -> None:
    client, stub, _ = llm_client
    await record(client, "I like jazz", "Jazz concert tonight", "Saxophone lessons")
    stub.script(
        "not json at all",
        {"facts": [item("new", "hobby", "The user likes jazz.", ["jazz"])]},  # bad category
    )
    body = await consolidate(client, 502)
    assert body["error"] == "llm_failed" and "category" in body["detail"]
    assert await facts(client, "jazz") == []
    assert (await (await client.get("/memory/status?scope=agent")).json())["facts"][
        "pending_episodes"
    ] == 3
    stub.script("{broken", {"facts": [item("new", "interest", "The user likes jazz.", ["jazz"])]})
    job = (await consolidate(client))["jobs"]["agent"][0]
    assert job["actions"]["new"] == 1
    assert [f["fact"] for f in await facts(client, "jazz")] == ["The user likes jazz."]


async def test_a_timeout_or_a_refusal_applies_nothing(llm_client: Any) -> None:
    client, stub, svc = llm_client
    svc.facts.llm.timeout = 0.2
    await record(client, "Call me Sam", "Sam here", "It's Sam")
    stub.script(Step(stall=1.0))
    assert "did not answer" in (await consolidate(client, 502))["detail"]
    stub.script(Step(status=503))
    assert "503" in (await consolidate(client, 502))["detail"]
    if stub.requests[-1].get("response_format"):
        stub.script(Step(refusal="I can't help with that"))
        assert "refused" in (await consolidate(client, 502))["detail"]
    assert await facts(client, "Sam") == []
    health = await (await client.get("/healthz")).json()
    assert health["consolidation"]["state"] in ("on", "failing")


async def test_the_worker_consolidates_three_episodes_by_itself(auto_client: Any) -> None:
    client, stub, _ = auto_client
    stub.default = lambda prompt: {
        "facts": [item("new", "goal", "The user is training for a marathon.", ["marathon"])]
    }
    await record(client, "Signed up for a marathon", "Long run on Sunday", "Bought running shoes")

    async def distilled() -> bool:
        return bool(await facts(client, "marathon"))

    await eventually(distilled, "the worker to consolidate three new episodes")


async def test_an_operator_invalidates_a_wrong_fact(llm_client: Any) -> None:
    client, stub, _ = llm_client
    await record(client, "a", "b", "c")
    stub.script({"facts": [item("new", "identity", "The user is 19 years old.", ["age"])]})
    await consolidate(client)
    (wrong,) = await facts(client, "age years old")
    resp = await client.post(f"/memory/facts/{wrong['id']}/invalidate", json={"reason": "typo"})
    assert resp.status == 200 and (await resp.json())["reason"] == "operator: typo"
    assert await facts(client, "age years old") == []
    again = await client.post(f"/memory/facts/{wrong['id']}/invalidate", json={})
    assert again.status == 409
    missing = await client.post("/memory/facts/nope/invalidate", json={})
    assert missing.status == 404 and (await missing.json())["error"] == "unknown_fact"


async def test_the_log_rebuilds_every_fact_and_a_torn_tail_is_set_aside(
    settings: Settings, stub: tuple[LLMStub, str]
) -> None:
    async for client, server, svc in _served(settings, stub, worker=False):
        await record(client, "I live in Osaka", "Osaka", "Osaka again", days_ago=5)
        server.script({"facts": [item("new", "identity", "The user lives in Osaka.", ["Osaka"])]})
        await consolidate(client)
        await record(client, "Moved to Tokyo", "Tokyo", "Tokyo again", days_ago=1)
        server.script({"facts": [item("update", "identity", "The user lives in Tokyo.",
                                      ["Tokyo"], existing="{id:Osaka}")]})  # fmt: skip
        await consolidate(client)
        before = {f.id: f.to_json() for f in svc.facts.tiers["agent"].index.fold.facts.values()}
    log_path = settings.agent_dir / facts_log.LOG
    with log_path.open("ab") as fh:
        fh.write(b'{"kind": "fact", "id": "torn", "categ')  # a crash mid-append
    (settings.agent_dir / "facts.sqlite").unlink()  # the vector cache is derived too
    async for client, _, svc in _served(settings, stub, worker=False):
        after = {f.id: f.to_json() for f in svc.facts.tiers["agent"].index.fold.facts.values()}
        assert after == before and len(after) == 2
        status = (await (await client.get("/memory/status?scope=agent")).json())["facts"]
        assert status["rejected_tail"]["bytes"] > 0 and status["active"] == 1
        assert log_path.read_bytes().endswith(b"\n")
        assert [f["fact"] for f in await facts(client, "lives", as_of=when(3))] == [
            "The user lives in Osaka."
        ]


async def test_without_an_llm_consolidation_is_off_and_says_so(client: TestClient) -> None:
    health = await (await client.get("/healthz")).json()
    assert health["consolidation"]["state"] == "off"
    body = await (await client.post("/memory/consolidate", json={})).json()
    assert body["jobs"] == {} and body["facts"].startswith("off: no LLM")  # sleep pass only
    assert await facts(client, "anything") == []


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "bad_query"),
        ({"query": "x", "category": "hobby"}, "bad_category"),
        ({"query": "x", "as_of": "yesterday"}, "bad_as_of"),
        ({"query": "x", "limit": 0}, "bad_limit"),
        ({"query": "x", "scope": "both"}, "bad_scope"),
        ({"query": "x", "wat": 1}, "unknown_field"),
    ],
)
async def test_bad_fact_searches_get_a_clear_answer(
    client: TestClient, body: dict[str, Any], error: str
) -> None:
    resp = await client.post("/memory/facts", json=body)
    assert resp.status == 400 and (await resp.json())["error"] == error


def test_plan_guards_by_hand() -> None:
    """The rules, without a server: duplicates within one answer, same-sentence updates."""
    now = 1_800_000_000.0
    known = Fact("f1", "preference", "The user likes tea.", ["tea"], ["e0"], now - 100, now - 100)
    answer = {"facts": [
        item("new", "interest", "The user plays chess.", ["chess"], episodes=["e1"]),
        item("new", "interest", "the user plays chess", ["chess"], episodes=["e2"]),
        item("update", "preference", "The user likes tea", ["tea"], existing="f1",
             episodes=["e1"]),
    ]}  # fmt: skip
    from sidecar.facts.consolidation import Episode

    episodes = [Episode("e1", now - 10, "t", "x"), Episode("e2", now - 5, "t", "y")]
    p = plan(answer, {"f1": known}, episodes, lambda *_: [], now, "job")
    kinds = [r["kind"] for r in p.records]
    assert kinds == ["fact", "reinforce", "reinforce"]
    assert p.counts["new"] == 1 and p.counts["update"] == 0
    assert known.sources == ["e0"]  # planning changes nothing until the records are appended


async def test_one_surprising_episode_is_consolidated_at_once(auto_client: Any) -> None:
    client, stub, _ = auto_client
    stub.default = lambda prompt: {
        "facts": [item("new", "guideline", "Never call the user before 9:00.", ["call"])]
    }
    resp = await client.post("/memory/journal", json={
        "type": "user.correction", "summary": "Do not ever call me before 9 in the morning",
        "payload": {"surprise": 0.9},
    })  # fmt: skip
    assert resp.status == 201

    async def distilled() -> bool:
        return bool(await facts(client, "call morning"))

    await eventually(distilled, "a flashbulb episode to be consolidated alone")


async def test_the_memory_block_carries_the_known_facts(llm_client: Any) -> None:
    client, stub, _ = llm_client
    await record(client, "I live in Osaka", "Osaka again", "Still Osaka")
    stub.script({"facts": [item("new", "identity", "The user lives in Osaka.", ["Osaka"])]})
    await consolidate(client)
    block = await (await client.get("/memory/context?query=where+does+the+user+live")).text()
    assert "[KNOWN FACTS]" in block
    assert "- [identity] The user lives in Osaka. (sources: 3)" in block


# -- bounds, the log's cap, and a log written by hand ------------------------------------


async def test_an_answer_over_its_limits_appends_nothing(llm_client: Any) -> None:
    """40 facts of 12 keywords of 20 KB once appended 8.3 MB to the log (1 KB here: the
    retry quotes the answer to the stub, which takes 1 MiB); a fact within every limit of
    its own still may not make the answer larger than a job should write."""
    client, stub, svc = llm_client
    await record(client, "I play chess", "Chess club on Tuesday", "Won a chess game")
    log_path = svc.settings.agent_dir / facts_log.LOG
    keywords = [f"{n}" + "k" * 1000 for n in range(12)]
    huge = {"facts": [item("new", "interest", f"The user plays chess {n}.", keywords)
                      for n in range(40)]}  # fmt: skip
    stub.script(huge, huge)
    body = await consolidate(client, 502)
    assert "is too long" in body["detail"]
    keywords = [f"{n:02}" + "k" * 60 for n in range(12)]
    wide = {"facts": [item("new", "interest", f"{n:02} " + "c" * 490, keywords)
                      for n in range(40)]}  # fmt: skip
    stub.script(wide, wide)
    body = await consolidate(client, 502)
    assert "bytes" in body["detail"]
    assert not log_path.exists() and await facts(client, "chess") == []
    stub.script({"facts": [item("new", "interest", "The user plays chess.", ["chess"])]})
    await consolidate(client)
    assert [f["fact"] for f in await facts(client, "chess")] == ["The user plays chess."]


async def test_the_facts_log_has_a_cap(settings: Settings, stub: tuple[LLMStub, str]) -> None:
    async for client, server, _ in _served(settings, stub, worker=False):
        await record(client, "I live in Osaka", "Osaka", "Osaka again")
        server.script({"facts": [item("new", "identity", "The user lives in Osaka.", ["Osaka"])]})
        await consolidate(client)
        (fact,) = await facts(client, "Osaka")
    log_path = settings.agent_dir / facts_log.LOG
    size = log_path.stat().st_size
    caps = dataclasses.replace(settings.caps, facts_log=size + 10)
    capped = dataclasses.replace(settings, caps=caps)
    async for client, server, _ in _served(capped, stub, worker=False):
        await record(client, "Moved to Tokyo", "Tokyo", "Tokyo again")
        server.script({"facts": [item("new", "identity", "The user moved to Tokyo.", ["Tokyo"])]})
        body = await consolidate(client, 422)
        assert body["error"] == "facts_full" and "--cap-facts-log-bytes" in body["detail"]
        resp = await client.post(f"/memory/facts/{fact['id']}/invalidate", json={"reason": "x"})
        assert (resp.status, (await resp.json())["error"]) == (422, "facts_full")
        status = (await (await client.get("/memory/status?scope=agent")).json())["facts"]
        assert status["pending_episodes"] == 3 and status["active"] == 1
    assert log_path.stat().st_size == size


async def test_a_log_with_values_that_do_not_fit_is_read_within_bounds(
    client: TestClient, service: MemoryService
) -> None:
    """A hand-written or old log: every value that does not fit is read as its default
    and listed, and no answer grows with what the log holds."""
    sources = [f"episode-{n}" for n in range(2000)] + ["e" * 100_000]
    lines = [
        {"kind": "fact", "id": "f1", "category": "identity", "fact": "The user lives in Osaka.",
         "keywords": ["Osaka" * 4000] * 12 + ["city"] * 20, "source_episode_ids": sources,
         "valid_at": "9999-12-31T23:59:59-23:59", "created_at": when(3), "job": "j"},
        {"kind": "fact", "id": "f2", "category": "goal", "fact": "Run a marathon in Osaka. "
         * 400, "keywords": "marathon", "source_episode_ids": [], "valid_at": when(2),
         "created_at": 10**400},
        {"kind": "invalidate", "id": "f2", "at": ["now"], "reason": "why " * 50_000},
        {"kind": "consolidated", "episode_ids": ["e1", 5], "at": when(1), "job": "j",
         "prompt_tokens": "many", "answer_tokens": 10**400},
    ]  # fmt: skip
    (service.settings.agent_dir / "facts").mkdir()
    log_path = service.settings.agent_dir / facts_log.LOG
    log_path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    tf = service.facts.tiers["agent"]
    await service.facts._run(tf.index.load)
    resp = await client.post("/memory/facts", json={"query": "Osaka"})
    assert resp.status == 200 and len(await resp.read()) < 10_000
    (fact,) = (await resp.json())["facts"]
    assert fact["sources"] == 2000 and fact["source_episode_ids"] == sources[-21:-1]
    assert fact["valid_at"] == fact["created_at"] and fact["keywords"] == ["city"] * 12
    resp = await client.get("/memory/facts/f2/history")
    assert resp.status == 200 and len(await resp.read()) < 10_000
    (old,) = (await resp.json())["versions"]
    assert len(old["fact"]) == facts_log.MAX_FACT_CHARS and old["invalid_at"] == old["valid_at"]
    for path in ("/memory/context", "/memory/context?query=where+does+the+user+live+Osaka"):
        block = await client.get(path)
        assert block.status == 200 and "The user lives in Osaka." in await block.text()
    status = (await (await client.get("/memory/status?scope=agent")).json())["facts"]
    problems = {p["line"]: p["error"] for p in status["problems"]}
    assert sorted(problems) == [1, 2, 3, 4] and all("kept" in e for e in problems.values())
    assert status["tokens"] == 0


async def test_a_partial_line_in_the_log_is_ended_before_an_append(
    client: TestClient, service: MemoryService
) -> None:
    (service.settings.agent_dir / "facts").mkdir()
    log_path = service.settings.agent_dir / facts_log.LOG
    fact = {"kind": "fact", "id": "f1", "category": "identity", "fact": "The user is 19.",
            "keywords": [], "source_episode_ids": [], "valid_at": when(1),
            "created_at": when(1)}  # fmt: skip
    log_path.write_bytes(json.dumps(fact).encode() + b'\n{"kind": "fact", "id": "f2", "cat')
    tf = service.facts.tiers["agent"]
    await service.facts._run(tf.index.load)
    resp = await client.post("/memory/facts/f1/invalidate", json={"reason": "typo"})
    assert resp.status == 200, await resp.json()
    assert (await resp.json())["invalid_at"] is not None
    assert json.loads(log_path.read_bytes().splitlines()[2])["kind"] == "invalidate"
    status = (await (await client.get("/memory/status?scope=agent")).json())["facts"]
    assert [p["line"] for p in status["problems"]] == [2]


def test_a_restart_embeds_no_fact_the_cache_holds(tmp_path: Path) -> None:
    """The vector cache (``facts.sqlite``) outlives the process: a fact embedded once
    needs no model call after a restart; a cache of another version is dropped."""
    import numpy as np

    from sidecar.facts.index import CACHE_FILENAME, FactsIndex

    (tmp_path / "facts").mkdir()
    fact = {"kind": "fact", "id": "f1", "category": "identity", "fact": "The user is Ana.",
            "keywords": ["Ana"], "valid_at": "2026-11-01T00:00:00Z"}  # fmt: skip
    (tmp_path / facts_log.LOG).write_text(json.dumps(fact) + "\n")
    index = FactsIndex(tmp_path)
    index.load()
    (missing,) = index.missing_vectors("m")
    index.put_vectors("m", [(missing, np.ones(4, dtype=np.float32) / 2)])
    index.close()
    index = FactsIndex(tmp_path)
    try:
        index.load()
        assert index.missing_vectors("m") == []
        assert index.vectors["f1"].tolist() == [0.5] * 4
    finally:
        index.close()
    with sqlite3.connect(tmp_path / CACHE_FILENAME) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    index = FactsIndex(tmp_path)
    try:
        index.load()
        assert [f.id for f in index.missing_vectors("m")] == ["f1"]
    finally:
        index.close()


async def test_a_log_of_many_bad_lines_reports_a_count_and_the_first_few(
    client: TestClient, service: MemoryService
) -> None:
    """Each line that does not fold costs a problem: one per byte for a log of blank
    lines, which status listed whole (and kept whole in memory). The first ones are
    listed, the rest counted, as the journal does."""
    (service.settings.agent_dir / "facts").mkdir()
    fact = {"kind": "fact", "id": "f1", "category": "identity", "fact": "The user is 19.",
            "keywords": [], "source_episode_ids": [], "valid_at": when(1),
            "created_at": when(1)}  # fmt: skip
    log_path = service.settings.agent_dir / facts_log.LOG
    log_path.write_bytes(b"\n" * 100_000 + json.dumps(fact).encode() + b"\n" + b"x\n" * 3)
    tf = service.facts.tiers["agent"]
    await service.facts._run(tf.index.load)
    resp = await client.get("/memory/status?scope=agent")
    assert resp.status == 200 and len(await resp.read()) < 20_000
    status = (await resp.json())["facts"]
    assert status["active"] == 1 and status["unparsed_lines"] == 100_003
    assert [p["line"] for p in status["problems"]] == list(range(1, 51))
    assert len(tf.index.fold.problems) == 50


async def test_a_reply_larger_than_any_answer_is_refused_as_it_is_read(llm_client: Any) -> None:
    """The answer is bounded once parsed; the HTTP reply it comes in was read whole first
    (and a bad one quoted back to the model in the retry). Past its bound the read stops,
    nothing is asked again and nothing is applied."""
    client, stub, svc = llm_client
    await record(client, "I play chess", "Chess club on Tuesday", "Won a chess game")
    stub.script("x" * 8 * 1024 * 1024)
    body = await consolidate(client, 502)
    assert "answered more than" in body["detail"] and "bytes" in body["detail"]
    assert len(stub.requests) == 1
    assert not (svc.settings.agent_dir / facts_log.LOG).exists()


async def test_sources_reinforced_many_times_fold_in_linear_time(
    client: TestClient, service: MemoryService
) -> None:
    """Each reinforce record's ids were looked up in the fact's list of sources: 200
    records of 1,000 ids (a 2 MB log) took hours to fold, facts unanswered meanwhile."""
    (service.settings.agent_dir / "facts").mkdir()
    fact = {"kind": "fact", "id": "f1", "category": "identity", "fact": "The user is 19.",
            "keywords": [], "source_episode_ids": ["e0-0"], "valid_at": when(1),
            "created_at": when(1)}  # fmt: skip
    lines = [fact] + [
        {"kind": "reinforce", "id": "f1", "episode_ids": [f"e{k}-{i}" for i in range(1000)]}
        for k in range(200)
    ]
    log_path = service.settings.agent_dir / facts_log.LOG
    log_path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    tf = service.facts.tiers["agent"]
    await service.facts._run(tf.index.load)
    (found,) = await facts(client, "user")
    assert found["sources"] == 200_000  # e0-0 once
    assert found["source_episode_ids"][-1] == "e199-999"


async def test_a_vector_cache_sqlite_cannot_read_is_begun_again(settings: Settings) -> None:
    """facts.sqlite only caches vectors: one that is not a database (torn, overwritten) left
    the tier without facts (503) until someone deleted it."""
    (settings.agent_dir / "facts.sqlite").write_bytes(b"not a database " * 100)
    svc = MemoryService(settings)
    await svc.start()
    try:
        status = (await svc.facts.status("agent"))["facts"]
        assert status is not None and "error" not in status, status
        assert (await svc.facts.search("where", "agent", None, 5, None))["facts"] == []
    finally:
        await svc.stop()
