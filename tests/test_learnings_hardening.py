"""Learnings files that do not fit, and writers that race (issue 29, items 4-7).

Real markdown files, a real SQLite index, a real aiohttp server on loopback; the
other writer of a race is a real separate process started at the one moment that
matters, never a timing guess.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from sidecar import strict_yaml
from sidecar.config import Settings
from sidecar.index.chunking import parse_front_matter, split_lines
from sidecar.learnings import compaction, entries
from sidecar.service import MemoryService
from tests.sidecar_process import SidecarProcess
from tests.test_durable_replace import hand_append
from tests.test_learnings import end, put, search, synced


def alias_bomb(levels: int, field: str) -> str:
    """Front matter whose ``field`` is ten aliases of ten aliases of ... ``levels`` deep."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]")
    lines.append(f"{field}: *a{levels - 1}")
    return "\n".join(lines)


async def status(client: TestClient) -> dict[str, Any]:
    resp = await client.get("/memory/status?scope=agent")
    assert resp.status == 200
    return dict(await resp.json())


# -- item 4: anchors and aliases -------------------------------------------------------------


async def test_an_alias_bomb_in_a_learnings_file_is_refused_and_reported_short(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    bomb = alias_bomb(5, "type")  # 100,000 strings once expanded
    put(settings.agent_dir, "learnings/bomb.md",
        f"---\n{bomb}\n---\nThe staging deploy needs the VPN up.\n")  # fmt: skip
    await synced(service)

    got = await status(client)
    problems = got["learnings"]["problems"]
    assert [(p["file"], p["line"]) for p in problems] == [("learnings/bomb.md", 1)]
    assert "anchors and aliases" in problems[0]["error"]
    assert len(json.dumps(got)) < 20_000
    (hit,) = (await search(client, "staging VPN"))["hits"]
    assert (hit["type"], hit["text"]) == ("declarative", "The staging deploy needs the VPN up.")


def test_a_single_anchor_or_alias_is_refused_everywhere_front_matter_is_read() -> None:
    for block in ("id: &x one\ntype: *x", "base: &b {a: 1}\nother:\n  <<: *b", "id: &x one"):
        with pytest.raises(strict_yaml.Refused):
            strict_yaml.load(block)
        (entry,), problems = entries.parse("learnings/f.md", f"---\n{block}\n---\nBody.\n")
        assert not entry.fields_ok
        assert [p.error for p in problems] == [
            "front matter is not valid YAML (anchors and aliases (& and *) are not allowed "
            "in front matter)"
        ]
    assert strict_yaml.load("title: 'a & b * c'\ntags: [x]") == {
        "title": "a & b * c",
        "tags": ["x"],
    }


def test_note_front_matter_with_an_alias_bomb_is_no_metadata() -> None:
    lines = split_lines(f"---\n{alias_bomb(7, 'tags')}\ntitle: Deploys\n---\n# Deploys\n")
    assert parse_front_matter(lines) == (11, {})


async def test_a_problem_quotes_only_an_excerpt_of_a_long_value(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    block = f"type: {'x' * 50_000}\ncreated: '{'9' * 5_000}'"
    put(settings.agent_dir, "learnings/long.md", f"---\n{block}\n---\nKeep the VPN up.\n")
    await synced(service)
    problems = (await status(client))["learnings"]["problems"]
    assert len(problems) == 2
    assert all(len(p["error"]) <= entries.MAX_PROBLEM_CHARS for p in problems)
    assert problems[0]["error"].startswith("type: 'xxxx")


async def test_status_lists_the_first_problems_and_counts_them_all(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    """One problem an entry: 14 bytes of bad front matter a time made a 256 KiB file 18,000
    problems, each file of them another 1.5 MB of every status answer."""
    bad = "---\nx: [\n---\nKeep the VPN up.\n\n" * 5_000
    for name in ("a", "b"):
        put(settings.agent_dir, f"learnings/{name}.md", bad)
    await synced(service)
    resp = await client.get("/memory/status?scope=agent")
    assert resp.status == 200 and len(await resp.read()) < 20_000
    learnings = (await resp.json())["learnings"]
    assert learnings["problem_count"] == 10_000
    listed = learnings["problems"]
    assert [(p["file"], p["line"]) for p in listed] == [("learnings/a.md", 1 + 5 * n)
                                                        for n in range(50)]  # fmt: skip


async def test_what_an_older_version_read_from_a_file_is_read_again(
    settings: Settings,
) -> None:
    """An index keeps each file's entries and problems until the file changes: what an
    older parser stored (an alias bomb's problem text, expanded to 72 MB) stayed in every
    status answer after an upgrade, though the file was never touched again."""
    put(settings.agent_dir, "learnings/old.md",
        "---\nid: old\ntype: nonsense\n---\nRotate the keys.\n")  # fmt: skip
    svc = MemoryService(settings)
    await svc.start()
    await svc.stop()
    older = {"entries": [{"id": "old", "type": "declarative", "domain": "task",
                          "importance": 0.5, "reinforcement_count": 10**30,
                          "last_reinforced": None, "status": "active", "created": None,
                          "institutional": False, "line": 1, "end_line": 5, "editable": True}],
             "problems": [{"line": 1, "error": "type: " + "'lol', " * 200_000}]}  # fmt: skip
    with sqlite3.connect(settings.agent_dir / "learnings.sqlite") as conn:
        changed = conn.execute("UPDATE files SET metadata = ? WHERE path = 'learnings/old.md'",
                               (json.dumps(older),)).rowcount  # fmt: skip
    assert changed == 1
    svc = MemoryService(settings)
    await svc.start()
    try:
        learnings = (await svc.learnings.status("agent"))["learnings"]
        assert learnings is not None
        (problem,) = learnings["problems"]
        assert problem["error"] == "type: 'nonsense' is not one of " + ", ".join(entries.TYPES)
        assert svc.learnings.tiers["agent"].entry("learnings/old.md", 1)["reinforcement_count"] == 0
    finally:
        await svc.stop()


# -- item 5: numeric fields that do not fit ---------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reinforcement_count", "9" * 401),
        ("reinforcement_count", "1000000001"),
        ("reinforcement_count", "-3"),
        ("reinforcement_count", "2.5"),
        ("reinforcement_count", "'7'"),
        ("reinforcement_count", ".inf"),
        ("importance", "9" * 401),
        ("importance", ".nan"),
        ("importance", "-0.5"),
        ("importance", "[1]"),
    ],
)
async def test_a_numeric_field_that_does_not_fit_reads_as_its_default(
    field: str, value: str, client: TestClient, service: MemoryService, settings: Settings
) -> None:
    put(settings.agent_dir, "learnings/odd.md",
        f"---\nid: odd\n{field}: {value}\n---\nRotate the ledger keys monthly.\n")  # fmt: skip
    await synced(service)

    (hit,) = (await search(client, "ledger keys", session_id="s"))["hits"]
    assert (hit["id"], hit["reinforcement_count"], hit["importance"]) == ("odd", 0, 0.5)
    (problem,) = (await status(client))["learnings"]["problems"]
    assert problem["error"].startswith(f"{field}: ")
    assert len(problem["error"]) <= entries.MAX_PROBLEM_CHARS
    assert (await end(client, "s"))["reinforced"] == {"agent": 1}
    (entry,), _ = entries.parse("f.md", (settings.agent_dir / "learnings/odd.md").read_text())
    assert entry.reinforcement_count == 1  # the default, reinforced once


# -- item 6: compaction and concurrent learns ------------------------------------------------

SPENT = """\
---
id: old-rule
status: retired
---
Deploys used to go out on Fridays.

---
id: keep
---
Deploys go out on Tuesdays.
"""


def archive_ids(root: Path) -> list[str]:
    found, _ = entries.parse(
        "a.md", (root / "learnings/archive").glob("*.md").__next__().read_text()
    )
    return [e.id for e in found]


async def test_an_entry_is_archived_once_when_the_file_changed_after_planning(
    service: MemoryService, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is edited (not appended to) between the plan and the rewrite: the rewrite
    is left for the next run, and that run must not archive the same entry again."""
    service.learnings.upkeep.stop()  # only the compactions this test runs, in its order
    path = put(settings.agent_dir, "learnings/deploys.md", SPENT)
    await synced(service)
    real_plan = compaction.plan
    edits = 0

    def plan_then_edit(rel: str, text: str, today: Any) -> compaction.Plan:
        nonlocal edits
        planned = real_plan(rel, text, today)
        if edits == 0:
            edits += 1
            sed = ["sed", "-i", "s/Tuesdays\\./Tuesdays, after standup./", str(path)]
            subprocess.run(sed, check=True)  # an editor's save: a new file renamed over it
        return planned

    monkeypatch.setattr(compaction, "plan", plan_then_edit)
    await service.learnings.compact("agent", "learnings/deploys.md", dry_run=False)
    await service.learnings.compact("agent", "learnings/deploys.md", dry_run=False)

    assert edits == 1
    assert archive_ids(settings.agent_dir) == ["old-rule"]
    kept, _ = entries.parse("f.md", path.read_text())
    assert [(e.id, e.text) for e in kept] == [
        ("keep", "Deploys go out on Tuesdays, after standup.")
    ]


async def test_an_append_after_planning_is_kept_and_the_rewrite_still_happens(
    service: MemoryService, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.learnings.upkeep.stop()  # only the compactions this test runs, in its order
    path = put(settings.agent_dir, "learnings/deploys.md", SPENT)
    await synced(service)
    real_plan = compaction.plan

    def plan_then_append(rel: str, text: str, today: Any) -> compaction.Plan:
        planned = real_plan(rel, text, today)
        hand_append(path, "\n---\nid: late\n---\nTag every release.")
        return planned

    monkeypatch.setattr(compaction, "plan", plan_then_append)
    await service.learnings.compact("agent", "learnings/deploys.md", dry_run=False)

    assert archive_ids(settings.agent_dir) == ["old-rule"]
    kept, _ = entries.parse("f.md", path.read_text())
    assert [e.id for e in kept] == ["keep", "late"]


async def test_an_entry_reinforced_between_plan_and_rewrite_is_archived_once(
    client: TestClient, service: MemoryService, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session ends (its reinforcement edits the file in place) after compaction planned:
    the rewrite is left for the next run, which finds the merged-away entry with one more
    reinforcement. It is the same entry, already archived: not archived again."""
    service.learnings.upkeep.stop()  # only the compactions this test runs, in its order
    path = put(settings.agent_dir, "learnings/deploys.md",
               "---\nid: first\n---\nDeploys go out on Tuesdays after the standup meeting.\n\n"
               "---\nid: second\n---\nDeploys go out on Tuesdays after the standup meeting "
               "ends.\n")  # fmt: skip
    await synced(service)
    assert (await search(client, "deploys standup", session_id="s"))["count"] == 2
    loop = asyncio.get_running_loop()
    real_plan = compaction.plan
    ended: list[dict[str, Any]] = []

    def plan_then_reinforce(rel: str, text: str, today: Any) -> compaction.Plan:
        planned = real_plan(rel, text, today)
        if not ended:  # on the planning thread; the session ends on the loop meanwhile
            end = service.learnings.end_session("s")
            ended.append(asyncio.run_coroutine_threadsafe(end, loop).result())
        return planned

    monkeypatch.setattr(compaction, "plan", plan_then_reinforce)
    await service.learnings.compact("agent", "learnings/deploys.md", dry_run=False)
    await service.learnings.compact("agent", "learnings/deploys.md", dry_run=False)

    assert ended[0]["reinforced"] == {"agent": 2}
    assert archive_ids(settings.agent_dir) == ["second"]
    (kept,), _ = entries.parse("f.md", path.read_text())
    assert (kept.id, kept.reinforcement_count) == ("first", 2)  # its own, and the merged one's


async def test_forty_concurrent_learns_archive_each_entry_once(
    client: TestClient, settings: Settings
) -> None:
    texts = [f"The payments service {n} restarts cleanly after a config change." for n in range(40)]
    answers = await asyncio.gather(
        *(client.post("/memory/learnings", json={"text": t, "file": "ops"}) for t in texts)
    )
    assert [r.status for r in answers] == [201] * 40
    ids = archive_ids(settings.agent_dir)
    assert len(ids) == len(set(ids))
    live, _ = entries.parse("f.md", (settings.agent_dir / "learnings/ops.md").read_text())
    assert len(live) + len(ids) == 40  # each entry in one place: the file or the archive
    assert len(live) == 1


# -- item 7: reinforcement and a hand edit ---------------------------------------------------


async def test_reinforcement_keeps_a_line_appended_while_it_writes_back(
    client: TestClient, service: MemoryService, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = put(settings.agent_dir, "learnings/deploys.md",
               "---\nid: vpn\n---\nThe staging deploy needs the VPN up.\n")  # fmt: skip
    await synced(service)
    await search(client, "staging VPN", session_id="s")
    real_edit = entries.edit_fields
    calls = 0

    def edit_while_appended(text: str, line: int, changes: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:  # after the write-back read the file, before it renames
            hand_append(path, "Connect with `vpn up staging`.")
        return real_edit(text, line, changes)

    monkeypatch.setattr(entries, "edit_fields", edit_while_appended)
    assert (await end(client, "s"))["reinforced"] == {"agent": 1}

    assert calls == 2
    (entry,), _ = entries.parse("f.md", path.read_text())
    assert entry.reinforcement_count == 1
    assert entry.text.endswith("Connect with `vpn up staging`.")
    (hit,) = (await search(client, "vpn up staging"))["hits"]  # the index has what was placed
    assert hit["reinforcement_count"] == 1 and hit["text"] == entry.text


def test_the_round_trip_editor_refuses_an_aliased_block_too() -> None:
    text = "---\nid: x\nbase: &b [1, 2]\nmore: *b\nreinforcement_count: |\n  1\n---\nBody.\n"
    with pytest.raises(strict_yaml.Refused):
        entries.edit_fields(text, 1, {"reinforcement_count": 2})


def test_front_matter_nested_deeper_than_any_field_needs_is_refused_not_a_crash(
    tier_dirs: tuple[Path, Path],
) -> None:
    """Without an alias a block can still cost: 60,000 ``[`` (120 KB) made the YAML
    composer recurse until the daemon died of SIGSEGV at start-up, and a flow nested
    50,000 deep took libyaml 18 s to scan. Nesting is refused past a few levels, early."""
    agent, crew = tier_dirs
    deep = "[" * 60_000 + "]" * 60_000
    put(agent, "learnings/deep.md", f"---\nid: deep\ntype: {deep}\n---\nRotate the keys.\n")
    put(agent, "notes/deep.md", f"---\ntags:\n{'- ' * 60_000}x\n---\n# Deep\nRotate the keys.\n")
    proc = SidecarProcess(agent, crew).start()
    try:
        problems = proc.get("/memory/status?scope=agent")["learnings"]["problems"]
        assert [(p["file"], p["line"]) for p in problems] == [("learnings/deep.md", 1)]
        assert "nested" in problems[0]["error"]
        hits = proc.request("POST", "/memory/learnings/search", {"query": "rotate keys"})["hits"]
        assert [(h["text"], h["type"]) for h in hits] == [("Rotate the keys.", "declarative")]
        assert [h["file"] for h in proc.search("rotate keys")] == ["notes/deep.md"]
    finally:
        proc.kill()
    with pytest.raises(strict_yaml.Refused):
        strict_yaml.load("a: " + "[" * 100_000 + "]" * 100_000)


async def test_open_sessions_are_bounded_and_the_idlest_ends_as_it_would_have(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    """Every search under a new session id opened one, kept until 30 idle minutes passed:
    a crew-token holder could grow them without bound. Past the bound the idlest session
    ends at once, and reinforces what it was shown, as its idle end would have."""
    path = put(settings.agent_dir, "learnings/vpn.md",
               "---\nid: vpn\n---\nThe staging deploy needs the VPN up.\n")  # fmt: skip
    await synced(service)
    sessions = service.learnings.sessions
    sessions.max_open = 3
    for n in range(5):
        assert (await search(client, "staging VPN", session_id=f"s{n}"))["count"] == 1
    assert sorted(sid for _, sid in sessions.open) == ["s2", "s3", "s4"]
    (entry,), _ = entries.parse("f.md", path.read_text())
    assert entry.reinforcement_count == 2


def test_a_base_60_number_of_many_groups_is_refused_before_it_is_built() -> None:
    """YAML 1.1 builds ``1:59:59:...`` digit by digit in quadratic time (40,000 groups
    took 0.85 s; a 16 MiB note hours): refused from the parse events. A time of day, a
    quoted one and a URL stay what they were."""
    long = "1" + ":59" * 40_000
    for block in (f"reinforcement_count: {long}", f"created: !!int {long}"):
        with pytest.raises(strict_yaml.Refused, match="base-60"):
            strict_yaml.load(block)
    lines = split_lines(f"---\ntitle: Deploys\ntags: [a]\nat: {long}\n---\n# Deploys\n")
    assert parse_front_matter(lines) == (5, {})
    assert strict_yaml.load(f"at: 1:30:00\nq: '{long[:40]}'\nurl: http://h:8080/x") == {
        "at": 5400,
        "q": long[:40],
        "url": "http://h:8080/x",
    }
