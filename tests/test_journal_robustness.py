"""No line on disk and no timestamp in a request stops the journal: values that do not fit
are read as defaults and listed, requests get a 400 naming the field, a partial line is
ended and reported, and a journal that cannot open leaves the daemon answering."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.journal.index import FILENAME
from sidecar.service import MemoryService
from tests.sidecar_process import SidecarProcess
from tests.test_crew import lead_and_member
from tests.test_journal import day_file, iso, recall, record, started, status

PAST_9999 = "9999-12-31T23:59:59-23:59"  # a valid ISO 8601 string, in the year 10000 in UTC
HUGE = 10**400  # valid JSON; float() of it overflows


def event(summary: str, **fields: Any) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "ts": iso(), "recorded_at": iso(), "type": "tool.call",
            "summary": summary, "payload": {}, **fields}  # fmt: skip


def write_lines(path: Path, *records: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


async def served(settings: Settings) -> tuple[MemoryService, TestClient]:
    svc = await started(settings)
    client = TestClient(TestServer(create_app(svc), host="127.0.0.1"))
    await client.start_server()
    return svc, client


# -- finding 1: values that do not fit ------------------------------------------------


async def test_history_with_values_that_do_not_fit_keeps_its_events(settings: Settings) -> None:
    sound = event("alpha deploy went fine")
    huge = event("beta deploy with an importance of 400 digits", importance=HUGE)
    late = event("gamma deploy stamped past the year 9999", ts=PAST_9999)
    odd = event("delta deploy with odd fields", priority=["pin"], severity="fatal",
                payload=[1], session_id=5, valid_until=PAST_9999)  # fmt: skip
    relation = {"kind": "relation", "src": sound["id"], "dst": huge["id"],
                "relation": "supports", "weight": HUGE, "at": iso()}  # fmt: skip
    surrogate = event("epsilon deploy \ud800 not storable")
    past = settings.agent_dir / "journal" / "2026-01-15.jsonl"
    write_lines(past, sound, huge, late)
    write_lines(day_file(settings.agent_dir), odd, relation, surrogate)
    today = f"journal/{day_file(settings.agent_dir).name}"
    svc, client = await served(settings)
    try:
        journal = await status(client)
        assert journal["events"] == 4
        lines = {(p["file"], p["line"]): p["error"] for p in journal["problems"]}
        old = "journal/2026-01-15.jsonl"
        assert sorted(lines) == sorted([(old, 2), (old, 3), (today, 1), (today, 2), (today, 3)])
        assert "'importance'" in lines[old, 2] and "kept" in lines[old, 2]
        assert "'ts'" in lines[old, 3] and "'weight'" in lines[today, 2]
        assert all(f"'{f}'" in lines[today, 1] for f in ("priority", "severity", "payload",
                                                          "session_id", "valid_until"))  # fmt: skip
        resp = await client.get("/memory/journal?limit=10")
        assert resp.status == 200, await resp.text()
        listed = {e["summary"]: e for e in (await resp.json())["events"]}
        gamma = listed["gamma deploy stamped past the year 9999"]
        assert gamma["ts"] == gamma["recorded_at"]
        delta = listed["delta deploy with odd fields"]
        assert (delta["severity"], delta["payload"], delta["session_id"]) == ("info", {}, "default")
        hits = (await recall(client, "deploy", walk=1, k=10, mark=False))["hits"]
        assert len(hits) == 4
        beta = next(h for h in hits if h["id"] == huge["id"])
        assert beta["neighbours"][0]["weight"] == 1.0
        resp = await client.get("/memory/context?query=deploy")
        assert resp.status == 200 and "gamma deploy" in await resp.text()
    finally:
        await client.close()
        await svc.stop()


async def test_a_line_appended_while_running_does_not_fail_appends(settings: Settings) -> None:
    svc, client = await served(settings)
    try:
        await record(client, type="tool.call", summary="first")
        write_lines(day_file(settings.agent_dir), event("by hand", importance=HUGE),
                    {"kind": "relation", "src": "a", "dst": "b", "relation": "supports",
                     "weight": -HUGE, "at": iso()})  # fmt: skip
        for n in range(3):
            await record(client, type="tool.call", summary=f"after the odd line {n}")
        journal = await status(client)
        assert journal["events"] == 5
        assert [p["line"] for p in journal["problems"]] == [2, 3]
    finally:
        await client.close()
        await svc.stop()


def test_the_daemon_answers_over_a_400_digit_importance(tier_dirs: tuple[Path, Path]) -> None:
    agent, crew = tier_dirs
    write_lines(day_file(agent), event("a deploy with a huge importance", importance=HUGE))
    proc = SidecarProcess(agent, crew).start()
    try:
        assert proc.get("/healthz")["status"] == "ok"
        hits = proc.request("POST", "/memory/recall", {"query": "deploy", "mark": False})["hits"]
        assert [h["summary"] for h in hits] == ["a deploy with a huge importance"]
    finally:
        proc.kill()


def test_a_journal_that_cannot_open_leaves_the_daemon_answering(
    tier_dirs: tuple[Path, Path],
) -> None:
    """Whatever fails in the journal's or the facts' start-up: /healthz answers and says
    so, their routes say 503, the log has the errors (here: the journal's index path and
    the crew facts log are directories)."""
    agent, crew = tier_dirs
    (agent / FILENAME).mkdir()
    (crew / "facts" / "log.jsonl").mkdir(parents=True)
    proc = SidecarProcess(agent, crew).start()
    try:
        health = proc.get("/healthz")
        assert health["status"] == "degraded"
        assert any("agent: journal failed to open" in r for r in health["reasons"])
        assert any("crew: facts failed to open" in r for r in health["reasons"])
        assert proc.get("/memory/status?scope=agent")["journal"]["error"]
        assert proc.get("/memory/status?scope=crew")["facts"]["error"]
        code, body = proc.call("POST", "/memory/journal", {"type": "a.b", "summary": "x"})
        assert (code, body["error"]) == (503, "journal_unavailable")
        code, body = proc.call("POST", "/memory/facts", {"query": "x", "scope": "crew"})
        assert (code, body["error"]) == (503, "facts_unavailable")
        code, body = proc.call("POST", "/memory/journal", {"type": "a.b", "summary": "x",
                                                           "scope": "crew"})  # fmt: skip
        assert code == 201, body  # the crew journal is fine
        assert proc.search("anything") == []  # the notes are served all the same
        log = proc.log_path.read_text()
        assert "journal failed to open" in log and "facts failed to open" in log
    finally:
        proc.kill()


# -- finding 5: timestamps out of range ----------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "error"),
    [
        ("POST", "/memory/journal", {"type": "a.b", "summary": "x", "valid_until": PAST_9999},
         "bad_valid_until"),
        ("POST", "/memory/journal", {"type": "a.b", "summary": "x", "ts": PAST_9999}, "bad_ts"),
        ("POST", "/memory/journal", {"events": [{"type": "a.b", "summary": "x",
                                                 "ts": "0001-01-01T00:00:00+23:59"}]}, "bad_ts"),
        ("GET", f"/memory/journal?since={PAST_9999.replace('+', '%2B')}", None, "bad_since"),
        ("GET", "/memory/journal?until=9999-12-31T23:59:59.999999%2B00:00", None, "bad_until"),
        ("POST", "/memory/recall", {"query": "x", "since": PAST_9999}, "bad_since"),
        ("POST", "/memory/recall", {"query": "x", "until": PAST_9999}, "bad_until"),
        ("POST", "/memory/facts", {"query": "x", "as_of": PAST_9999}, "bad_as_of"),
    ],
)  # fmt: skip
async def test_timestamps_that_have_no_utc_time_are_a_400_naming_the_field(
    client: TestClient,
    settings: Settings,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    error: str,
) -> None:
    resp = await client.request(method, path, json=body)
    answer = await resp.json()
    assert (resp.status, answer["error"]) == (400, error), answer
    assert error.removeprefix("bad_") in answer["detail"] and "9999" in answer["detail"]
    assert not day_file(settings.agent_dir).exists()


def test_a_members_crew_recall_refuses_a_since_past_9999(tmp_path: Path) -> None:
    with lead_and_member(tmp_path, {}, {}) as (_, member):
        query = {"query": "outage", "scope": "crew_shared", "since": PAST_9999}
        code, body = member.call("POST", "/memory/recall", query)
        assert (code, body["error"]) == (400, "bad_since"), body
        code, body = member.call("POST", "/memory/recall", {**query, "since": iso()})
        assert code == 200, body


# -- finding 13: the batch wrapper --------------------------------------------------------


async def test_an_unknown_field_beside_a_batch_is_refused(
    client: TestClient, settings: Settings
) -> None:
    answer = await record(client, 400, events=[{"type": "a.b", "summary": "x"}], bogus=1)
    assert answer["error"] == "unknown_field" and "bogus" in answer["detail"]
    assert not day_file(settings.agent_dir).exists()
    await record(client, events=[{"type": "a.b", "summary": "x"}], scope="agent")


# -- finding 14: a partial line appended by hand -------------------------------------------


async def test_a_partial_line_by_hand_is_ended_and_reported(settings: Settings) -> None:
    svc, client = await served(settings)
    path = day_file(settings.agent_dir)
    try:
        await record(client, type="tool.call", summary="before the hand edit")
        with path.open("ab") as f:
            f.write(b'{"id": "x", "summary": "half a li')
        (mine,) = (await record(client, type="tool.call", summary="the daemon's own"))["ids"]
        whole = event("a whole event without its newline")
        with path.open("ab") as f:
            f.write(json.dumps(whole).encode())
        await record(client, type="tool.call", summary="the daemon's next")
        raw = path.read_bytes().splitlines()
        assert raw[1] == b'{"id": "x", "summary": "half a li'
        assert json.loads(raw[2])["id"] == mine  # intact, on a line of its own
        assert json.loads(raw[3])["id"] == whole["id"]
        journal = await status(client)
        assert journal["events"] == 4  # the whole one is kept
        problems = {p["line"]: p["error"] for p in journal["problems"]}
        assert sorted(problems) == [2, 4] and journal["unparsed_lines"] == 2
        assert all("no newline" in e for e in problems.values())
    finally:
        await client.close()
        await svc.stop()


async def test_working_notes_with_a_ttl_that_does_not_fit_do_not_stop_the_sleep_pass(
    settings: Settings,
) -> None:
    notes = [event(f"working note {n}", type="working.note", payload={"ttl_s": ttl})
             for n, ttl in enumerate(("soon", HUGE, [1]))]  # fmt: skip
    write_lines(day_file(settings.agent_dir), *notes)
    svc, client = await served(settings)
    try:
        resp = await client.post("/memory/consolidate", json={"scope": "agent"})
        assert resp.status == 200, await resp.text()
    finally:
        await client.close()
        await svc.stop()
