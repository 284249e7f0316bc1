"""The lifecycle engine in a real daemon process: a year of daily logs over the tier cap
is archived at start, and SIGKILLs in the middle of maintenance lose or double no line."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from tests.sidecar_process import SidecarProcess, wait_for
from tests.test_lifecycle import assert_exactly_once, day_name

MIB = 1024 * 1024


def lay_year(agent: Path, days: int, lines: int) -> dict[str, str]:
    """``days`` daily logs ending yesterday, each of ``lines`` unique lines (~60 bytes)."""
    (agent / "daily").mkdir(parents=True, exist_ok=True)
    logs = {}
    for offset in range(1, days + 1):
        day = day_name(offset)
        tag = day.replace("-", "")
        logs[day] = "".join(
            f"- {day} entry {i}: checked w{tag}n{i} on the build server\n" for i in range(lines)
        )
        (agent / "daily" / f"{day}.md").write_text(logs[day])
    return logs


def first_pass_done(daemon: SidecarProcess) -> bool:
    lc = daemon.get("/memory/status?scope=agent").get("lifecycle") or {}
    return lc.get("last_run") is not None


def test_a_year_of_history_is_archived_and_writes_are_accepted(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    logs = lay_year(agent, 400, 500)  # 400 logs of ~30 KB: 12.5 MB, over the 10 MiB cap
    assert sum(len(t) for t in logs.values()) > 12 * MIB
    daemon = SidecarProcess(agent, tmp_path / "crew", extra=["--daily-retention-days", "30"])
    daemon.start(60)
    try:
        today = {"scope": "agent", "file": "daily/today", "content": "- shipped the release"}
        status, body = daemon.call("POST", "/memory/write", today)
        assert status == 201, body
        wait_for(lambda: first_pass_done(daemon), 60, "the first maintenance pass")
        state = daemon.get("/memory/status?scope=agent")
        lc = state["lifecycle"]
        assert lc["last_run"]["active_bytes_before"] > 12 * MIB
        assert lc["kinds"]["daily"]["active_bytes"] < 10 * MIB
        active = sum(p.stat().st_size for p in agent.rglob("*.md") if "archive" not in p.parts)
        assert active < 10 * MIB
        assert_exactly_once(agent, logs)
        log = daemon.log_path.read_text()
        assert '"msg": "first maintenance pass done", "tier": "agent", "archived_days": 370' in log

        # Found by search and read back, one log in ten (the archived ones, and the kept).
        for day in sorted(logs)[::10]:
            word = f"w{day.replace('-', '')}n123"
            asked = {"query": word, "scope": "agent", "archive": True}
            hits = daemon.request("POST", "/memory/search", asked)["results"]
            assert hits, day
            hit = hits[0]
            archived = hit["file"].startswith("archive/daily/")
            assert hit.get("archived", False) is archived
            assert hit["file"] in (f"archive/daily/{day[:7]}.md", f"daily/{day}.md")
            lines = f"start_line={hit['start_line']}&end_line={hit['end_line']}"
            read = daemon.get(f"/memory/read?scope=agent&file={hit['file']}&{lines}")
            assert word in read["content"]

        status, body = daemon.call("POST", "/memory/write", {**today, "content": "- and more"})
        assert status == 201, body

        # The command line asks the same daemon; nothing more is due.
        cli = subprocess.run(
            [sys.executable, "-m", "sidecar", "maintain", "--url", daemon.url, "--scope", "agent",
             "--dry-run"], capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert cli.stdout.startswith("agent: would archive 0 daily log(s) due older than "), cli
    finally:
        daemon.kill()


def removed(agent: Path, before: set[str]) -> int:
    return len(before - {p.name for p in (agent / "daily").iterdir()})


def months(agent: Path) -> dict[str, int]:
    folder = agent / "archive" / "daily"
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} if folder.is_dir() else {}


def test_sigkills_during_maintenance_leave_every_line_exactly_once(tmp_path: Path) -> None:
    """Each round lowers the retention window so a new stretch of history is due, and
    kills the daemon at a random moment of its pass: as soon as a month file is written
    (before its logs are removed), or once a random number of the due logs are gone."""
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    logs = lay_year(agent, 400, 40)
    rng = random.Random()
    mid_pass = 0
    for retention in (340, 280, 220, 160, 100, 40):
        due = {f"{day_name(o)}.md" for o in range(retention + 1, 401)}
        present = {p.name for p in (agent / "daily").iterdir()}
        left, written = len(due & present), months(agent)
        daemon = SidecarProcess(agent, crew, extra=["--daily-retention-days", str(retention)])
        daemon.proc = subprocess.Popen(daemon.args, env=daemon.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)  # fmt: skip
        # Early in the pass, where a kill is likelier to land before it ends.
        target = rng.randrange(0, max(1, left // 2))
        try:
            if target == 0:
                wait_for(lambda w=written: months(agent) != w, 60, "a month file written")
            else:
                wait_for(lambda p=present, k=target: removed(agent, p) >= k, 60, f"{target} gone")
        finally:
            daemon.kill()
        gone = removed(agent, present)
        mid_pass += gone < left and (gone > 0 or months(agent) != written)
        assert_no_line_lost(agent, logs)
    assert mid_pass >= 2, f"only {mid_pass} of 6 kills landed mid-pass"

    daemon = SidecarProcess(agent, crew, extra=["--daily-retention-days", "30"]).start(60)
    try:
        wait_for(lambda: first_pass_done(daemon), 60, "the final maintenance pass")
        lc = daemon.get("/memory/status?scope=agent")["lifecycle"]
        assert lc["errors"] == {} and lc["last_run"]["steps"]["daily"]["problems"] == []
    finally:
        daemon.kill()
    assert sorted(p.name for p in (agent / "daily").iterdir()) == sorted(
        f"{day_name(o)}.md" for o in range(1, 31)
    )
    assert_exactly_once(agent, logs)


def assert_no_line_lost(agent: Path, logs: dict[str, str]) -> None:
    """Between a kill and the next pass a line may be on disk twice (archived, its log not
    yet removed), never missing."""
    text = "".join(
        p.read_text(errors="replace")
        for sub in ("daily", "archive/daily")
        if (agent / sub).is_dir()
        for p in (agent / sub).iterdir()
        if p.suffix == ".md" and not p.name.startswith(".")
    )
    present = set(text.splitlines())
    missing = [line for t in logs.values() for line in t.splitlines() if line not in present]
    assert not missing, missing[:3]
