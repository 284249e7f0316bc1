"""A member's extracted crew learnings on a real lead: new ones and reinforcements are
applied, a retirement is refused (403) whether a hostile token holder sends it or a
member's own model proposes it, and the crew's learning stays active."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from sidecar.learnings import entries
from tests.conftest import eventually
from tests.llm_stub import LLMStub
from tests.sidecar_process import SidecarProcess, free_port
from tests.test_extraction import item, scripted_session
from tests.test_extraction_processes import ledger

TOKEN = "crew-token-for-extracted"
CREW_LEARNING = (
    "---\nid: vpn-first\ntype: procedural\nimportance: 0.7\n---\n"
    "Staging deploys need the VPN up first: run `vpn up staging` before `make deploy`.\n"
)
NEW_TEXT = "Deploys to staging wait for Monday when the week's freeze starts on a Friday."


def crew_entries(crew: Path, slug: str) -> list[entries.Entry]:
    rel = f"learnings/{slug}.md"
    path = crew / rel
    return entries.parse(rel, path.read_text())[0] if path.exists() else []


def post_extracted(crew_url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{crew_url}/memory/learnings/extracted", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def lead_process(tmp_path: Path, crew: Path, crew_port: int) -> SidecarProcess:
    return SidecarProcess(tmp_path / "lead" / ".memory", crew, "lead",
                          ["--crew-listen", f"127.0.0.1:{crew_port}"],
                          {"SIDECAR_CREW_TOKEN": TOKEN})  # fmt: skip


def test_a_crew_token_holder_cannot_retire_a_crew_learning_but_can_add_one(
    tmp_path: Path,
) -> None:
    crew = tmp_path / "crew"
    (crew / "learnings").mkdir(parents=True)
    (crew / "learnings" / "deploys.md").write_text(CREW_LEARNING)
    before = (crew / "learnings" / "deploys.md").read_bytes()
    crew_port = free_port()
    crew_url = f"http://127.0.0.1:{crew_port}"
    lead = lead_process(tmp_path, crew, crew_port)
    try:
        lead.start()
        retire = {"kind": "retire", "tier": "crew", "target": "vpn-first"}
        new = {"kind": "new", "tier": "crew", "target": None, "text": NEW_TEXT,
               "type": "directive", "importance": 0.6, "file": "freeze"}  # fmt: skip
        # The hostile review's request, and the same retirement hidden beside a new learning.
        for actions in ([retire], [new, retire]):
            status, body = post_extracted(crew_url, {"session_id": "s1", "actions": actions})
            assert (status, body["error"]) == (403, "retire_forbidden"), body
            assert "vpn-first" in body["detail"] and "new and reinforce" in body["detail"]
        assert (crew / "learnings" / "deploys.md").read_bytes() == before
        assert crew_entries(crew, "freeze") == []  # refused whole: nothing half-applied
        status, body = post_extracted(crew_url, {"session_id": "s1", "actions": [new]})
        assert (status, body["applied"]) == (200, 1), body
        (added,) = crew_entries(crew, "freeze")
        assert added.text == NEW_TEXT and added.source == "session:s1"
        (kept,) = crew_entries(crew, "deploys")
        assert kept.status == "active"
        assert lead.terminate() == 0
    finally:
        lead.kill()


async def test_a_members_model_proposing_to_retire_a_crew_learning_sends_only_the_rest(
    tmp_path: Path,
) -> None:
    """The member's own extraction drops the retirement with a note, so the lead is never
    asked and the session's other crew learning still reaches it."""
    stub = await LLMStub().start()

    def model(prompt: str) -> Any:
        if "Known learnings:" in prompt:
            return {"learnings": [
                item("retire", "obsolete", existing="{id:VPN}", scope="crew"),
                item("new", NEW_TEXT, scope="crew", type="directive"),
            ]}  # fmt: skip
        if "Known facts:" in prompt:
            return {"facts": []}
        return {"summary": "Deployed to staging once the VPN was up."}

    stub.default = model
    crew = tmp_path / "crew"
    (crew / "learnings").mkdir(parents=True)
    (crew / "learnings" / "deploys.md").write_text(CREW_LEARNING)
    crew_port = free_port()
    lead = lead_process(tmp_path, crew, crew_port)
    member_dir = tmp_path / "member" / ".memory"
    member = SidecarProcess(member_dir, crew, "agent",
                            ["--lead-url", f"http://127.0.0.1:{crew_port}"],
                            {"SIDECAR_CREW_TOKEN": TOKEN, "SIDECAR_LLM_URL": stub.url + "/v1",
                             "SIDECAR_LLM_MODEL": "stub-3b"})  # fmt: skip
    try:
        await asyncio.to_thread(lead.start)
        await asyncio.to_thread(member.start)
        events = [{**e, "session_id": "m1"} for e in scripted_session(2)]

        def session() -> None:
            member.request("POST", "/memory/session/start", {"session_id": "m1", "task": "deploy"})
            member.request("POST", "/memory/journal", {"events": events})
            member.request("POST", "/memory/session/end", {"session_id": "m1"})

        await asyncio.to_thread(session)

        async def extracted() -> bool:
            return any(r["kind"] == "extracted" for r in ledger(member_dir))

        await eventually(extracted, "the member's session extracted", within=20)
        done = next(r for r in ledger(member_dir) if r["kind"] == "extracted")
        assert any("vpn-first" in n and "retired only on the lead" in n for n in done["notes"])
        found = {e.id: e for e in crew_entries(crew, "deploys")}
        assert found["vpn-first"].status == "active"  # the crew's learning stands
        (added,) = [e for e in found.values() if e.text == NEW_TEXT]  # the rest went through
        assert added.source == "session:m1"
        assert member.get("/healthz")["tiers"]["crew"]["reachable"]  # no 403 reached it
    finally:
        member.kill()
        lead.kill()
        await stub.stop()
