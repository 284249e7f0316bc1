"""The lifecycle engine over a real service and server: daily logs past the retention
window archived by month, exactly once, still read and searched; the maintain operation;
writes that make room instead of dead-ending; odd files reported, never fatal."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Caps, Settings
from sidecar.index.queue import TREE, JobKey
from sidecar.lifecycle import daily, months
from sidecar.lifecycle.daily import ArchiveFull, _archive_month
from sidecar.lifecycle.distill_jobs import DistillJobs
from sidecar.notes.files import today_utc
from sidecar.service import MemoryService
from tests.conftest import eventually


def day_name(offset: int, today: date | None = None) -> str:
    return ((today or today_utc()) - timedelta(days=offset)).isoformat()


def log_text(day: str, lines: int = 20) -> str:
    """A day's log whose every line is unique and has a searchable word of its own."""
    tag = day.replace("-", "")
    return "".join(f"- {day} step {i}: deployed w{tag}n{i} to staging\n" for i in range(lines))


def lay_down(root: Path, offsets: range, lines: int = 20) -> dict[str, str]:
    """Daily logs dated ``offsets`` days ago, as an agent would have left them."""
    (root / "daily").mkdir(parents=True, exist_ok=True)
    logs = {}
    for offset in offsets:
        day = day_name(offset)
        logs[day] = log_text(day, lines)
        (root / "daily" / f"{day}.md").write_text(logs[day])
    return logs


def history_files(root: Path) -> list[Path]:
    return sorted(
        p
        for sub in ("daily", "archive/daily")
        if (root / sub).is_dir()
        for p in (root / sub).iterdir()
        if p.suffix == ".md" and not p.name.startswith(".")
    )


def assert_exactly_once(root: Path, logs: dict[str, str]) -> None:
    """Every line of every log is on disk once, over daily/ and the archive."""
    seen: dict[str, int] = {}
    for path in history_files(root):
        for line in path.read_bytes().decode("utf-8", "replace").splitlines():
            seen[line] = seen.get(line, 0) + 1
    wrong = [
        (line, seen.get(line, 0))
        for text in logs.values()
        for line in text.splitlines()
        if seen.get(line, 0) != 1
    ]
    assert not wrong, wrong[:5]


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*.md")
        if p.is_file() and "index" not in p.name
    }


@pytest.fixture
def lc_settings(tier_dirs: tuple[Path, Path]) -> Settings:
    agent, crew = tier_dirs
    return Settings(agent_dir=agent, crew_dir=crew, role="lead", reconcile_interval=3600,
                    embedder="none")  # fmt: skip


@contextlib.asynccontextmanager
async def started(settings: Settings) -> AsyncIterator[tuple[MemoryService, TestClient]]:
    svc = MemoryService(settings)
    await svc.start()
    await eventually(lambda: _first_pass_done(svc), "the first maintenance pass")
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            yield svc, client
    finally:
        await svc.stop()


async def _first_pass_done(svc: MemoryService) -> bool:
    runs = svc.lifecycle.runs.values()
    return bool(runs) and all(tr.last is not None for tr in runs)


async def post(client: TestClient, path: str, status: int = 200, **body: Any) -> dict[str, Any]:
    resp = await client.post(path, json=body)
    answer = await resp.json()
    assert resp.status == status, answer
    return dict(answer)


async def status(client: TestClient, scope: str = "agent") -> dict[str, Any]:
    resp = await client.get(f"/memory/status?scope={scope}")
    assert resp.status == 200
    return dict((await resp.json())["lifecycle"])


async def test_start_archives_logs_past_the_window_exactly_once_and_they_stay_found(
    lc_settings: Settings,
) -> None:
    agent = lc_settings.agent_dir
    logs = lay_down(agent, range(0, 75))  # two and a half months, today's included
    async with started(lc_settings) as (_svc, client):
        kept = sorted(p.name for p in (agent / "daily").iterdir())
        assert kept == sorted(f"{day_name(o)}.md" for o in range(0, 31))
        months = sorted(p.name for p in (agent / "archive" / "daily").iterdir())
        assert months == sorted({f"{day_name(o)[:7]}.md" for o in range(31, 75)})
        assert_exactly_once(agent, logs)

        old = day_name(60)
        word = f"w{old.replace('-', '')}n7"
        # An ordinary search leaves the archive out; asked, it finds the day there.
        assert (await post(client, "/memory/search", query=word))["results"] == []
        found = await post(client, "/memory/search", query=word, scope="agent", archive=True)
        hit = found["results"][0]
        assert hit["file"] == f"archive/daily/{old[:7]}.md" and hit["archived"] is True
        recent = await post(client, "/memory/search", archive=True,
                            query=f"w{day_name(3).replace('-', '')}n7 {word}")  # fmt: skip
        flags = {r["file"]: r.get("archived", False) for r in recent["results"]}
        assert flags == {f"daily/{day_name(3)}.md": False, hit["file"]: True}
        resp = await client.get("/memory/read", params={
            "scope": "agent", "file": hit["file"], "start_line": str(hit["start_line"]),
            "end_line": str(hit["end_line"])})  # fmt: skip
        assert word in (await resp.json())["content"]
        section = (agent / hit["file"]).read_text()
        assert f"## {old}\n" in section  # a heading names each day
        # Reading the day where it was says where it went; a recent day missing does not.
        resp = await client.get("/memory/read", params={"scope": "agent",
                                                        "file": f"daily/{old}.md"})  # fmt: skip
        assert resp.status == 404 and hit["file"] in (await resp.json())["detail"]
        recent_day = f"daily/{day_name(1)}.md"  # the crew tier has no logs at all
        resp = await client.get("/memory/read", params={"scope": "crew", "file": recent_day})
        assert "write to it to create it" in (await resp.json())["detail"]

        # Never in the memory block, even when the task names it.
        resp = await client.get("/memory/context", params={"query": word})
        assert word not in await resp.text()

        lc = await status(client)
        assert lc["last_run"]["reason"] == "start" and lc["errors"] == {}
        assert lc["distillation"].startswith("off: no LLM")
        daily = lc["last_run"]["steps"]["daily"]
        assert daily["archived"] == 44 and daily["problems"] == []
        on_disk = sum(p.stat().st_size for p in (agent / "archive" / "daily").iterdir())
        assert lc["kinds"]["daily"]["archived_bytes"] == on_disk
        active = sum(p.stat().st_size for p in (agent / "daily").iterdir())
        assert lc["kinds"]["daily"]["active_bytes"] == active
        assert lc["next_run"] is not None

        metrics = await (await client.get("/metrics")).text()
        labels = 'kind="daily",state="archived",tier="agent"'
        assert f"sidecar_lifecycle_bytes{{{labels}}} {float(on_disk)}" in metrics
        assert 'sidecar_lifecycle_runs_total{outcome="ok",step="daily",tier="agent"}' in metrics

        # A second pass finds nothing due and changes nothing.
        before = tree(agent)
        again = await post(client, "/memory/maintain", scope="agent")
        assert again["tiers"]["agent"]["steps"]["daily"]["due"] == 0
        assert tree(agent) == before


async def test_dry_run_changes_nothing_and_answers_the_plan(lc_settings: Settings) -> None:
    agent = lc_settings.agent_dir
    async with started(lc_settings) as (_svc, client):
        logs = lay_down(agent, range(40, 46))
        before = tree(agent)
        plan = await post(client, "/memory/maintain", scope="agent", dry_run=True)
        daily = plan["tiers"]["agent"]["steps"]["daily"]
        assert plan["dry_run"] is True and daily["dry_run"] is True
        assert daily["due"] == 6 and daily["archived"] == 6
        assert daily["due_bytes"] == sum(len(t) for t in logs.values())
        assert tree(agent) == before
        assert (await status(client))["last_run"]["reason"] == "start"  # not recorded

        done = await post(client, "/memory/maintain", scope="both")
        assert set(done["tiers"]) == {"agent", "crew"}
        assert done["tiers"]["agent"]["steps"]["daily"]["archived"] == 6
        assert done["tiers"]["agent"]["freed_bytes"] == daily["due_bytes"]
        assert not any((agent / "daily").iterdir())
        assert_exactly_once(agent, logs)


async def test_maintain_refuses_bad_input(lc_settings: Settings) -> None:
    async with started(lc_settings) as (_svc, client):
        bad = await post(client, "/memory/maintain", 400, dry_run="yes")
        assert bad["error"] == "bad_dry_run"
        bad = await post(client, "/memory/maintain", 400, scope="team")
        assert bad["error"] == "bad_scope"
        bad = await post(client, "/memory/maintain", 400, when="now")
        assert bad["error"] == "unknown_field"


async def test_a_member_maintains_its_own_tier_and_is_refused_the_crews(
    tier_dirs: tuple[Path, Path],
) -> None:
    agent, crew = tier_dirs
    settings = Settings(agent_dir=agent, crew_dir=crew, role="agent", reconcile_interval=3600,
                        embedder="none")  # fmt: skip
    async with started(settings) as (_svc, client):
        refused = await post(client, "/memory/maintain", 403, scope="crew")
        assert refused["error"] == "crew_read_only" and "crew lead" in refused["detail"]
        both = await post(client, "/memory/maintain", scope="both")
        assert set(both["tiers"]) == {"agent"}


async def test_a_write_over_the_tier_cap_makes_room_and_is_accepted(
    lc_settings: Settings,
) -> None:
    agent = lc_settings.agent_dir
    settings = dataclasses.replace(lc_settings, caps=Caps(tier=64 * 1024))
    async with started(settings) as (svc, client):
        logs = lay_down(agent, range(35, 75))  # ~43 KB of history, written meanwhile
        (agent / "AGENT.md").write_text("x" * 3000 + "\n")
        history = sum(len(t) for t in logs.values())
        filler = "- " + "y" * (64 * 1024 - history - 3001) + "\n"  # the tier is full
        (agent / "daily" / f"{day_name(1)}.md").write_text(filler)
        await svc.indexes.queue.submit(JobKey("agent", TREE, ""))  # as the watcher would

        body = await post(client, "/memory/write", 201, scope="agent", file="daily/today",
                           content="- shipped the release")  # fmt: skip
        assert body["file"] == f"daily/{day_name(0)}.md"
        lc = await status(client)
        assert lc["last_run"]["reason"] == "make_room"
        assert lc["last_run"]["freed_bytes"] == history
        assert_exactly_once(agent, logs)

        # What only the agent can condense still answers 422, with today's guidance.
        refused = await post(client, "/memory/write", 422, scope="agent", file="AGENT.md",
                             content="z" * 1200)  # fmt: skip
        assert refused["error"] == "cap_exceeded" and "Consolidate" in refused["detail"]
        # And a tier full of what is not history: no room to make, so 422, not a loop.
        more = "- " + "q" * 60000
        refused = await post(client, "/memory/write", 422, scope="agent", file="daily/today",
                             content=more)  # fmt: skip
        assert refused["error"] == "cap_exceeded" and "tier" in refused["detail"]


async def test_odd_files_are_reported_and_left_alone(lc_settings: Settings) -> None:
    agent = lc_settings.agent_dir
    (agent / "archive" / "daily").mkdir(parents=True)
    junk = agent / "archive" / "daily" / "notes-by-hand.md"
    junk.write_text("# kept by hand\nthe zeppelin budget\n")
    month = day_name(40)[:7]
    broken = agent / "archive" / "daily" / f"{month}.md"
    broken.write_bytes(
        b"# by hand\n<!-- archived daily/2020-01-01.md bytes=5 -->\n## 2020-01-01\n\nhalf"
        b"\n\xff\xfe not utf-8 quokka\n"
    )
    (agent / "daily").mkdir(exist_ok=True)
    bad_day = agent / "daily" / "2025-02-30.md"
    bad_day.write_text("- a date that never was\n")
    logs = lay_down(agent, range(40, 41))
    async with started(lc_settings) as (_svc, client):
        lc = await status(client)
        problems = lc["last_run"]["steps"]["daily"]["problems"]
        assert any("daily/2025-02-30.md" in p and "left alone" in p for p in problems)
        assert any("notes-by-hand.md" in p for p in problems)
        assert any(f"{month}.md" in p and "no end marker" in p for p in problems)
        assert lc["errors"] == {}
        assert bad_day.read_text() == "- a date that never was\n"
        assert junk.read_text() == "# kept by hand\nthe zeppelin budget\n"
        data = broken.read_bytes()
        assert data.startswith(b"# by hand\n<!-- archived daily/2020-01-01.md bytes=5 -->")
        assert b"\xff\xfe not utf-8 quokka\n" in data  # bytes kept exactly
        assert_exactly_once(agent, logs)
        found = await post(client, "/memory/search", query="zeppelin", archive=True)
        assert found["results"][0]["file"] == "archive/daily/notes-by-hand.md"
        resp = await client.get(
            "/memory/read", params={"scope": "agent", "file": "archive/daily/notes-by-hand.md"}
        )
        assert resp.status == 200 and "zeppelin" in (await resp.json())["content"]
        resp = await client.get("/memory/files", params={"scope": "agent"})
        listed = {f["file"] for f in (await resp.json())["files"]}
        assert {"archive/daily/notes-by-hand.md", f"archive/daily/{month}.md"} <= listed


class Failing:
    name = "broken"

    async def maintain(self, tier: str, now: float, dry_run: bool) -> dict[str, Any]:
        raise OSError(5, "Input/output error")

    async def usage(self, tier: str) -> dict[str, int]:
        return {"active_bytes": 0, "archived_bytes": 0}


async def test_a_failing_step_is_a_health_reason_and_the_others_still_run(
    lc_settings: Settings,
) -> None:
    agent = lc_settings.agent_dir
    logs = lay_down(agent, range(40, 43))
    svc = MemoryService(lc_settings)
    svc.hooks.maintenance.insert(0, Failing())
    calls: list[tuple[str, list[tuple[str, str]]]] = []

    async def distiller(tier: str, days: list[tuple[str, str]]) -> dict[str, Any]:
        calls.append((tier, days))
        raise RuntimeError("model server down")

    jobs = DistillJobs(distiller, lc_settings.caps.core, svc.lifecycle.tasks)
    svc.lifecycle.daily.jobs = svc.lifecycle.distill = jobs
    await svc.start()
    try:
        await eventually(lambda: _first_pass_done(svc), "the first maintenance pass")
        await jobs.wait("agent")  # started once the logs were archived
        health = await svc.health()
        assert health["status"] == "degraded"
        assert any("lifecycle: agent: broken: OSError" in r for r in health["reasons"])
        assert (
            "lifecycle: agent: distillation: 3 archived day(s) not distilled: RuntimeError: "
            "model server down" in health["reasons"]
        )
        lc = (await svc.status("agent"))["lifecycle"]
        assert lc["last_run"]["steps"]["broken"]["error"].startswith("OSError")
        daily = lc["last_run"]["steps"]["daily"]
        assert daily["archived"] == 3  # archived before the distiller was asked
        assert daily["distillation"]["job"] == "started"
        assert lc["distillation"]["last_error"] == "RuntimeError: model server down"
        assert lc["distillation"]["state"] == "idle"
        assert [(t, [rel for rel, _ in days]) for t, days in calls] == [
            ("agent", [f"daily/{d}.md" for d in sorted(logs)])
        ]
        assert calls[0][1][0][1] == logs[min(logs)]
        assert_exactly_once(agent, logs)
    finally:
        await svc.stop()


class Killed(Exception):
    pass


def test_a_pass_after_a_crash_finishes_the_move_whatever_state_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The states a kill can leave between the month file's write and the logs' removal,
    and a day written again after it was archived: each ends with every line once."""
    root = tmp_path
    (root / "daily").mkdir()

    def killed(*_: object) -> bool:
        raise Killed

    def archive(logs: dict[str, bytes], kill: bool = False) -> Any:
        for day, data in logs.items():
            if not (root / "daily" / f"{day}.md").exists():
                (root / "daily" / f"{day}.md").write_bytes(data)
        with monkeypatch.context() as patch:
            if kill:
                patch.setattr(daily, "_remove_if_holds", killed)
                with pytest.raises(Killed):
                    _archive_month(root, "2025-03", logs, 0, 1 << 30, dry_run=False)
                return None
            return _archive_month(root, "2025-03", logs, 0, 1 << 30, dry_run=False)

    first = {"2025-03-02": b"- two\n", "2025-03-03": b"- three\n"}
    done = archive(first)
    assert done.counts["archived"] == 2 and not any((root / "daily").iterdir())
    month = root / "archive" / "daily" / "2025-03.md"

    # Killed after the durable write, before the removal: the same file is there.
    archive({"2025-03-01": b"- one\n"}, kill=True)
    # Appended to while it was being archived: the longer log wins.
    (root / "daily" / "2025-03-02.md").write_bytes(b"- two\n- two and a half\n")
    # Written again after it was archived: both are kept.
    (root / "daily" / "2025-03-03.md").write_bytes(b"- three again\n")
    again = {p.stem: p.read_bytes() for p in (root / "daily").iterdir()}
    done = archive(again)
    assert done.counts == {"archived": 0, "already_archived": 1, "replaced": 1, "merged": 1}
    assert not any((root / "daily").iterdir())
    lines = month.read_text().splitlines()
    for line in ("- one", "- two", "- two and a half", "- three", "- three again"):
        assert lines.count(line) == 1, line
    parsed = months.parse(month.read_bytes(), "m")
    assert parsed.days() == ["2025-03-01", "2025-03-02", "2025-03-03"]
    assert parsed.problems == [] and not any(
        s.edited for s in parsed.parts if isinstance(s, months.Section)
    )

    # The same state met twice (killed again before the removal) changes nothing more.
    archive({"2025-03-03": b"- three and more\n"}, kill=True)
    before = month.read_bytes()
    done = archive({"2025-03-03": b"- three and more\n"})
    assert done.counts["already_archived"] == 1 and month.read_bytes() == before
    assert not any((root / "daily").iterdir())


def test_a_line_written_again_to_an_archived_day_is_kept_though_it_ends_the_section(
    tmp_path: Path,
) -> None:
    """A new log that equals the tail of its day's section is a new write, not a crash."""
    (tmp_path / "daily").mkdir()
    log = tmp_path / "daily" / "2026-04-01.md"
    log.write_bytes(b"- first\nagain\n")
    _archive_month(tmp_path, "2026-04", {"2026-04-01": log.read_bytes()}, 0, 1 << 30, False)
    assert not log.exists()
    log.write_bytes(b"again\n")
    done = _archive_month(tmp_path, "2026-04", {"2026-04-01": b"again\n"}, 0, 1 << 30, False)
    assert done.counts["merged"] == 1 and not log.exists()
    (section,) = [
        p
        for p in months.parse((tmp_path / "archive/daily/2026-04.md").read_bytes(), "m").parts
        if isinstance(p, months.Section)
    ]
    assert section.content == b"- first\nagain\nagain\n"
    # A month file from before sections named their log keeps the old rule.
    old = months.Section("2026-04-02", b"x\nagain\n")
    month = months.Month([old], [])
    assert daily._merge(month, {"2026-04-02": b"again\n"}, {"2026-04-02": "1:2:6"}) == {
        "archived": 0, "already_archived": 1, "replaced": 0, "merged": 0,
    }  # fmt: skip


def test_marker_lines_inside_a_log_neither_close_nor_open_a_section(tmp_path: Path) -> None:
    (tmp_path / "daily").mkdir()
    quoted = (
        b"- before\n<!-- end daily/2026-01-05.md -->\n"
        b"<!-- archived daily/2026-01-07.md bytes=0 -->\n## 2026-01-07\n\n"
        b"<!-- end daily/2026-01-07.md -->\n- after\n"
    )
    logs = {"2026-01-05": quoted}
    for day, data in logs.items():
        (tmp_path / "daily" / f"{day}.md").write_bytes(data)
    _archive_month(tmp_path, "2026-01", logs, 0, 1 << 30, False)
    (tmp_path / "daily" / "2026-01-07.md").write_bytes(b"- seventh\n")
    _archive_month(tmp_path, "2026-01", {"2026-01-07": b"- seventh\n"}, 0, 1 << 30, False)
    parsed = months.parse((tmp_path / "archive/daily/2026-01.md").read_bytes(), "m")
    found = [(p.day, p.content, p.edited) for p in parsed.parts if isinstance(p, months.Section)]
    assert found == [("2026-01-05", quoted, False), ("2026-01-07", b"- seventh\n", False)]
    assert parsed.problems == []


def test_the_archive_cap_stops_archival_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "daily").mkdir()
    (tmp_path / "daily" / "2025-03-01.md").write_bytes(b"- one\n")
    with pytest.raises(ArchiveFull, match="--cap-archive-bytes"):
        _archive_month(tmp_path, "2025-03", {"2025-03-01": b"- one\n"}, 0, 10, dry_run=False)
    assert (tmp_path / "daily" / "2025-03-01.md").read_bytes() == b"- one\n"
    assert not (tmp_path / "archive" / "daily" / "2025-03.md").exists()


def test_a_section_edited_by_hand_is_read_as_it_is() -> None:
    data = (
        b"# title\n<!-- archived daily/2025-03-01.md bytes=6 -->\n## 2025-03-01\n\n- one, edited\n"
        b"<!-- end daily/2025-03-01.md -->\ntrailing notes"
    )
    parsed = months.parse(data, "m")
    (section,) = [p for p in parsed.parts if isinstance(p, months.Section)]
    assert section.edited and section.content == b"- one, edited\n"
    assert parsed.problems == [
        "m: the section of 2025-03-01 does not hold its bytes=6 (edited by hand?); read up to "
        "its first end marker"
    ]
    assert parsed.parts[-1] == b"trailing notes"
    parsed.put(months.Section("2025-03-02", b"- two"))
    out = parsed.render()  # the edited section is taken as it now reads
    assert out.startswith(b"# title\n<!-- archived daily/2025-03-01.md bytes=14 -->\n")
    assert (
        b"<!-- end daily/2025-03-01.md -->\ntrailing notes\n<!-- archived daily/2025-03-02" in out
    )
    again = months.parse(out, "m")
    assert [(p.day, p.content, p.edited) for p in again.parts if isinstance(p, months.Section)] == [
        ("2025-03-01", b"- one, edited\n", False),
        ("2025-03-02", b"- two", False),
    ]


async def test_a_damaged_archive_index_is_rebuilt_from_the_files(lc_settings: Settings) -> None:
    agent = lc_settings.agent_dir
    logs = lay_down(agent, range(40, 43))
    async with started(lc_settings) as (svc, client):
        assert (await status(client))["archive_index"]["total_files"] == 1
    (agent / ".archive-index.sqlite").write_bytes(b"not a database" * 100)
    async with started(lc_settings) as (svc, client):
        lc = await status(client)
        assert lc["archive_index"]["state"] == "ready" and lc["archive_index"]["total_files"] == 1
        word = f"w{min(logs).replace('-', '')}n3"
        found = await post(client, "/memory/search", query=word, archive=True)
        assert found["results"][0]["archived"] is True
        assert (await svc.health())["status"] == "ok"


async def test_one_pass_at_a_time_a_second_request_joins_it(lc_settings: Settings) -> None:
    agent = lc_settings.agent_dir
    async with started(lc_settings) as (svc, _client):
        logs = lay_down(agent, range(40, 50))
        first, second = await asyncio.gather(
            svc.lifecycle.run("agent", "request"), svc.lifecycle.run("agent", "make_room")
        )
        assert "joined" not in first and second["joined"] is True
        assert second["started"] == first["started"]
        assert first["steps"]["daily"]["archived"] == 10
        assert_exactly_once(agent, logs)


async def test_status_answers_while_the_lifecycle_thread_is_busy(lc_settings: Settings) -> None:
    """A pass moving a year of logs holds the lifecycle's one thread for long stretches;
    status (what an operator polls to watch it) must not queue behind it."""
    agent = lc_settings.agent_dir
    async with started(lc_settings) as (svc, client):
        lay_down(agent, range(40, 45))
        busy, release = threading.Event(), threading.Event()
        held = svc.lifecycle._files.submit(lambda: busy.set() or release.wait())
        try:
            await asyncio.to_thread(busy.wait)
            pass_ = asyncio.ensure_future(svc.lifecycle.run("agent", "request"))
            body = await asyncio.wait_for(status(client), 60)  # a hang fails, not a slow box
            assert body["running"] is True
            assert body["kinds"]["daily"]["active_bytes"] > 0
            assert body["archive_index"]["state"] == "ready"
            assert not pass_.done()
        finally:
            release.set()
        await asyncio.wrap_future(held)
        assert (await pass_)["steps"]["daily"]["archived"] == 5


async def test_passes_run_on_their_schedule(lc_settings: Settings) -> None:
    agent = lc_settings.agent_dir
    settings = dataclasses.replace(lc_settings, maintain_interval=0.05)
    async with started(settings) as (svc, client):
        logs = lay_down(agent, range(40, 42))  # due after the first pass

        async def archived_by_schedule() -> bool:
            last = svc.lifecycle.runs["agent"].last
            return bool(last and last["reason"] == "schedule" and not any(
                (agent / "daily").iterdir()))  # fmt: skip

        await eventually(archived_by_schedule, "a scheduled pass archiving the new logs")
        assert (await status(client))["next_run"] is not None
        assert_exactly_once(agent, logs)


async def test_an_archive_index_that_cannot_open_is_a_health_reason(lc_settings: Settings) -> None:
    agent = lc_settings.agent_dir
    (agent / ".archive-index.sqlite").mkdir()  # in the way, and not ours to remove
    lay_down(agent, range(40, 41))
    async with started(lc_settings) as (svc, client):
        health = await svc.health()
        assert any("archive index: cannot open" in r for r in health["reasons"])
        assert (await status(client))["archive_index"]["state"] == "broken"
        found = await post(client, "/memory/search", query="deployed", archive=True)
        assert any("archive: not searchable" in d for d in found["degraded"])
        assert found["results"] == []  # the one log was archived all the same
        assert not any((agent / "daily").iterdir())


async def test_a_month_file_that_is_not_a_regular_file_holds_back_only_its_month(
    lc_settings: Settings,
) -> None:
    """A folder or link where a month file goes is that month's problem: the months after
    it are still archived, and the step answers, not fails."""
    agent = lc_settings.agent_dir
    first, second = day_name(100), day_name(40)
    assert first[:7] < second[:7]
    (agent / "archive" / "daily" / f"{first[:7]}.md").mkdir(parents=True)
    logs = lay_down(agent, range(100, 101))
    later = lay_down(agent, range(40, 41))
    async with started(lc_settings) as (_svc, client):
        lc = await status(client)
        daily = lc["last_run"]["steps"]["daily"]
        assert "error" not in daily, daily
        assert any(f"archive/daily/{first[:7]}.md" in p for p in daily["problems"])
        assert f"archive/daily/{first[:7]}.md" in lc["errors"]["daily"]  # a health reason
        assert (agent / "daily" / f"{first}.md").read_text() == logs[first]
        assert not (agent / "daily" / f"{second}.md").exists()
        held = (agent / "archive" / "daily" / f"{second[:7]}.md").read_text()
        assert later[second] in held
