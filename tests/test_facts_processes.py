"""Facts across a real daemon process: SIGKILL while consolidation jobs apply, then a
restart folds the log to whole jobs only."""

from __future__ import annotations

import asyncio
import http.client
import json
import random
import threading
from pathlib import Path

from sidecar.facts import log as facts_log
from sidecar.facts.index import FactsIndex
from tests.llm_stub import EPISODES, LLMStub
from tests.sidecar_process import SidecarProcess

ROUNDS = 4


def _load(port: int, stop: threading.Event, done: list[int], enough: threading.Event) -> None:
    """Record episodes and consolidate them, until the daemon dies."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    n = 0
    while not stop.is_set():
        events = [{"type": "user.said", "summary": f"round {n} note {i}",
                   "refs": {"episodic": True}} for i in range(3)]  # fmt: skip
        try:
            conn.request("POST", "/memory/journal", json.dumps({"events": events}), headers)
            conn.getresponse().read()
            conn.request("POST", "/memory/consolidate", json.dumps({"scope": "agent"}), headers)
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException):
            return
        if resp.status == 200:
            done.append(n)
            if len(done) >= 3:
                enough.set()
        n += 1


async def test_sigkill_during_consolidation_leaves_whole_jobs(tmp_path: Path) -> None:
    stub = await LLMStub().start()
    counter = iter(range(10**6))
    stub.default = lambda prompt: {"facts": [
        {"action": "new", "existing_fact_id": None, "category": "experience",
         "fact": f"The user finished task {next(counter)}.", "keywords": ["task"],
         "episode_ids": [EPISODES]}
        for _ in range(20)
    ]}  # fmt: skip
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    env = {"SIDECAR_LLM_URL": stub.url, "SIDECAR_LLM_MODEL": "stub-3b"}
    rng = random.Random(5)
    try:
        for _ in range(ROUNDS):
            proc = SidecarProcess(agent, crew, env=env).start()
            stop, enough = threading.Event(), threading.Event()
            done: list[int] = []
            worker = threading.Thread(target=_load, args=(proc.port, stop, done, enough))
            worker.start()
            await asyncio.to_thread(enough.wait, 20)
            await asyncio.sleep(rng.random() * 0.05)  # where the kill lands: not a wait
            proc.kill()
            stop.set()
            await asyncio.to_thread(worker.join)
            assert done, "no job finished before the kill"
        proc = SidecarProcess(agent, crew, env=env).start()  # sets aside a torn tail
        proc.kill()
    finally:
        await stub.stop()
    index = FactsIndex(agent)
    index.load()
    try:
        assert index.fold.problems == []
        jobs = {j["job"] for j in index.fold.jobs}
        made: dict[str, int] = {}
        for fact in index.fold.facts.values():
            made[fact.job or ""] = made.get(fact.job or "", 0) + 1
        assert set(made) <= jobs  # no fact without its job's marker
        assert all(count == 20 for count in made.values())  # and no job in part
        assert len(jobs) >= ROUNDS
    finally:
        index.close()
    assert (agent / facts_log.LOG).read_bytes().endswith(b"\n")
