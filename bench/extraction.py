"""extraction: LLM tokens of one learning extraction per ended session, by session size.

The daemon runs in this process against the stand-in server (``tests/llm_stub.py``),
which counts tokens as words. Each session is scripted as an agent's work goes (routine
edits and test runs around a failed deploy, its fix and a user's correction) and laid
down days ago; the tier already holds 30 learnings, so the prompt carries the related
ones it would in use. ``session_ended`` is fired as ``sessions`` fires it.

- **Tokens per 40-event session**, prompt and answer, against the bare baseline: the
  words of the session's own episodes, which any extraction must read.
- **By size** (2 to 80 events, the threshold lifted): what the call's fixed part (the
  instructions and the known learnings) costs beside the episodes. ``MIN_EVENTS`` is the
  smallest size at which the episodes are at least a third of the prompt.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.report import BenchResult, Figure, Table, progress
from sidecar.config import Settings
from sidecar.learnings import extraction
from sidecar.service import MemoryService
from tests.llm_stub import LLMStub

NAME = "extraction"
DESCRIPTION = "learning extraction: LLM tokens per ended session"
SIZES = (2, 4, 6, 8, 10, 12, 16, 24, 40, 80)
KNOWN = 30  # learnings the tier holds before the sessions
EPISODE_SHARE = 1 / 3  # the threshold: episodes at least this share of the prompt

STORY = [
    ("tool.result", "make deploy ENV=staging failed after 41 s: dial tcp 10.0.4.2:443: "
     "connect: connection refused (release 2026.11.3)"),
    ("tool.result", "retried make deploy ENV=staging with --verbose: the same connection "
     "refused from the staging API gateway"),
    ("agent.thought", "the staging network is reachable only through the VPN, and the tunnel "
     "dropped when the laptop slept"),
    ("tool.result", "vpn up staging: tunnel established, route 10.0.0.0/16 via tun0"),
    ("tool.result", "make deploy ENV=staging succeeded in 94 s; smoke tests 12/12 passed"),
    ("user.message", "No, never deploy to staging on a Friday afternoon: QA freezes it at "
     "noon. Wait for Monday next time."),
]  # fmt: skip
ROUTINE = [
    ("tool.result", "edited src/billing/invoice_{i}.py: rounded totals with Decimal "
     "quantize; ran pytest tests/billing -q: 48 passed"),
    ("tool.result", "ran ruff check src/billing and mypy src/billing for change {i}: "
     "no issues found"),
    ("agent.thought", "step {i} of the invoice refactor done; the next one moves the tax "
     "table to config/tax.yaml"),
]  # fmt: skip
LEARNINGS = [
    "Run the billing tests with -q before each commit: the full suite takes 4 minutes.",
    "Invoices round half up to the cent with Decimal.quantize, never with float round().",
    "Staging is frozen by QA from Friday noon to Monday morning.",
    "The tax table lives in config/tax.yaml and is reloaded without a restart.",
    "mypy runs in strict mode on src/billing; new modules need full annotations.",
]


def when(days_ago: float, minute: int) -> str:
    at = datetime.now(UTC) - timedelta(days=days_ago) + timedelta(minutes=minute)
    return at.isoformat().replace("+00:00", "Z")


def session(n: int, days_ago: float) -> list[dict[str, Any]]:
    """``n`` events: the story in the middle of routine work (its first ``n`` when short)."""
    routine = [(t, s.format(i=i)) for i in range(n) for t, s in [ROUTINE[i % len(ROUTINE)]]]
    half = max(0, n - len(STORY)) // 2
    steps = (routine[:half] + STORY + routine[half:])[:n]
    return [{"type": t, "summary": s, "ts": when(days_ago, i)} for i, (t, s) in enumerate(steps)]


ANSWER = {"learnings": [
    {"action": "new", "existing_id": None, "type": "corrective", "scope": "agent",
     "domain": "deploys", "importance": 0.8,
     "text": "Staging deploys fail with 'connection refused' when the VPN tunnel is down "
             "(it drops when the laptop sleeps); run `vpn up staging` before `make deploy`."},
    {"action": "reinforce", "existing_id": "{id:frozen}", "type": "directive", "scope": "crew",
     "domain": "deploys", "importance": 0.9,
     "text": "Staging is frozen by QA from Friday noon to Monday morning."},
]}  # fmt: skip


async def measure(tmp: Path) -> list[dict[str, Any]]:
    stub = await LLMStub().start()
    agent, crew = tmp / "agent", tmp / "crew"
    agent.mkdir()
    crew.mkdir()
    settings = Settings(agent_dir=agent, crew_dir=crew, role="lead", embedder="none",
                        reconcile_interval=3600, llm_url=stub.url + "/v1",
                        llm_model="stub", llm_api="openai")  # fmt: skip
    svc = MemoryService(settings)
    await svc.start()
    await svc.facts.stop()  # every request the stub counts is extraction's
    floor = extraction.MIN_EVENTS
    extraction.MIN_EVENTS = 1  # every size is asked, to see what each costs
    rows: list[dict[str, Any]] = []
    try:
        for k in range(KNOWN):
            text = f"{LEARNINGS[k % len(LEARNINGS)]} (noted in review {k})"
            await svc.learnings.learn({"text": text, "file": "billing", "scope": "agent"})
        for n, size in enumerate(SIZES):
            sid = f"bench-{size}"
            events = [{**e, "session_id": sid} for e in session(size, 3 - n * 0.1)]
            await svc.journal.record("agent", {"events": events})
            stub.script(ANSWER if size >= len(STORY) else {"learnings": []})
            before = (stub.prompt_tokens, stub.answer_tokens)
            for listener in svc.hooks.session_ended:
                listener("agent", {"session_id": sid, "events": size, "summary_id": None})
            while svc.extraction.ledgers["agent"].counts["extracted"] < n + 1:  # noqa: ASYNC110 - the job's end is a ledger line
                await asyncio.sleep(0.01)
            episode_words = sum(len(e["summary"].split()) + 4 for e in events)
            rows.append({"events": size, "prompt": stub.prompt_tokens - before[0],
                         "answer": stub.answer_tokens - before[1],
                         "episodes": episode_words})  # fmt: skip
    finally:
        extraction.MIN_EVENTS = floor
        await svc.stop()
        await stub.stop()
    return rows


def threshold(rows: list[dict[str, Any]]) -> int:
    return next((r["events"] for r in rows if r["episodes"] >= EPISODE_SHARE * r["prompt"]),
                rows[-1]["events"])  # fmt: skip


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "learning extraction: LLM tokens per ended session")
    with ctx.tempdir(NAME) as tmp:
        progress(NAME, f"sessions of {', '.join(map(str, SIZES))} events, {KNOWN} learnings known")
        rows = asyncio.run(measure(tmp))
    forty = next(r for r in rows if r["events"] == 40)
    result.figures += [
        Figure("prompt tokens, one 40-event session", forty["prompt"], digits=0,
               note=f"{forty['prompt'] / forty['episodes']:.2f}x the session's own episodes "
               f"({forty['episodes']:,} words)"),
        Figure("answer tokens, one 40-event session", forty["answer"], digits=0,
               note="two learnings: one new, one reinforced"),
        Figure("threshold: events at which episodes are >= 1/3 of the prompt",
               threshold(rows), digits=0,
               note=f"MIN_EVENTS is {extraction.MIN_EVENTS}; shorter sessions are not asked"),
    ]  # fmt: skip
    result.tables.append(
        Table(
            "tokens by session size",
            ["events", "prompt", "answer", "episodes (words)", "episodes' share"],
            [[str(r["events"]), str(r["prompt"]), str(r["answer"]), str(r["episodes"]),
              f"{r['episodes'] / r['prompt']:.0%}"] for r in rows],
        )
    )  # fmt: skip
    result.details = {"sizes": rows}
    return result
