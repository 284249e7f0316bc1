"""facts: consolidation scenarios end to end, the apply step, fact retrieval, LLM cost.

The LLM is the stand-in server from ``tests/llm_stub.py`` (both real wire formats),
run in this process on loopback; the daemon is a real subprocess pointed at it.

- **Scenarios** (``facts_scenarios.py``): each in a fresh daemon, its episodes recorded
  through ``POST /memory/journal`` and one ``POST /memory/consolidate`` per step; then
  the tier's fold of ``facts/log.jsonl`` must hold exactly the expected active facts,
  each expected invalid one must have stopped when its ending episode happened, and no
  sentence may be active twice.
- **Apply step** for 20 actions (one job: the append of its records and the marker, and
  the fold), against a bare append + fsync of the same bytes.
- **Retrieval** p50 over HTTP at 10k facts, against a bare FTS5 query of the same words
  plus an empty round trip to the same route.
- **Tokens** per consolidated episode, prompt and answer, as the stub counts them.
- **Telemetry cost**: model calls for 300 ``exec.output_chunk``/``container.metrics``
  events with the worker on (none), then for three episodic events (one job).
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.daemon import Daemon
from bench.facts_scenarios import SCENARIOS, N, Scenario
from bench.report import BenchResult, Figure, Table, at_least, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.facts import log as facts_log
from sidecar.facts.index import FactsIndex
from sidecar.index.sqlite import TOKENIZER
from sidecar.journal.events import iso, uuid7
from sidecar.retrieval.query import terms as query_terms
from tests.llm_stub import LLMStub

NAME = "facts"
DESCRIPTION = "facts: consolidation scenarios, apply step, retrieval, LLM cost"
EPISODIC = {"episodic": True}  # the scenarios speak as user.said, a type tagged episodic
APPLY_TARGET = at_most(50.0, "<= 50 ms")
RETRIEVAL_TARGET = at_most(10.0, "<= 10 ms")


class StubThread:
    """The stub LLM server on its own event loop, so the benchmark stays synchronous."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.stub = LLMStub()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> LLMStub:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.stub.start(), self.loop).result(10)
        return self.stub

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.stub.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def when(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat().replace("+00:00", "Z")


def daemon(tmp: Path, name: str, stub: LLMStub) -> Daemon:
    work = tmp / name
    (work / "agent").mkdir(parents=True)
    (work / "crew").mkdir()
    args = ["--embedder", "none", "--llm-url", stub.url, "--llm-model", "stub-3b"]
    return Daemon(work / "agent", work / "crew", work / "daemon.log", extra_args=args)


def run_scenario(tmp: Path, n: int, sc: Scenario, stub: LLMStub) -> tuple[list[str], int, int]:
    """(what went wrong, episodes consolidated, tokens spent) for one scenario."""
    tokens_before = stub.prompt_tokens + stub.answer_tokens
    episodes = 0
    step_times: list[float] = []
    with daemon(tmp, f"s{n:02d}", stub) as d:
        d.wait_ready()
        for step in sc.steps:
            stub.script({"facts": step.answer})
            events = [
                {"type": "user.said", "summary": s, "ts": when(step.days_ago), "refs": EPISODIC}
                for s in step.episodes
            ]
            status, body = d.client.json("POST", "/memory/journal", {"events": events})
            assert status == 201, body
            step_times.append(time.time() - step.days_ago * 86400)
            status, body = d.client.json("POST", "/memory/consolidate", {"scope": "agent"})
            assert status == 200, body
            episodes += len(step.episodes)
        stub.steps.clear()
        index = FactsIndex(d.agent_dir)
        index.load()
    problems: list[str] = []
    active = [f.fact for f in index.fold.facts.values() if f.valid()]
    if set(active) != sc.active:
        problems.append(f"active {sorted(active)} != {sorted(sc.active)}")
    if len(active) != len(set(active)):
        problems.append("a fact is active twice")
    for sentence in sc.invalid:
        ended = [f for f in index.fold.facts.values() if f.fact == sentence and not f.valid()]
        if not ended:
            problems.append(f"{sentence!r} is not invalid")
            continue
        at = ended[-1].invalid_at or 0.0
        if not any(abs(at - t) < 120 for t in step_times):
            problems.append(f"{sentence!r} stopped at {iso(at)}, not when an episode happened")
    index.close()
    return problems, episodes, stub.prompt_tokens + stub.answer_tokens - tokens_before


def apply_speed(tmp: Path, stub: LLMStub, rounds: int) -> dict[str, Latency]:
    took, bare = [], []
    with daemon(tmp, "apply", stub) as d:
        d.wait_ready()
        for r in range(rounds):
            answer = [
                N("experience", f"The user finished project {r}-{i} on time.", f"p{r}x{i}")
                for i in range(20)
            ]
            stub.script({"facts": answer})
            # two episodes: under the worker's threshold, so this job is the one timed
            events = [{"type": "user.said", "summary": f"project {r}-{i} done", "refs": EPISODIC}
                      for i in range(2)]  # fmt: skip
            d.client.json("POST", "/memory/journal", {"events": events})
            status, body = d.client.json("POST", "/memory/consolidate", {"scope": "agent"})
            assert status == 200, body
            jobs = body["jobs"]["agent"]
            if jobs:  # the daemon's own worker may have run this job first
                took.append(jobs[0]["apply_s"])
            lines = [
                facts_log.encode([{"kind": "fact", "id": uuid7(), "fact": a["fact"]}])
                for a in answer
            ]
            data = b"".join(lines)
            path = tmp / "apply-bare.jsonl"
            t0 = time.perf_counter()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            bare.append(time.perf_counter() - t0)
    return {"apply": Latency.of_seconds(took), "bare": Latency.of_seconds(bare)}


def retrieval_speed(tmp: Path, stub: LLMStub, n: int) -> dict[str, Any]:
    rng = random.Random(4)
    things = [
        "tea",
        "jazz",
        "Osaka",
        "chess",
        "running",
        "Python",
        "Lisbon",
        "marathon",
        "cats",
        "sushi",
        "hiking",
        "German",
        "piano",
        "cycling",
        "vim",
        "Rust",
    ]
    verbs = ["likes", "practises", "talks about", "dislikes", "wants to learn", "owns books on"]
    records, texts = [], []
    now = iso(time.time())
    for i in range(n):
        fact = f"The user {rng.choice(verbs)} {rng.choice(things)} (note {i})."
        texts.append(fact)
        records.append(
            {
                "kind": "fact",
                "id": uuid7(),
                "category": rng.choice(facts_log.CATEGORIES),
                "fact": fact,
                "keywords": [rng.choice(things)],
                "source_episode_ids": [],
                "valid_at": now,
                "created_at": now,
            }
        )
    work = tmp / "retrieval"
    (work / "agent" / "facts").mkdir(parents=True)
    (work / "agent" / facts_log.LOG).write_bytes(facts_log.encode(records))
    (work / "crew").mkdir()
    queries = [f"{rng.choice(verbs)} {rng.choice(things)}" for _ in range(300)]
    bare = sqlite3.connect(":memory:")
    bare.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{TOKENIZER}')")
    bare.executemany("INSERT INTO t(body) VALUES (?)", [(t,) for t in texts])
    searched, floor = [], []
    with Daemon(
        work / "agent", work / "crew", work / "daemon.log", extra_args=["--embedder", "none"]
    ) as d:
        d.wait_ready()
        for q in queries:
            match = " OR ".join(f'"{w}"' for w in query_terms(q))
            t0 = time.perf_counter()
            bare.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10", (match,))
            t1 = time.perf_counter()
            d.client.raw("POST", "/memory/facts", b"[]")
            t2 = time.perf_counter()
            status, body = d.client.json("POST", "/memory/facts", {"query": q})
            t3 = time.perf_counter()
            assert status == 200 and body["facts"], body
            searched.append(t3 - t2)
            floor.append((t1 - t0) + (t2 - t1))
    return {"n": n, "search": Latency.of_seconds(searched), "floor": Latency.of_seconds(floor)}


def telemetry_cost(tmp: Path, stub: LLMStub) -> tuple[int, int]:
    """(model calls after 300 telemetry events, after 3 episodic ones more), with the
    worker on, as an agent streaming output and metrics would record them."""
    stub.default = lambda prompt: {"facts": []}
    before = len(stub.requests)
    with daemon(tmp, "telemetry", stub) as d:
        d.wait_ready()
        kinds = ("exec.output_chunk", "container.metrics")
        for part in range(3):
            events = [{"type": kinds[i % 2], "summary": f"step {part}-{i}: 12% cpu, layer done"}
                      for i in range(100)]  # fmt: skip
            status, body = d.client.json("POST", "/memory/journal", {"events": events})
            assert status == 201, body
        status, body = d.client.json("GET", "/memory/status?scope=agent")
        assert body["facts"]["pending_episodes"] == 0, body["facts"]
        telemetry = len(stub.requests) - before
        episodes = [{"type": "user.correction", "summary": f"use the fast runner, take {i}"}
                    for i in range(3)]  # fmt: skip
        d.client.json("POST", "/memory/journal", {"events": episodes})
        deadline = time.monotonic() + 30
        while d.client.json("GET", "/memory/status?scope=agent")[1]["facts"]["jobs"] < 1:
            assert time.monotonic() < deadline, "three episodes started no job"
            time.sleep(0.05)
        return telemetry, len(stub.requests) - before - telemetry


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "facts: consolidation scenarios, apply step, retrieval, LLM cost")
    outcomes: list[tuple[str, list[str]]] = []
    episodes = tokens = 0
    with ctx.tempdir(NAME) as tmp, StubThread() as stub:
        progress(NAME, f"{len(SCENARIOS)} scenarios, each in a fresh daemon")
        for n, sc in enumerate(SCENARIOS):
            problems, eps, used = run_scenario(tmp, n, sc, stub)
            outcomes.append((sc.name, problems))
            episodes += eps
            tokens += used
        progress(NAME, "apply step, 20 actions a job")
        apply = apply_speed(tmp, stub, 5 if ctx.quick else 20)
        progress(NAME, "retrieval at 10k facts")
        found = retrieval_speed(tmp, stub, 2_000 if ctx.quick else 10_000)
        progress(NAME, "model calls for 300 telemetry events, then 3 episodes")
        telemetry, episodic = telemetry_cost(tmp, stub)
    passed = sum(1 for _, p in outcomes if not p)
    result.figures.append(
        Figure(
            "scenarios right end to end",
            passed,
            digits=0,
            target=at_least(len(SCENARIOS), f"{len(SCENARIOS)}"),
            note=f"of {len(SCENARIOS)}",
        )
    )
    a, b = apply["apply"], apply["bare"]
    result.figures.append(
        Figure(
            "apply step, 20 actions (append + fold), p50",
            a.p50,
            "ms",
            target=APPLY_TARGET,
            note=f"{a.p50 / b.p50:.1f}x a bare append + fsync ({b.p50:.2f} ms)",
        )
    )
    s, f = found["search"], found["floor"]
    result.figures.append(
        Figure(
            f"fact retrieval p50 over HTTP at {found['n']:,} facts",
            s.p50,
            "ms",
            target=RETRIEVAL_TARGET,
            note=f"{s.p50 / f.p50:.1f}x the floor ({f.p50:.2f} ms)",
        )
    )
    result.figures.append(
        Figure(
            "LLM tokens per consolidated episode (prompt + answer)",
            tokens / max(1, episodes),
            digits=0,
            note=f"{tokens:,} tokens over {episodes} episodes",
        )
    )
    result.figures.append(
        Figure(
            "model calls for 300 telemetry events",
            telemetry,
            digits=0,
            target=at_most(0, "0"),
            note=f"then 3 episodic events: {episodic} call(s)",
        )
    )
    result.tables.append(
        Table(
            "scenarios",
            ["scenario", "outcome"],
            [[name, "; ".join(p) or "right"] for name, p in outcomes],
        )
    )
    result.tables.append(
        Table(
            "latency",
            LATENCY_HEADERS,
            [
                a.row("apply step (20 actions)"),
                b.row("bare append + fsync"),
                s.row("fact search over HTTP"),
                f.row("floor: bare FTS5 + empty round trip"),
            ],
        )
    )
    result.details = {
        "scenarios": {name: p for name, p in outcomes},
        "tokens": tokens,
        "episodes": episodes,
    }
    return result
