"""Nothing grows forever: ended sessions and done extractions older than the retention
window leave the active session log and extraction's ledger for monthly archive files,
crash-safe and idempotent, laid down as months of history."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.journal.events import iso
from sidecar.learnings.ledger import LEDGER
from sidecar.service import MemoryService
from sidecar.sessions.log import LOG
from tests.sidecar_process import SidecarProcess

DAY = 86400.0


def session(sid: str, started: float, ended: float | None) -> list[dict[str, Any]]:
    lines = [{"kind": "started", "session_id": sid, "at": iso(started), "operator": "0f" * 16}]
    if ended is not None:
        lines += [{"kind": "step", "session_id": sid, "step": "reinforced", "at": iso(ended),
                   "reinforced": {}},
                  {"kind": "ended", "session_id": sid, "at": iso(ended), "events": 3,
                   "summary_id": None, "memory_updated": None}]  # fmt: skip
    return lines


def write_lines(path: Path, records: list[dict[str, Any]], tail: str = "") -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records) + tail
    path.write_text(data)
    return data.encode()


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def history(agent: Path, now: float) -> dict[str, list[dict[str, Any]]]:
    """Sessions ended months back, one ended two days ago, one open since long ago, and
    extraction's ledger for them; by session id."""
    by_id = {
        "march": session("march", now - 120 * DAY, now - 119 * DAY),
        "may": session("may", now - 61 * DAY, now - 60 * DAY),
        "lately": session("lately", now - 3 * DAY, now - 2 * DAY),
        "still-open": session("still-open", now - 90 * DAY, None),
    }
    # Interleaved as a log is: the open one started before the others ended.
    records = [*by_id["march"][:1], *by_id["still-open"], *by_id["march"][1:],
               *by_id["may"], *by_id["lately"]]  # fmt: skip
    write_lines(agent / LOG, records, tail="{torn\n")
    ledger = [
        {"kind": "queued", "session_id": "march", "at": now - 119 * DAY, "session": {}},
        {"kind": "extracted", "session_id": "march", "at": now - 119 * DAY + 60,
         "prompt_tokens": 900, "answer_tokens": 80},
        {"kind": "queued", "session_id": "may", "at": now - 60 * DAY, "session": {}},
        {"kind": "skipped", "session_id": "may", "at": now - 60 * DAY, "events": 2},
        {"kind": "queued", "session_id": "lately", "at": now - 2 * DAY, "session": {}},
        {"kind": "failed", "session_id": "lately", "at": now - 2 * DAY, "error": "x"},
        {"kind": "queued", "session_id": "waits", "at": now - 200 * DAY, "session": {}},
        {"kind": "extracted", "session_id": "odd", "at": "yesterday"},  # kept: no time
    ]  # fmt: skip
    write_lines(agent / LEDGER, ledger)
    return by_id


def month(ts: float) -> str:
    return iso(ts)[:7]


async def test_old_sessions_and_extractions_move_to_monthly_archives_once(
    settings: Settings,
) -> None:
    agent, now = settings.agent_dir, time.time()
    by_id = history(agent, now)
    log_before = (agent / LOG).read_bytes()
    svc = MemoryService(settings)
    await svc.start()
    try:
        answer = await svc.lifecycle.run("agent", "test")  # joins the first pass, or runs
        answer = await svc.lifecycle.run("agent", "test")  # and once more: nothing to do
        step = answer["steps"]["sessions"]
        assert (step["sessions"], step["archived_lines"]) == (0, 0)
        march = agent / "archive" / "sessions" / f"{month(now - 119 * DAY)}.jsonl"
        may = agent / "archive" / "sessions" / f"{month(now - 60 * DAY)}.jsonl"
        got = {p.name for p in (agent / "archive" / "sessions").iterdir()}
        assert got == {march.name, may.name}
        moved = [json.loads(x) for x in lines_of(march) + lines_of(may)]
        assert moved == by_id["march"] + by_id["may"]  # every line, once, in its order
        kept = lines_of(agent / LOG)
        assert [json.loads(x)["session_id"] for x in kept[:-1]] == ["still-open"] + [
            "lately"] * 3 and kept[-1] == "{torn"  # fmt: skip
        assert len(log_before) == sum(len(x) + 1 for x in kept) + march.stat().st_size + (
            may.stat().st_size if may != march else 0)  # fmt: skip
        assert set(svc.sessions.sessions) == {"still-open", "lately"}
        assert step["active_bytes"] == (agent / LOG).stat().st_size
        assert step["archived_bytes"] == sum(p.stat().st_size for p in {march, may})
        kinds = (await svc.lifecycle.status("agent"))["lifecycle"]["kinds"]
        assert kinds["sessions"] == {"active_bytes": step["active_bytes"],
                                     "archived_bytes": step["archived_bytes"]}  # fmt: skip
        assert kinds["extraction"]["archived_bytes"] > 0
        # An archived session is unknown here: its end is reinforcement only, as for any
        # id never started here, and starting it again refuses nothing.
        end = await svc.sessions.end("march")
        assert (end["started"], end["ended"], end["reinforced"]) == (False, False, {})
        # The ledger: done sessions past the window moved; the waiting one and the line
        # without a time stay.
        ledger = [json.loads(x) for x in lines_of(agent / LEDGER)]
        assert [(r["kind"], r["session_id"]) for r in ledger] == [
            ("queued", "lately"), ("failed", "lately"), ("queued", "waits"),
            ("extracted", "odd")]  # fmt: skip
        archived = [json.loads(x) for p in sorted((agent / "archive" / "extraction").iterdir())
                    for x in lines_of(p)]  # fmt: skip
        assert sorted(r["session_id"] for r in archived) == ["march", "march", "may", "may"]
        assert answer["steps"]["extraction"]["archived_lines"] == 0  # moved by the first
        assert set(svc.extraction.ledgers["agent"].waiting) == {"waits"}
        assert svc.extraction.ledgers["agent"].done == {"lately", "odd"}
    finally:
        await svc.stop()


async def test_a_crash_between_the_archive_and_the_rewrite_is_finished_without_copies(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    """The archive month already holds the old session (durable first) and the log still
    holds it (the rewrite never happened): the next pass removes it from the log and adds
    nothing to the archive."""
    agent, _ = tier_dirs
    now = time.time()
    old = session("old", now - 80 * DAY, now - 79 * DAY)
    new = session("new", now - 1 * DAY, now - DAY / 2)
    write_lines(agent / LOG, old + new)
    archive = agent / "archive" / "sessions" / f"{month(now - 79 * DAY)}.jsonl"
    earlier = session("earlier", now - 81 * DAY, now - 80.5 * DAY)
    held = write_lines(archive, earlier + old)  # another session archived before it
    svc = MemoryService(settings)
    await svc.start()
    try:
        await svc.lifecycle.run("agent", "test")
        answer = await svc.lifecycle.run("agent", "test")
        assert answer["steps"]["sessions"]["archived_lines"] == 0
        assert archive.read_bytes() == held  # nothing added twice
        assert [json.loads(x) for x in lines_of(agent / LOG)] == new
        assert set(svc.sessions.sessions) == {"new"}
    finally:
        await svc.stop()


def test_archived_sessions_stay_archived_across_a_killed_daemons_restart(
    tmp_path: Path,
) -> None:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    agent.mkdir()
    crew.mkdir()
    now = time.time()
    by_id = history(agent, now)
    daemon = SidecarProcess(agent, crew).start()
    try:
        daemon.request("POST", "/memory/maintain", {"scope": "agent"})
        fresh = daemon.request("POST", "/memory/session/start", {"task": "t"})["session_id"]
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(10)
        daemon.start()
        answer = daemon.request("POST", "/memory/maintain", {"scope": "agent"})
        assert answer["tiers"]["agent"]["steps"]["sessions"]["archived_lines"] == 0
        status = daemon.get("/memory/status?scope=agent")
        assert status["sessions"]["known"] == 3  # still-open, lately, and the fresh one
        again = daemon.request("POST", "/memory/session/start", {"session_id": fresh})
        assert again["started"] is False
    finally:
        daemon.kill()
    archived = [json.loads(x) for p in sorted((agent / "archive" / "sessions").iterdir())
                for x in lines_of(p)]  # fmt: skip
    assert sorted(archived, key=json.dumps) == sorted(by_id["march"] + by_id["may"],
                                                      key=json.dumps)  # fmt: skip
    assert "march" not in (agent / LOG).read_text()


async def test_a_month_file_that_is_not_a_regular_file_holds_back_only_its_sessions(
    settings: Settings,
) -> None:
    """A folder where a month's archive goes keeps that month's sessions in the log (and
    known), says so, and the other months still move."""
    agent, now = settings.agent_dir, time.time()
    by_id = history(agent, now)
    blocked = agent / "archive" / "sessions" / f"{month(now - 119 * DAY)}.jsonl"
    blocked.mkdir(parents=True)
    may = agent / "archive" / "sessions" / f"{month(now - 60 * DAY)}.jsonl"
    svc = MemoryService(settings)
    await svc.start()
    try:
        answer = await svc.lifecycle.run("agent", "test")
        step = answer["steps"]["sessions"]
        assert "error" not in step, step
        assert blocked.name in step["degraded"] and step["months"] == [may.name[:7]]
        assert [json.loads(x) for x in lines_of(may)] == by_id["may"]
        kept = [json.loads(x)["session_id"] for x in lines_of(agent / LOG)[:-1]]
        assert kept.count("march") == 3 and "may" not in kept
        assert "march" in svc.sessions.sessions and "may" not in svc.sessions.sessions
    finally:
        await svc.stop()
