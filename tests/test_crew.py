"""A lead and two members as separate ``sidecar serve`` processes sharing a crew folder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ollama_stub import OllamaStub
from tests.sidecar_process import SidecarProcess, free_port, wait_for

TOKEN = "s3cret-crew-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Crew:
    lead: SidecarProcess
    members: list[SidecarProcess]
    crew_url: str
    crew_dir: Path


@pytest.fixture
def crew(tmp_path: Path) -> Iterator[Crew]:
    shared = tmp_path / "shared" / ".memory"
    shared.mkdir(parents=True)
    crew_port = free_port()
    crew_url = f"http://127.0.0.1:{crew_port}"
    lead = SidecarProcess(
        tmp_path / "lead" / ".memory", shared, "lead",
        ["--crew-listen", f"127.0.0.1:{crew_port}"], {"SIDECAR_CREW_TOKEN": TOKEN},
    )  # fmt: skip
    members = [
        SidecarProcess(
            tmp_path / name / ".memory",
            shared,
            "agent",
            ["--lead-url", crew_url],
            {"SIDECAR_CREW_TOKEN": TOKEN},
        )
        for name in ("alice", "bob")
    ]
    procs = [lead, *members]
    try:
        for proc in procs:
            proc.start()
        yield Crew(lead, members, crew_url, shared)
    finally:
        for proc in procs:
            proc.kill()


def test_crew_topology_end_to_end(crew: Crew) -> None:
    lead, (alice, bob) = crew.lead, crew.members
    status, body = lead.call(
        "POST", "/memory/write",
        {"scope": "crew", "file": "CREW.md", "content": "## Decision\nPostgreSQL 16 via pgx."},
    )  # fmt: skip
    assert status == 201, body
    alice.request(
        "POST", "/memory/write",
        {"scope": "agent", "file": "AGENT.md", "content": "Alice migrated PostgreSQL schemas."},
    )  # fmt: skip

    # Both members find the lead's crew memory, proxied; scope=both fuses the tiers.
    for member in (alice, bob):
        hits = member.search("which PostgreSQL version", "crew")
        assert [(h["file"], h["source"]) for h in hits] == [("CREW.md", "crew")]
    both = alice.search("PostgreSQL", "both")
    assert {(h["file"], h["source"]) for h in both} == {("CREW.md", "crew"), ("AGENT.md", "agent")}
    assert both[0]["score"] == pytest.approx(1 / 61, abs=1e-6)
    status, body = alice.call("GET", "/memory/status?scope=crew")
    assert status == 200 and body["total_files"] == 1
    # Members read crew files from the shared mount, and never write them.
    assert "pgx" in bob.get("/memory/read?scope=crew&file=CREW.md")["content"]
    status, body = bob.call(
        "POST", "/memory/write", {"scope": "crew", "file": "CREW.md", "content": "bob was here"}
    )
    assert status == 403
    assert body["error"] == "crew_read_only"
    assert "bob was here" not in (crew.crew_dir / "CREW.md").read_text()

    # The crew address wants the token and serves nothing of the agent tier.
    search = {"query": "PostgreSQL", "scope": "crew"}
    assert lead.call("POST", "/memory/search", search, url=crew.crew_url)[0] == 401
    wrong = {"Authorization": "Bearer nope"}
    assert lead.call("POST", "/memory/search", search, wrong, url=crew.crew_url)[0] == 401
    status, body = lead.call("POST", "/memory/search", search, AUTH, url=crew.crew_url)
    assert status == 200 and body["count"] == 1
    for scope in ("agent", "both"):
        status, body = lead.call(
            "POST", "/memory/search", {"query": "x", "scope": scope}, AUTH, url=crew.crew_url
        )
        assert (status, body["error"]) == (403, "crew_only")
    assert lead.call("GET", "/memory/status?scope=agent", None, AUTH, url=crew.crew_url)[0] == 403
    for method, path in (("GET", "/memory/read?scope=agent&file=AGENT.md"),
                         ("POST", "/memory/write"), ("POST", "/memory/reindex")):  # fmt: skip
        assert lead.call(method, path, None, AUTH, url=crew.crew_url)[0] in (404, 405)
    status, body = lead.call("GET", "/healthz", None, AUTH, url=crew.crew_url)
    assert list(body["tiers"]) == ["crew"] and "root" not in body["tiers"]["crew"]

    # The lead dies: members degrade loudly, never silently.
    lead.kill()
    status, body = alice.call("POST", "/memory/search", search)
    assert status == 503
    assert body["error"] == "crew_unavailable"
    assert crew.crew_url in body["detail"] and "unreachable" in body["detail"]
    status, body = alice.call("POST", "/memory/search", {"query": "PostgreSQL", "scope": "both"})
    assert status == 200
    assert [(h["file"], h["source"]) for h in body["results"]] == [("AGENT.md", "agent")]
    assert body["degraded"] == ["crew: lead unreachable"]
    health = alice.get("/healthz")
    assert health["status"] == "degraded"
    assert health["tiers"]["crew"]["state"] == "proxied"
    assert health["tiers"]["crew"]["reachable"] is False
    assert health["tiers"]["crew"]["last_error"]
    assert alice.call("GET", "/memory/status?scope=crew")[0] == 503

    # It comes back: members recover without a restart.
    lead.start()
    for member in (alice, bob):
        wait_for(lambda m=member: m.call("POST", "/memory/search", search)[0] == 200,
                 what="crew search through the restarted lead")  # fmt: skip
        assert member.get("/healthz")["tiers"]["crew"]["reachable"] is True
    assert alice.get("/healthz")["status"] == "ok"


def test_crew_address_needs_a_token(tmp_path: Path) -> None:
    proc = SidecarProcess(
        tmp_path / "lead", tmp_path / "crew", "lead", ["--crew-listen", f"127.0.0.1:{free_port()}"]
    )
    with pytest.raises(AssertionError, match="CREW_TOKEN"):
        proc.start(timeout=20)
    proc.kill()


@contextlib.contextmanager
def lead_and_member(
    tmp_path: Path, lead_env: dict[str, str], member_env: dict[str, str]
) -> Iterator[tuple[SidecarProcess, SidecarProcess]]:
    """A lead and one member sharing a crew folder, each with its own extra environment."""
    shared = tmp_path / "shared" / ".memory"
    shared.mkdir(parents=True)
    crew_port = free_port()
    auth = {"SIDECAR_CREW_TOKEN": TOKEN}
    lead = SidecarProcess(tmp_path / "lead", shared, "lead",
                          ["--crew-listen", f"127.0.0.1:{crew_port}"],
                          {**auth, **lead_env})  # fmt: skip
    member = SidecarProcess(tmp_path / "member", shared, "agent",
                            ["--lead-url", f"http://127.0.0.1:{crew_port}"],
                            {**auth, **member_env})  # fmt: skip
    try:
        lead.start()
        member.start()
        yield lead, member
    finally:
        member.kill()
        lead.kill()


def ollama_env(stub: OllamaStub) -> dict[str, str]:
    return {"SIDECAR_EMBEDDER": "ollama", "SIDECAR_OLLAMA_URL": stub.url}


def write_and_embed(proc: SidecarProcess, scope: str, file: str, content: str) -> None:
    """Write through ``proc`` and wait until the tier has a vector for every chunk."""
    status, body = proc.call(
        "POST", "/memory/write", {"scope": scope, "file": file, "content": content}
    )
    assert status == 201, body
    wait_for(lambda: proc.get(f"/memory/status?scope={scope}")["pending"] == 0,
             what=f"the {scope} chunk's vector")  # fmt: skip


def test_a_member_gets_the_leads_hybrid_ranking(tmp_path: Path) -> None:
    """The lead embeds, the member does not: crew searches still run hybrid, on the lead."""
    with OllamaStub() as stub, lead_and_member(tmp_path, ollama_env(stub), {}) as (lead, member):
        write_and_embed(lead, "crew", "topics/harbour.md", "- the crane is blue")
        for asked, legs in ((None, {"sparse", "dense"}), ("dense", {"dense"})):
            request = {"query": "crane", "scope": "crew", **({"mode": asked} if asked else {})}
            status, body = member.call("POST", "/memory/search", request)
            assert status == 200, body
            assert body["mode"] == (asked or "hybrid")
            assert [h["file"] for h in body["results"]] == ["topics/harbour.md"]
            assert set(body["results"][0]["ranks"]) == legs
        assert member.get("/healthz")["retrieval"] == "sparse-only"  # its own tier


def test_a_lead_that_refuses_its_half_of_a_both_search_leaves_the_members_half(
    tmp_path: Path,
) -> None:
    """The member embeds, the lead does not: ``mode=dense`` over both tiers answers
    from the member's own tier and says why the crew half is missing."""
    with OllamaStub() as stub, lead_and_member(tmp_path, {}, ollama_env(stub)) as (_, member):
        write_and_embed(member, "agent", "AGENT.md", "- the crane is blue")
        request = {"query": "crane", "scope": "both", "mode": "dense"}
        status, body = member.call("POST", "/memory/search", request)
        assert status == 200, body
        assert [(h["source"], h["file"]) for h in body["results"]] == [("agent", "AGENT.md")]
        assert [d.split(":")[:2] for d in body["degraded"]] == [["crew", " dense_unavailable"]]
        status, body = member.call("POST", "/memory/search", {**request, "scope": "crew"})
        assert (status, body["error"]) == (503, "dense_unavailable")
        assert member.get("/healthz")["tiers"]["crew"]["reachable"] is True  # it answered
