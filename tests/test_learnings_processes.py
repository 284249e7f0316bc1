"""Learnings across real processes: crew learnings through a real lead and member, and
SIGKILL while sessions end and their reinforcements are written back."""

from __future__ import annotations

import http.client
import json
import random
import threading
from pathlib import Path

from sidecar.learnings import entries
from tests.sidecar_process import SidecarProcess
from tests.test_crew import AUTH, lead_and_member

ROUNDS = 4
ACCEPT_JSON = {"Accept": "application/json"}


def test_crew_learnings_come_from_the_lead_which_reinforces_them(tmp_path: Path) -> None:
    with lead_and_member(tmp_path, {}, {}) as (lead, member):
        crew = lead.request("POST", "/memory/learnings", {
            "scope": "crew", "type": "directive", "file": "payments",
            "text": "Page the payments on-call before touching the ledger database.",
        })  # fmt: skip
        own = member.request("POST", "/memory/learnings", {
            "type": "corrective", "file": "payments",
            "text": "The ledger database rejects writes during the nightly payments export.",
        })  # fmt: skip
        status, body = member.call("POST", "/memory/learnings", {"scope": "crew", "text": "no"})
        assert (status, body["error"]) == (403, "crew_read_only")

        query = {"query": "ledger database payments", "session_id": "m-1"}
        found = member.request("POST", "/memory/learnings/search", query)
        by_id = {h["id"]: h for h in found["hits"]}
        assert (by_id[crew["id"]]["tier"], by_id[crew["id"]]["scope_factor"]) == ("crew", 1.2)
        assert (by_id[own["id"]]["tier"], by_id[own["id"]]["scope_factor"]) == ("agent", 1.5)

        block = member.call("GET", "/memory/context", headers=ACCEPT_JSON)[1]["text"]
        assert "Page the payments on-call" not in block  # a directive, not institutional
        lead.request("POST", "/memory/learnings", {
            "scope": "crew", "type": "directive", "institutional": True, "file": "rules",
            "text": "Freeze deploys during the quarterly audit.",
        })  # fmt: skip
        standing = member.call("GET", "/memory/context", headers=ACCEPT_JSON)[1]["text"]
        assert standing.startswith("[INSTITUTIONAL LEARNINGS]") and "quarterly audit" in standing

        ended = member.request("POST", "/memory/session/end", {"session_id": "m-1"})
        assert ended["reinforced"] == {"agent": 1}
        shared = tmp_path / "shared" / ".memory" / "learnings" / "payments.md"
        (entry,), _ = entries.parse("learnings/payments.md", shared.read_text())
        assert entry.reinforcement_count == 1  # the lead wrote it, told by the member

        lead.kill()
        status, body = member.call("POST", "/memory/learnings/search", query)
        assert status == 200, body
        assert [h["id"] for h in body["hits"]] == [own["id"]]
        assert any("unreachable" in d for d in body["degraded"])


def _count(path: Path) -> int:
    (entry,), _ = entries.parse("learnings/x.md", path.read_text())
    return entry.reinforcement_count


def test_the_crew_port_reinforces_crew_entries_once_per_session_and_never_the_leads_own(
    tmp_path: Path,
) -> None:
    """Sessions are namespaced by caller: a crew-token holder ending a session id the lead
    used locally reinforces nothing; one crew session reinforces an entry once, however
    often it is shown the entry and ended again."""
    with lead_and_member(tmp_path, {}, {}) as (lead, member):
        crew_url = member.args[member.args.index("--lead-url") + 1]
        lead.request("POST", "/memory/learnings", {
            "file": "vault", "text": "The vault token rotates every Monday at noon.",
        })  # fmt: skip
        lead.request("POST", "/memory/learnings", {
            "scope": "crew", "file": "vault", "text": "Ask the vault team before renewing certs.",
        })  # fmt: skip
        own = tmp_path / "lead" / "learnings" / "vault.md"
        shared = tmp_path / "shared" / ".memory" / "learnings" / "vault.md"
        query = {"query": "vault token certs", "scope": "both", "session_id": "lead-1"}
        assert lead.request("POST", "/memory/learnings/search", query)["count"] == 2

        def crew(path: str, body: dict[str, object]) -> dict[str, object]:
            status, answer = lead.call("POST", path, body, headers=AUTH, url=crew_url)
            assert status == 200, answer
            return dict(answer)

        probe = crew("/memory/session/end", {"session_id": "lead-1"})
        assert probe["reinforced"] == {}
        misspelt = {"session_id": "lead-1", "caller": "local"}  # unknown, as on the lead's own
        status, answer = lead.call("POST", "/memory/session/end", misspelt, headers=AUTH,
                                   url=crew_url)  # fmt: skip
        assert (status, answer["error"]) == (400, "unknown_field"), answer
        assert (_count(own), _count(shared)) == (0, 0)

        for _ in range(5):
            found = crew("/memory/learnings/search", {"query": "vault certs", "session_id": "x"})
            assert found["count"] == 1
            crew("/memory/session/end", {"session_id": "x"})
        assert (_count(own), _count(shared)) == (0, 1)

        member.request("POST", "/memory/learnings/search",
                       {"query": "vault certs", "scope": "crew", "session_id": "m-1"})  # fmt: skip
        member.request("POST", "/memory/session/end", {"session_id": "m-1"})
        assert _count(shared) == 2  # another session: once more

        ended = lead.request("POST", "/memory/session/end", {"session_id": "lead-1"})
        assert ended["reinforced"] == {"agent": 1, "crew": 1}
        assert (_count(own), _count(shared)) == (1, 3)


def _sessions(
    port: int,
    stop: threading.Event,
    ended: list[str],
    seed: int,
    enough: tuple[int, threading.Event],
) -> None:
    """Shows sessions learnings and ends them until the daemon dies."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    n = 0
    headers = {"Content-Type": "application/json"}
    while not stop.is_set():
        session = f"c{seed}-{n}"
        n += 1
        try:
            for _ in range(2):
                body = {"query": f"service {rng.randrange(20)}", "session_id": session}
                conn.request("POST", "/memory/learnings/search", json.dumps(body), headers)
                conn.getresponse().read()
            conn.request("POST", "/memory/session/end",
                         json.dumps({"session_id": session}), headers)  # fmt: skip
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException):
            return
        if resp.status == 200:
            ended.append(session)
            if len(ended) >= enough[0]:
                enough[1].set()


def test_sigkill_during_write_back_leaves_every_file_whole(tmp_path: Path) -> None:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    folder = agent / "learnings"
    folder.mkdir(parents=True)
    crew.mkdir()
    for f in range(5):
        blocks = [
            entries.render({"id": f"e{f}-{i}", "type": "procedural", "reinforcement_count": 0},
                           f"Restart service {f * 4 + i % 4} after rotating its keys ({i}).")
            for i in range(8)
        ]  # fmt: skip
        (folder / f"f{f}.md").write_text("\n".join(blocks))
    rng = random.Random(3)
    for _ in range(ROUNDS):
        proc = SidecarProcess(agent, crew).start()
        stop, enough = threading.Event(), threading.Event()
        ended: list[str] = []
        target = (rng.randint(3, 12), enough)
        clients = [threading.Thread(target=_sessions, args=(proc.port, stop, ended, s, target))
                   for s in range(3)]  # fmt: skip
        for c in clients:
            c.start()
        enough.wait(20)  # then kill it, while the clients keep sessions ending
        proc.kill()
        stop.set()
        for c in clients:
            c.join()
        assert ended, "no session ended before the kill"
        for path in sorted(folder.glob("*.md")):
            found, problems = entries.parse(path.name, path.read_text())
            assert problems == [] and len(found) == 8, path
    total = sum(
        e.reinforcement_count
        for path in folder.glob("*.md")
        for e in entries.parse(path.name, path.read_text())[0]
    )
    assert total > 0
    proc = SidecarProcess(agent, crew).start()  # a restart clears what a kill left behind
    try:
        assert not [p for p in folder.iterdir() if p.name.startswith(".")]
        assert proc.get("/memory/status?scope=agent")["learnings"]["problems"] == []
    finally:
        proc.kill()
