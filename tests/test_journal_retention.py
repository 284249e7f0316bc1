"""Journal retention: old ordinary events keep their summary and an excerpt, their day
files move compressed below archive/journal/, and a journal at its cap makes room.

History is laid down in the past (tests/journal_history.py) as day files an older
daemon left; the step is run as the lifecycle engine runs it (``maintain``), and the
engine's ``make_room`` is stood in for where it is not part of this daemon.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Caps, Settings
from sidecar.journal import retention
from sidecar.journal.events import iso
from sidecar.journal.log import today_file
from sidecar.journal.retention import EXCERPT_CHARS
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.journal_history import DAY, History, index_state, lay_down, whole_payload
from tests.journal_trimmer import standalone

WINDOW = 30
DAYS = 300


def settings_for(settings: Settings, cap: int) -> Settings:
    caps = dataclasses.replace(Caps(), journal_tier=cap)
    return dataclasses.replace(settings, caps=caps, journal_retention_days=WINDOW)


async def started(settings: Settings) -> MemoryService:
    svc = MemoryService(settings)
    await svc.start()
    await svc.indexes.queue.wait_idle()
    for tj in svc.journal.tiers.values():
        await tj.ready.wait()
    return svc


async def first_pass(svc: MemoryService) -> dict[str, Any]:
    """The journal step's answer in the lifecycle engine's pass at start."""
    tier = svc.lifecycle.runs["agent"]

    async def done() -> bool:
        return tier.last is not None

    await eventually(done, "the engine's first pass")
    assert tier.last is not None
    return dict(tier.last["steps"]["journal"])


def stand_in_engine(svc: MemoryService) -> list[str] | None:
    """The lifecycle engine's part when it is not in this daemon: on make_room, a pass of
    the journal step now; room was made if it trimmed anything. Returns the tiers it was
    asked for as they come (None: the engine is here and hears make_room itself)."""
    heard: list[str] = []
    if svc.hooks.make_room:
        return None

    async def make_room(tier: str) -> bool:
        heard.append(tier)
        answer = await svc.journal.retention.maintain(tier, time.time(), False)
        return bool(answer["events"])

    svc.hooks.make_room.append(make_room)
    return heard


@pytest.fixture
async def history(tier_dirs: tuple[Path, Path]) -> History:
    return lay_down(tier_dirs[0], time.time(), DAYS, WINDOW)


@pytest.fixture
async def small_history(tier_dirs: tuple[Path, Path]) -> History:
    return lay_down(tier_dirs[0], time.time(), 60, WINDOW)


@pytest.fixture
async def svc(settings: Settings, history: History) -> AsyncIterator[MemoryService]:
    service = await started(settings_for(settings, history.size // 3))
    try:
        yield service
    finally:
        await service.stop()


@pytest.fixture
async def http(svc: MemoryService) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
        yield c


async def post_batch(http: TestClient, events: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """A batch, retried while the answer is a retryable 503 (maintenance under way)."""
    tries = 0
    while True:
        tries += 1
        resp = await http.post("/memory/journal", json={"events": events})
        body = await resp.json()
        if resp.status != 503 or tries == 5:
            assert resp.status == 201, body
            return body, tries
        assert resp.headers["Retry-After"], body


async def recall_one(svc: MemoryService, token: str, superseded: bool = False) -> dict[str, Any]:
    from sidecar.journal.index import Filters
    from sidecar.journal.recall import RecallQuery

    q = RecallQuery(token, 5, Filters(include_superseded=superseded))
    hits = (await svc.journal.recall(q, "agent", mark=False))["hits"]
    found = [h for h in hits if token in h["summary"]]
    assert len(found) == 1, (token, hits)
    return found[0]


def state(svc: MemoryService) -> dict[str, Any]:
    tj = svc.journal.tiers["agent"]
    assert tj.index is not None
    return index_state(tj.index.reader())


async def test_a_journal_at_three_times_its_cap_records_every_batch_and_loses_nothing(
    svc: MemoryService, http: TestClient, history: History, tier_dirs: tuple[Path, Path]
) -> None:
    root = tier_dirs[0]
    cap = svc.settings.caps.journal_tier
    assert history.size > 3 * cap - 3  # laid down at three times the cap
    heard = stand_in_engine(svc)
    ids = []
    for batch in range(8):
        events = [{"type": "task.step", "summary": f"new batch {batch} item {i}",
                   "payload": {"out": "x" * 2000}} for i in range(20)]  # fmt: skip
        body, _ = await post_batch(http, events)
        ids += body["ids"]
    assert len(ids) == 160
    assert svc.journal.retention in svc.hooks.maintenance  # the engine runs it
    assert heard is None or heard == ["agent"]  # the first batch over the cap made room
    usage = await svc.journal.retention.usage("agent")
    assert usage["active_bytes"] < cap
    assert usage["archived_bytes"] > 0
    status = (await (await http.get("/memory/status?scope=agent")).json())["journal"]
    assert status["retention"]["days"] > 200 and status["retention"]["problems"] == []
    assert status["retention"]["bytes_after"] < status["retention"]["bytes_before"] / 3
    assert status["archived_bytes"] == usage["archived_bytes"]

    for event_id in history.pinned + history.important + history.referenced:
        hit = await recall_one(svc, history.token[event_id])
        assert hit["id"] == event_id and "trimmed" not in hit
        assert hit["payload"] == history.events[event_id]["payload"]
    for event_id in history.ordinary[2:]:  # [0] is superseded, checked below
        original = history.events[event_id]
        hit = await recall_one(svc, history.token[event_id])
        assert hit["id"] == event_id and hit["trimmed"] is True
        assert hit["summary"] == original["summary"] and hit["ts"] == original["ts"]
        whole = whole_payload(json.dumps(original).encode())
        assert hit["payload"] == {"excerpt": whole[:EXCERPT_CHARS]}
        assert hit["payload_bytes"] == len(whole.encode())
    for event_id in history.recent:
        hit = await recall_one(svc, history.token[event_id])
        assert hit["payload"] == history.events[event_id]["payload"]

    # Supersession and relations hold over trimmed events.
    old, new = history.superseded
    hit = await recall_one(svc, history.token[old], superseded=True)
    assert hit["trimmed"] is True and hit["superseded_by"] == new
    resp = await http.post(
        "/memory/recall", json={"query": history.token[old], "k": 5, "mark": False}
    )
    assert all(h["id"] != old for h in (await resp.json())["hits"])
    src, dst = history.related
    resp = await http.post(
        "/memory/recall", json={"query": history.token[src], "walk": 1, "mark": False}
    )
    (hit,) = [h for h in (await resp.json())["hits"] if h["id"] == src]
    assert hit["trimmed"] is True
    assert {"id": dst, "relation": "supports"}.items() <= hit["neighbours"][0].items()

    # Every archive holds its day file as it was laid down; every event is on disk once.
    archives = sorted((root / "archive" / "journal").iterdir())
    assert len(archives) == status["retention"]["days"]
    for path in archives:
        rel = f"journal/{path.name.removesuffix('.gz')}"
        assert gzip.decompress(path.read_bytes()) == history.files[rel]
    seen: list[str] = []
    for path in sorted((root / "journal").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            record = json.loads(line)
            if record.get("kind", "event") == "event":
                seen.append(record["id"])
    assert sorted(seen) == sorted([*history.events, *ids])

    # A pass on demand finds nothing more to trim.
    resp = await http.post("/memory/maintain", json={"scope": "agent"})
    assert resp.status == 200, await resp.text()
    again = (await resp.json())["tiers"]["agent"]["steps"]["journal"]
    assert again["days"] == 0 and again["active_bytes"] == usage["active_bytes"]

    # The index is what a rebuild from the files makes.
    before = state(svc)
    assert before["fts"]  # trimmed events' words are the excerpt's
    assert len(before["problems"]) == 1  # the severity read as info, on a trimmed line
    resp = await http.post("/memory/reindex?scope=agent", json={})
    assert resp.status in (200, 202), await resp.text()
    await svc.journal.tasks.finish()
    assert state(svc) == before


async def test_a_second_pass_and_a_dry_run_change_nothing(
    history: History, tier_dirs: tuple[Path, Path]
) -> None:
    root = tier_dirs[0]
    now = time.time()
    async with standalone(root, WINDOW) as step:
        dry = await step.maintain("agent", now, dry_run=True)
        assert dry["days"] > 200 and dry["bytes_after"] < dry["bytes_before"]
        assert not (root / "archive").exists()
        assert {p.name: p.read_bytes() for p in (root / "journal").glob("*.jsonl")} == {
            rel.removeprefix("journal/"): data for rel, data in history.files.items()
        }
        done = await step.maintain("agent", now, dry_run=False)
        assert (done["days"], done["events"], done["bytes_after"]) == (
            dry["days"], dry["events"], dry["bytes_after"]
        )  # fmt: skip
        files = {p: p.read_bytes() for p in sorted(root.rglob("*.jsonl*"))}
        again = await step.maintain("agent", now + DAY, dry_run=False)
        assert again["days"] == 0 and again["problems"] == []
        assert {p: p.read_bytes() for p in sorted(root.rglob("*.jsonl*"))} == files


async def test_a_kill_after_archiving_finds_the_archive_and_goes_on(
    small_history: History, tier_dirs: tuple[Path, Path]
) -> None:
    """The state a kill between the two renames leaves: the archive in place, the day
    file whole. The next pass uses that archive rather than writing a second."""
    root = tier_dirs[0]
    rel = day_of(small_history, small_history.ordinary[5])
    (root / "archive" / "journal").mkdir(parents=True)
    archive = root / "archive" / "journal" / f"{rel.removeprefix('journal/')}.gz"
    archive.write_bytes(gzip.compress(small_history.files[rel]))
    packed = archive.read_bytes()
    async with standalone(root, WINDOW) as step:
        answer = await step.maintain("agent", time.time(), False)
    assert answer["problems"] == []
    assert archive.read_bytes() == packed  # used as it was
    assert (root / rel).read_bytes() != small_history.files[rel]  # trimmed
    assert b'"trimmed"' in (root / rel).read_bytes()


async def test_a_truncated_archive_is_reported_and_its_day_left_whole(
    settings: Settings, small_history: History, tier_dirs: tuple[Path, Path]
) -> None:
    """Through the daemon: the engine's pass at start meets the damaged archive."""
    root = tier_dirs[0]
    rel = day_of(small_history, small_history.ordinary[5])
    (root / "archive" / "journal").mkdir(parents=True)
    archive = root / "archive" / "journal" / f"{rel.removeprefix('journal/')}.gz"
    packed = gzip.compress(small_history.files[rel])
    archive.write_bytes(packed[: len(packed) // 2])
    svc = await started(settings_for(settings, 1 << 30))
    try:
        answer = await first_pass(svc)
        (problem,) = answer["problems"]
        assert archive.name in problem and "not a whole gzip file" in problem
        assert answer["degraded"].startswith("1 journal day file(s) left whole")
        assert "Move the damaged archive" in problem
        assert (root / rel).read_bytes() == small_history.files[rel]  # nothing derived from it
        assert archive.read_bytes() == packed[: len(packed) // 2]
        assert answer["days"] > 20  # the other days were trimmed
        health = await svc.journal.health()
        assert any("retention left 1 day file(s) whole" in r for r in health.reasons)
        status = (await svc.journal.status("agent"))["journal"]
        assert status["retention"]["problems"] == [problem]
    finally:
        await svc.stop()


async def test_a_hand_edited_trimmed_line_is_read_as_trimmed_and_reported(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    root = tier_dirs[0]
    (root / "journal").mkdir()
    ts = "2025-01-02T03:04:05.000Z"
    lines = [
        {"id": "0190a7e0-0000-7000-8000-000000000001", "ts": ts, "recorded_at": ts,
         "type": "task.step", "summary": "edited by hand", "payload": {"excerpt": "abc"},
         "trimmed": "yes"},
        {"id": "0190a7e0-0000-7000-8000-000000000002", "ts": ts, "recorded_at": ts,
         "type": "task.step", "summary": "as retention wrote it", "payload": {"excerpt": "de"},
         "trimmed": {"payload_bytes": 9000, "at": ts}},
    ]  # fmt: skip
    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    (root / "journal" / "2025-01-02.jsonl").write_bytes(data)
    svc = await started(settings_for(settings, 1 << 30))
    try:
        listing = await svc.journal.listing("agent", _all(), None, 10)
        first, second = listing["events"]
        assert (first["trimmed"], first["payload_bytes"]) == (True, None)
        assert (second["trimmed"], second["payload_bytes"]) == (True, 9000)
        status = (await svc.journal.status("agent"))["journal"]
        (problem,) = status["problems"]
        assert problem["line"] == 1 and "'trimmed' is not" in problem["error"]
        answer = await svc.journal.retention.maintain("agent", time.time(), False)
        assert answer["days"] == 0  # a trimmed line is never cut again
        assert (root / "journal" / "2025-01-02.jsonl").read_bytes() == data
    finally:
        await svc.stop()


async def test_a_full_journal_with_nothing_to_trim_says_what_to_do(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    svc = await started(settings_for(settings, 30_000))
    heard = stand_in_engine(svc)
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as http:
            event = {"type": "task.step", "summary": "today", "payload": {"o": "y" * 9000}}
            for _ in range(3):
                resp = await http.post("/memory/journal", json=event)
                assert resp.status == 201, await resp.text()
            resp = await http.post("/memory/journal", json=event)
            body = await resp.json()
            assert resp.status == 422 and body["error"] == "journal_full"
            assert "retention found nothing more to trim" in body["detail"]
            assert "--journal-retention-days" in body["detail"]
            assert heard is None or heard == ["agent"]
    finally:
        await svc.stop()


def day_of(history: History, event_id: str) -> str:
    (rel,) = [rel for rel, data in history.files.items() if event_id.encode() in data]
    return rel


async def test_an_archive_over_its_cap_leaves_the_days_whole(
    small_history: History, tier_dirs: tuple[Path, Path]
) -> None:
    root = tier_dirs[0]
    async with standalone(root, WINDOW, dataclasses.replace(Caps(), journal_archive=1000)) as step:
        answer = await step.maintain("agent", time.time(), False)
    assert answer["days"] == 0 and answer["problems"]
    assert all("--cap-journal-archive-bytes" in p for p in answer["problems"])
    for rel, data in small_history.files.items():
        assert (root / rel).read_bytes() == data


async def test_room_made_but_not_enough_is_a_retryable_503(
    settings: Settings, tier_dirs: tuple[Path, Path]
) -> None:
    """A make_room listener that says room was made, when the journal is still full: the
    append is tried once more, then answered 503 with Retry-After, never a lasting 422."""
    svc = await started(settings_for(settings, 20_000))
    asked: list[str] = []

    async def made_some(tier: str) -> bool:
        asked.append(tier)
        return True

    svc.hooks.make_room.insert(0, made_some)
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as http:
            event = {"type": "task.step", "summary": "today", "payload": {"o": "y" * 9000}}
            for _ in range(2):
                assert (await http.post("/memory/journal", json=event)).status == 201
            resp = await http.post("/memory/journal", json=event)
            body = await resp.json()
            assert resp.status == 503 and body["error"] == "journal_busy", body
            assert resp.headers["Retry-After"] == "2"
            assert asked == ["agent"]
    finally:
        await svc.stop()


async def test_an_event_recalled_while_its_day_is_archived_keeps_the_day_whole(
    small_history: History, tier_dirs: tuple[Path, Path]
) -> None:
    """Between archiving a day (off the journal's thread) and replacing it, recall used
    one of its events: the replace is refused, the day stays whole for the next pass."""
    root = tier_dirs[0]
    event_id = small_history.ordinary[5]
    rel = day_of(small_history, event_id)
    async with standalone(root, WINDOW) as step:
        tj = step.tiers["agent"]
        cutoff = time.time() - WINDOW * DAY
        due = await tj.run(retention.due_events, tj, rel, cutoff, retention.Kept())
        assert event_id in due.values()
        day = retention.prepare_day(root, rel, due, "2026-01-01T00:00:00Z", retention.Kept())
        assert day is not None
        retention.archive_day(root, day, 1 << 30)
        assert day.plan.problem is None
        await tj.append(today_file(), [{"kind": "ref", "ids": [event_id], "at": iso(time.time())}])
        with pytest.raises(retention.Changed, match="its events changed"):
            await tj.run(retention.replace_day, tj, day, cutoff)
        assert (root / rel).read_bytes() == small_history.files[rel]
        answer = await step.maintain("agent", time.time(), False)
        assert answer["problems"] == [] and answer["kept"]["referenced"] >= 1
        assert tj.index is not None
        (row,) = tj.index.fetch("id", [event_id])
        assert row.trimmed is None
        assert json.loads(row.payload) == small_history.events[event_id]["payload"]


def _all() -> Any:
    from sidecar.journal.index import Filters

    return Filters(include_superseded=True, include_expired=True)
