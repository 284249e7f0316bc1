"""Extraction across a real daemon process: SIGKILL while a session's extraction waits on
the model, then a restart extracts it once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sidecar.learnings.ledger import LEDGER
from tests.conftest import eventually
from tests.llm_stub import LLMStub, Step
from tests.sidecar_process import SidecarProcess
from tests.test_extraction import LESSON, item, learnings_of, scripted_session


def ledger(agent: Path) -> list[dict[str, Any]]:
    path = agent / LEDGER
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


async def test_sigkill_while_extracting_runs_the_session_again_once_after_restart(
    tmp_path: Path,
) -> None:
    stub = await LLMStub().start()
    asked, release = asyncio.Event(), asyncio.Event()
    hold = [True]  # the first extraction request waits for ``release``

    def model(prompt: str) -> Any:
        if "Known learnings:" in prompt:  # extraction
            answer = {"learnings": [item("new")]}
            if hold[0]:
                hold[0] = False
                asked.set()
                return Step(answer=answer, hold=release)
            return answer
        if "Known facts:" in prompt:  # consolidation
            return {"facts": []}
        return {"summary": "Deployed to staging once the VPN was up."}  # the end's summary

    stub.default = model
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    env = {"SIDECAR_LLM_URL": stub.url + "/v1", "SIDECAR_LLM_MODEL": "stub-3b"}
    proc = SidecarProcess(agent, crew, env=env)
    try:
        await asyncio.to_thread(proc.start)
        events = [{**e, "session_id": "k1"} for e in scripted_session(2)]

        def session() -> None:
            proc.request("POST", "/memory/session/start", {"session_id": "k1", "task": "deploy"})
            proc.request("POST", "/memory/journal", {"events": events})
            proc.request("POST", "/memory/session/end", {"session_id": "k1"})

        await asyncio.to_thread(session)
        await asyncio.wait_for(asked.wait(), 20)
        proc.kill()
        release.set()
        assert [r["kind"] for r in ledger(agent)] == ["queued"]
        assert learnings_of(agent) == []

        proc = SidecarProcess(agent, crew, env=env)
        await asyncio.to_thread(proc.start)

        async def extracted() -> bool:
            return any(r["kind"] == "extracted" for r in ledger(agent))

        await eventually(extracted, "the session extracted after the restart", within=20)
        await asyncio.to_thread(proc.terminate)
    finally:
        proc.kill()
        await stub.stop()
    assert [r["kind"] for r in ledger(agent)] == ["queued", "extracted"]
    (learned,) = learnings_of(agent)
    assert learned.text == LESSON and learned.source == "session:k1"
