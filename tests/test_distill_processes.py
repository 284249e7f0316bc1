"""Distillation in a real separate process, SIGKILLed as each step shows on disk."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.lifecycle.distill_ledger import LEDGER
from tests.conftest import eventually
from tests.llm_stub import LLMStub
from tests.test_distill import (
    DAYS,
    NEW_CORE,
    OLD_CORE,
    answer,
    distilled,
    events,
    learnings_text,
    ledger,
)

CHILD = Path(__file__).resolve().parent / "distill_child.py"


async def test_sigkill_at_each_step_applies_every_part_once(
    settings: Settings, stub: LLMStub
) -> None:
    """A real process distils and is SIGKILLed as soon as each step shows on disk (the
    plan, the core edit, the learning, the event), each time restarted on the state the
    kill left; then it runs to the end. Every part is there once, and the model was asked
    once."""
    root = settings.agent_dir
    (root / "AGENT.md").write_text(OLD_CORE)
    for rel, text in DAYS.items():
        (root / rel).write_text(text)
    stub.script(answer())

    def plan_written() -> bool:
        return (root / LEDGER).exists() and '"kind": "plan"' in (root / LEDGER).read_text()

    steps = [
        plan_written,
        lambda: (root / "AGENT.md").read_text() == NEW_CORE,
        lambda: "vpn up staging" in learnings_text(root),
        lambda: bool(events(root)),
    ]
    env = {**os.environ, "PYTHONPATH": str(CHILD.parent.parent), "SIDECAR_EMBEDDER": "none"}
    args = [sys.executable, str(CHILD), str(root), str(settings.crew_dir), stub.url + "/v1"]
    for step in steps:
        child = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
        )

        async def reached(step: Any = step, child: Any = child) -> bool:
            return step() or child.returncode is not None

        await eventually(reached, "the next step on disk", within=60)
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        await child.wait()
    child = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await child.communicate()
    assert child.returncode == 0, err.decode()[-2000:]
    assert json.loads(out.decode().splitlines()[-1])["ok"]

    assert len(stub.requests) == 1
    assert (root / "AGENT.md").read_text() == NEW_CORE
    assert learnings_text(root).count("vpn up staging") == 1 and len(events(root)) == 1
    assert distilled(root) == sorted(DAYS)
    assert len(ledger(root, "archive/core/AGENT.md.jsonl")) == 1
