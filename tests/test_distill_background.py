"""Distillation as a background job of the lifecycle engine, over a real service and a
stand-in LLM: a model held mid-answer never holds a write; archived days are distilled
once each, a month a pass, across a crash, and never sent to the model again."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Caps, Settings
from sidecar.lifecycle.distill_jobs import JOB_DAYS
from sidecar.lifecycle.distill_ledger import LEDGER
from sidecar.lifecycle.tools import render
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.llm_stub import LLMStub, Step
from tests.test_distill import NEW_CORE, OLD_CORE, answer, events, ledger
from tests.test_distill_engine import _distil_or_nothing, _with_llm
from tests.test_lifecycle import (
    assert_exactly_once,
    day_name,
    lay_down,
    post,
    started,
    status,
    tree,
)


def sent(stub: LLMStub) -> list[str]:
    """Every day a distillation prompt showed the model, in order."""
    days = []
    for request in stub.requests:
        text = request["messages"][1]["content"]
        if "Daily logs to distil" in text:
            logs = text.split("Daily logs to distil:\n")[1]
            days += [part.split(" ===")[0] for part in logs.split("=== ")[1:]]
    return days


async def test_a_held_model_never_holds_a_write(settings: Settings, stub: LLMStub) -> None:
    """A year of logs over the tier's cap, and a model that holds every answer: the write
    that needs room is accepted while the model still holds (the pass archived without
    it); released, the job distils the oldest month, and the next pass the next one."""
    agent = settings.agent_dir
    logs = lay_down(agent, range(1, 366))
    history = sum(len(t) for t in logs.values())
    release = asyncio.Event()

    def held(prompt: str) -> Any:
        if "Daily logs to distil" in prompt:
            return Step(answer=answer(core=None), hold=release)
        return {"facts": []}

    stub.default = held
    capped = dataclasses.replace(
        _with_llm(settings, stub.url + "/v1"), caps=Caps(tier=history // 2)
    )
    svc = MemoryService(capped)
    await svc.start()
    try:
        await svc.indexes.queue.wait_idle()  # the tier is measured by its index: over its cap
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            body = {"scope": "agent", "file": "daily/today", "content": "- shipped"}
            write = asyncio.ensure_future(post(client, "/memory/write", 201, **body))

            async def answered() -> bool:
                return write.done()

            await eventually(answered, "the write's answer while the model holds", within=60)
            assert (await write)["file"] == f"daily/{day_name(0)}.md"
            await stub.arrived.wait()  # the job asked, and is held
            lc = await status(client)
            assert lc["distillation"]["state"] == "running" and not (agent / LEDGER).exists()
            assert lc["kinds"]["daily"]["active_bytes"] < history // 2
            assert_exactly_once(agent, logs)

            release.set()
            await svc.lifecycle.distill.wait("agent")
            archived = sorted(f"daily/{day_name(o)}.md" for o in range(31, 366))
            first = archived[:JOB_DAYS]  # oldest first, a month a job
            assert [x["day"] for x in ledger(agent) if x["kind"] == "day"] == first
            assert sent(stub) == first
            state = (await status(client))["distillation"]
            assert state["days_distilled"] == JOB_DAYS
            assert state["days_pending"] == len(archived) - JOB_DAYS and state["jobs"] == 1

            await post(client, "/memory/maintain", scope="agent")  # the next pass: next month
            await svc.lifecycle.distill.wait("agent")
            assert sent(stub) == archived[: 2 * JOB_DAYS]  # none of the first sent again
    finally:
        release.set()
        await svc.stop()


async def test_archived_days_are_distilled_once_across_a_crash(
    settings: Settings, stub: LLMStub
) -> None:
    """Days archived before an LLM was configured, a ledger with some days done and a
    plan a crash cut short: the plan is finished without a call, the done days are never
    sent, every other day is sent once, a month a pass, and every part applies once."""
    agent = settings.agent_dir
    (agent / "AGENT.md").write_text(OLD_CORE)
    logs = lay_down(agent, range(0, 75))
    async with started(dataclasses.replace(settings, daily_retention_days=30)):
        pass  # no LLM: archived undistilled
    archived = sorted(f"daily/{day_name(o)}.md" for o in range(31, 75))
    plan = {
        "kind": "plan", "job": "0190-crashed", "at": "2026-11-01T00:00:00.000Z",
        "days": archived[5:8], "sha256": {d: "0" * 64 for d in archived[5:8]},
        "core_base": hashlib.sha256(OLD_CORE.encode()).hexdigest(), "core_unreadable": None,
        "answer": answer(), "cost": {"prompt_tokens": 900, "answer_tokens": 90},
    }  # fmt: skip
    done = [{"kind": "day", "day": d, "job": "0189-old", "at": "x"} for d in archived[:5]]
    (agent / LEDGER).write_text("".join(json.dumps(x) + "\n" for x in [*done, plan]))
    stub.default = _distil_or_nothing
    async with started(_with_llm(settings, stub.url + "/v1")) as (svc, client):
        await svc.lifecycle.distill.wait("agent")
        assert sent(stub) == archived[8 : 5 + JOB_DAYS]  # the first job: a month of days
        await post(client, "/memory/maintain", scope="agent")
        await svc.lifecycle.distill.wait("agent")
        state = (await status(client))["distillation"]
        assert state["days_distilled"] == len(archived) and state["days_pending"] == 0
        assert state["jobs"] == 2 and state["last_error"] is None

        assert sent(stub) == archived[8:]  # each once; neither the done nor the plan's
        lines = ledger(agent)
        days = collections.Counter(x["day"] for x in lines if x["kind"] == "day")
        assert sorted(days) == archived and set(days.values()) == {1}
        plans = [x for x in lines if x["kind"] == "plan"]
        assert len(plans) == 1 + sum("Daily logs to distil" in json.dumps(r) for r in stub.requests)
        assert (agent / "AGENT.md").read_text() == NEW_CORE  # the plan's edit, once
        assert len(ledger(agent, "archive/core/AGENT.md.jsonl")) == 1
        assert len(events(agent)) == len(plans)  # one event a plan: none twice
        assert_exactly_once(agent, logs)

        # A dry run names what the next job would read, the days due now included; no call.
        more = lay_down(agent, range(75, 80))
        before, asked = tree(agent), len(stub.requests)
        dry = await post(client, "/memory/maintain", scope="agent", dry_run=True)
        plan_now = dry["tiers"]["agent"]["steps"]["daily"]["distillation"]
        assert plan_now["days_pending"] == len(more) and plan_now["next_job_days"] == len(more)
        assert plan_now["next_job"] == [f"daily/{day_name(79)}.md", f"daily/{day_name(75)}.md"]
        assert tree(agent) == before and len(stub.requests) == asked
        assert "would distil 5 of 5 day(s) not yet distilled" in render(dry, {})  # CLI and MCP


async def test_stop_cancels_a_held_job_and_the_next_start_distils_its_days_once(
    settings: Settings, stub: LLMStub
) -> None:
    agent = settings.agent_dir
    lay_down(agent, range(31, 36))
    release = asyncio.Event()
    stub.script(Step(answer=answer(core=None), hold=release))
    stub.default = _distil_or_nothing
    try:
        async with started(_with_llm(settings, stub.url + "/v1")) as (svc, _client):
            await stub.arrived.wait()  # the job is held by the model; stop must not wait
        assert svc.lifecycle.distill.state("agent")["state"] == "idle"  # cancelled
        assert [x for x in ledger(agent) if x["kind"] == "day"] == []
        async with started(_with_llm(settings, stub.url + "/v1")) as (svc, _client):
            await svc.lifecycle.distill.wait("agent")
        archived = sorted(f"daily/{day_name(o)}.md" for o in range(31, 36))
        days = [x["day"] for x in ledger(agent) if x["kind"] == "day"]
        assert days == archived and sent(stub) == archived * 2  # asked again: never answered
    finally:
        release.set()


async def test_a_ledger_that_cannot_be_read_distils_nothing_and_says_so(
    settings: Settings, stub: LLMStub, tmp_path: Path
) -> None:
    """A ledger that is a link could repeat what was distilled: the job asks nothing, and
    the status and the health say why until a job can read it."""
    agent = settings.agent_dir
    logs = lay_down(agent, range(31, 34))
    (tmp_path / "elsewhere.jsonl").write_text("")
    (agent / LEDGER).parent.mkdir(parents=True)
    (agent / LEDGER).symlink_to(tmp_path / "elsewhere.jsonl")
    stub.default = _distil_or_nothing
    async with started(_with_llm(settings, stub.url + "/v1")) as (svc, client):
        await svc.lifecycle.distill.wait("agent")
        state = (await status(client))["distillation"]
        assert "unreadable" in state["last_error"] and stub.requests == []
        (reason,) = (await svc.lifecycle.health()).reasons
        assert reason.startswith(f"lifecycle: agent: distillation: {LEDGER} unreadable")
        assert_exactly_once(agent, logs)  # archived all the same
