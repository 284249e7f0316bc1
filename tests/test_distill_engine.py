"""The distiller wired into the lifecycle engine: a real service with an LLM configured
archives first and then distils the archived days in the background, once each; with the
LLM down the logs are archived all the same, and the status and the health say they were
not distilled. A held model never holds a write."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.lifecycle.distill_ledger import LEDGER
from tests.llm_stub import LLMStub
from tests.test_distill import NEW_CORE, OLD_CORE, answer, distilled, events, learnings_text
from tests.test_lifecycle import assert_exactly_once, day_name, lay_down, post, started, status


def _with_llm(settings: Settings, url: str) -> Settings:
    """The conftest's settings keep every log active; here the default window applies."""
    return dataclasses.replace(settings, llm_url=url, llm_model="stub-3b", llm_api="openai",
                               daily_retention_days=30)  # fmt: skip


def _distil_or_nothing(prompt: str) -> dict[str, Any]:
    """The distillation's answer to its prompts; no facts to any other job's."""
    return answer() if "Daily logs to distil" in prompt else {"facts": []}


async def test_the_first_pass_archives_then_distils_once(settings: Settings, stub: LLMStub) -> None:
    agent = settings.agent_dir
    (agent / "AGENT.md").write_text(OLD_CORE)
    logs = lay_down(agent, range(0, 40))  # the oldest nine days are past the window
    stub.default = _distil_or_nothing
    async with started(_with_llm(settings, stub.url + "/v1")) as (svc, client):
        daily = (await status(client))["last_run"]["steps"]["daily"]
        assert daily["archived"] == 9 and daily["distillation"]["job"] == "started"
        await svc.lifecycle.distill.wait("agent")
        state = (await status(client))["distillation"]
        assert state["state"] == "idle" and state["last_error"] is None
        assert state["days_distilled"] == 9 and state["days_pending"] == 0
        assert state["prompt_tokens"] == stub.prompt_tokens > 0
        assert (await svc.lifecycle.health()).reasons == []
        due = sorted(f"daily/{day_name(o)}.md" for o in range(31, 40))
        assert (agent / "AGENT.md").read_text() == NEW_CORE
        assert "vpn up staging" in learnings_text(agent) and len(events(agent)) == 1
        assert distilled(agent) == due and (agent / LEDGER).exists()
        assert_exactly_once(agent, logs)
        asked = len(stub.requests)

        again = await post(client, "/memory/maintain", scope="agent")
        assert again["tiers"]["agent"]["steps"]["daily"]["due"] == 0
        await svc.lifecycle.distill.wait("agent")
        assert len(stub.requests) == asked and len(events(agent)) == 1


async def test_with_the_llm_down_logs_are_archived_undistilled(
    settings: Settings, stub: LLMStub
) -> None:
    agent = settings.agent_dir
    (agent / "AGENT.md").write_text(OLD_CORE)
    logs = lay_down(agent, range(29, 35))
    url = stub.url + "/v1"
    await stub.stop()  # nothing listens there now
    async with started(_with_llm(settings, url)) as (svc, client):
        await svc.lifecycle.distill.wait("agent")
        lc = await status(client)
        daily, state = lc["last_run"]["steps"]["daily"], lc["distillation"]
        assert daily["archived"] == 4 and "degraded" not in daily
        assert state["days_pending"] == 4 and "unreachable" in state["last_error"]
        assert state["last_job"]["undistilled"] == 4
        (reason,) = (await svc.lifecycle.health()).reasons  # not silent
        assert "agent: distillation: 4 archived day(s) not distilled" in reason
        assert "unreachable" in reason
        assert (agent / "AGENT.md").read_text() == OLD_CORE and events(agent) == []
        assert not Path(agent / LEDGER).exists()
        assert_exactly_once(agent, logs)
