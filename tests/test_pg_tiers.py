"""A tier in PostgreSQL: the settings that put it there, a real daemon serving it, and
the degraded state an unreachable server leaves the tier in."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sidecar.config import Settings
from sidecar.disk.tiers import Tier
from sidecar.service import MemoryService
from sidecar.stores import open_store
from tests import pg_server
from tests.conftest import eventually
from tests.sidecar_process import SidecarProcess, wait_for


def test_store_for_each_tier(tmp_path: Path) -> None:
    base = Settings(agent_dir=tmp_path / "a", crew_dir=tmp_path / "c", role="lead", agent_id="ag1")
    agent, crew = Tier("agent", base.agent_dir), Tier("crew", base.crew_dir)
    assert base.store_for(agent) == ("", "default/agent/ag1")
    assert base.store_for(crew) == ("", "default/crew")
    url = "postgresql://u@db.example/memory"
    split = replace(base, crew_store=url, namespace="ws1")
    assert split.store_for(crew) == (url, "ws1/crew")
    assert split.store_for(agent) == ("", "ws1/agent/ag1")
    both = replace(base, store=url, agent_store="sqlite")
    assert both.store_for(crew)[0] == url and both.store_for(agent)[0] == "sqlite"


def test_no_two_tiers_can_be_given_one_namespace_key(tmp_path: Path) -> None:
    """Namespace "x" with agent id "y/crew" made the agent tier's key "x/agent/y/crew",
    the crew key of namespace "x/agent/y": that crew read one agent's private notes."""
    dirs = {"agent_dir": tmp_path / "a", "crew_dir": tmp_path / "c"}
    url = "postgresql://u@db.example/memory"
    with pytest.raises(ValueError, match="namespace may not contain '/'"):
        Settings(**dirs, store=url, namespace="x/agent/y")
    with pytest.raises(ValueError, match="agent id may not contain '/'"):
        Settings(**dirs, store=url, namespace="x", agent_id="y/crew")
    # Kept out of any key, an agent id is only who recorded an event: anything goes.
    assert Settings(**dirs, agent_store="sqlite", crew_store=url, agent_id="y/crew").agent_id


def test_a_store_that_is_not_postgresql_or_a_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="postgresql:// URL or a path"):
        Settings(agent_dir=tmp_path / "a", crew_dir=tmp_path / "c", crew_store="mysql://x/y")


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        ({"crew_store": "postgresql://sc:Tr0ub4dor/Horse@db/mem"}, "must be percent-encoded"),
        ({"crew_store": "postgresql://sc:Tr0ub4dor@Horse@db/mem"}, "must be percent-encoded"),
        ({"crew_store": "postgresql://sc:My%Secret@db/mem"}, "must be percent-encoded"),
        ({"store": "host=db password=Tr0ub4dor"}, "not a key=value connection string"),
        ({"store": "/var/lib/memory/index.sqlite"}, "a SQLite file holds one tier"),
        ({"agent_store": "/x/one.sqlite", "crew_store": "/x/one.sqlite"}, "one SQLite file"),
    ],
)
def test_a_store_location_that_would_be_misread_is_refused_without_its_password(
    tmp_path: Path, flags: dict[str, str], refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal) as caught:
        Settings(agent_dir=tmp_path / "a", crew_dir=tmp_path / "c", **flags)
    assert "Tr0ub4dor" not in str(caught.value) and "Secret" not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://sc:Tr0ub4dor%2FHorse@db:5432/mem",
        "postgresql://sc:pa?ss@db/mem",  # libpq reads these as meant
        "postgresql://sc:pw@db/mem?application_name=ops@crew",
        "postgresql://sc:pw@db1:5432,db2:5433/mem",
        "postgresql://postgres:@/postgres?host=/run/postgresql",
    ],
)
def test_a_store_url_libpq_reads_as_meant_is_taken(tmp_path: Path, url: str) -> None:
    settings = Settings(agent_dir=tmp_path / "a", crew_dir=tmp_path / "c", crew_store=url)
    assert settings.store_for(Tier("crew", tmp_path / "c"))[0] == url


def test_daemon_serves_the_crew_tier_from_postgresql(tmp_path: Path, pg_url: str) -> None:
    """The crew tier in PostgreSQL, the agent tier in its SQLite file, one real daemon."""
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    (crew / "topics").mkdir(parents=True)
    (crew / "topics" / "infra.md").write_text("# Infra\n\nThe staging cluster runs on zeppelins.\n")
    proc = SidecarProcess(
        agent, crew, extra=["--crew-store", pg_url, "--namespace", f"e2e-{tmp_path.name}"]
    )
    proc.start()
    try:
        health = proc.get("/healthz")
        store = health["tiers"]["crew"]["store"]
        assert store["kind"] == "postgresql"
        assert store["vectors"] == "pgvector"
        assert store["namespace"] == f"e2e-{tmp_path.name}/crew"
        assert health["tiers"]["agent"]["store"]["kind"] == "sqlite"
        assert not (crew / "index.sqlite").exists()
        # What was on disk at start-up, and a note written over HTTP, both found.
        assert [r["file"] for r in proc.search("zeppelins", scope="crew")] == ["topics/infra.md"]
        status, body = proc.call(
            "POST",
            "/memory/write",
            {"scope": "crew", "file": "topics/billing.md",
             "content": "- Billing moved to the quokka cluster.", "mode": "append"},
        )  # fmt: skip
        assert status == 201 and body["indexed"] is True, body
        hits = proc.search("where does billing run? quokka", scope="crew")
        assert (hits[0]["file"], hits[0]["source"]) == ("topics/billing.md", "crew")
        assert proc.search("quokka", scope="agent") == []
        assert proc.get("/memory/status?scope=crew")["total_files"] == 2
    finally:
        proc.terminate()


async def test_an_unreachable_store_degrades_its_tier_only(tmp_path: Path) -> None:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    (crew / "topics").mkdir(parents=True)
    (agent / "daily").mkdir(parents=True)
    (agent / "AGENT.md").write_text("# Agent\n\nThe agent remembers walruses.\n")
    settings = Settings(
        agent_dir=agent,
        crew_dir=crew,
        role="lead",
        reconcile_interval=3600,
        embedder="none",
        crew_store=f"postgresql://nobody@/db?host={tmp_path}&port=1&connect_timeout=1",
    )
    svc = MemoryService(settings)
    await svc.start()
    try:

        async def crew_broken() -> bool:
            return "broken" in (await svc.health())["tiers"]["crew"]

        await eventually(crew_broken, "the crew tier to be marked unusable")
        health = await svc.health()
        assert health["status"] == "degraded"
        assert any("crew" in r and "unreachable" in r for r in health["reasons"])
        assert health["tiers"]["crew"]["store"]["kind"] == "postgresql"
        found = await svc.search.search("walruses", "agent", 5)
        assert [r.hit.path for r in found.results] == ["AGENT.md"]
    finally:
        await svc.stop()


def crew_store(proc: SidecarProcess) -> dict[str, Any]:
    return dict(proc.get("/healthz")["tiers"]["crew"]["store"])


def test_a_second_lead_stands_by_and_takes_over_when_the_first_dies(
    tmp_path: Path, pg_url: str
) -> None:
    """Two leads of one crew namespace: one writes, the other serves searches from the
    same index and starts writing once the first is gone (SIGKILL: no goodbye)."""
    crew = tmp_path / "crew"
    (crew / "topics").mkdir(parents=True)
    (crew / "topics" / "infra.md").write_text("# Infra\n\nStaging runs on zeppelins.\n")
    extra = ["--crew-store", pg_url, "--namespace", f"lease-{tmp_path.name}",
             "--reconcile-interval", "0.2"]  # fmt: skip
    first = SidecarProcess(tmp_path / "a1" / "agent", crew, extra=extra).start()
    second = SidecarProcess(tmp_path / "a2" / "agent", crew, extra=extra)
    try:
        assert crew_store(first)["writer"] == "lead"
        second.proc = subprocess.Popen(second.args, env=second.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)  # fmt: skip
        wait_for(lambda: _answers(second) and crew_store(second)["writer"] == "standby",
                 timeout=20, what="the second lead to stand by")  # fmt: skip
        # The standby answers from the index the lead keeps.
        (crew / "topics" / "db.md").write_text("# DB\n\nBilling lives in the quokka cluster.\n")
        wait_for(lambda: bool(second.search("quokka", scope="crew")), what="the lead's update")
        assert crew_store(second)["writer"] == "standby"
        first.kill()
        wait_for(lambda: crew_store(second)["writer"] == "lead", timeout=20,
                 what="the standby to take the writer lease")  # fmt: skip
        (crew / "topics" / "ops.md").write_text("# Ops\n\nPager rotation uses wombats.\n")
        wait_for(lambda: bool(second.search("wombats", scope="crew")), what="the new lead's index")
        health = second.get("/healthz")["tiers"]["crew"]
        assert health["state"] == "ready"
        assert second.get("/memory/status?scope=crew")["total_files"] == 3
    finally:
        first.kill()
        second.kill()


def test_a_standby_takes_the_lease_within_seconds_and_catches_up(
    tmp_path: Path, pg_url: str
) -> None:
    """Reconciles an hour apart: only the standby's own lease timer can explain the
    takeover, and only its catch-up reconcile can index a change it was refused."""
    crew = tmp_path / "crew"
    (crew / "topics").mkdir(parents=True)
    (crew / "topics" / "infra.md").write_text("# Infra\n\nStaging runs on zeppelins.\n")
    extra = ["--crew-store", pg_url, "--namespace", f"timer-{tmp_path.name}",
             "--reconcile-interval", "3600"]  # fmt: skip
    first = SidecarProcess(tmp_path / "a1" / "agent", crew, extra=extra).start()
    second = SidecarProcess(tmp_path / "a2" / "agent", crew, extra=extra)
    try:
        wait_for(lambda: crew_store(first)["writer"] == "lead", what="the first to lead")
        second.proc = subprocess.Popen(second.args, env=second.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)  # fmt: skip
        wait_for(lambda: _answers(second) and crew_store(second)["writer"] == "standby",
                 timeout=20, what="the second lead to stand by")  # fmt: skip
        assert first.proc is not None
        os.kill(first.proc.pid, signal.SIGSTOP)  # the writer hangs: it indexes nothing
        (crew / "topics" / "ops.md").write_text("# Ops\n\nPager rotation uses wombats.\n")

        def refused() -> bool:
            error = second.get("/healthz")["tiers"]["crew"].get("last_error") or ""
            return "ops.md" in error and "another sidecar" in error

        wait_for(refused, what="the standby to be refused the change")
        first.kill()
        wait_for(lambda: crew_store(second)["writer"] == "lead", timeout=15,
                 what="the standby to take the lease on its own")  # fmt: skip
        wait_for(lambda: bool(second.search("wombats", scope="crew")), timeout=15,
                 what="the change it was refused, indexed once it leads")  # fmt: skip
        assert second.get("/memory/status?scope=crew")["total_files"] == 2
    finally:
        first.kill()
        second.kill()


def test_a_member_searches_the_crew_tier_in_postgresql_itself(tmp_path: Path, pg_url: str) -> None:
    """A member with --crew-store and no lead URL (nor the crew folder) finds what the
    lead indexed, even once the lead is gone, and writes nothing there."""
    crew = tmp_path / "crew"
    (crew / "topics").mkdir(parents=True)
    (crew / "topics" / "infra.md").write_text("# Infra\n\nStaging runs on zeppelins.\n")
    space = f"member-{tmp_path.name}"
    extra = ["--crew-store", pg_url, "--namespace", space]
    lead = SidecarProcess(tmp_path / "lead" / "agent", crew, extra=extra).start()
    member = SidecarProcess(tmp_path / "m" / "agent", tmp_path / "m" / "no-crew", role="agent",
                            extra=extra)  # fmt: skip
    try:
        member.start()
        health = member.get("/healthz")
        assert health["status"] == "ok", health
        tier = health["tiers"]["crew"]
        assert tier["reads"] == "direct"
        assert tier["store"]["namespace"] == f"{space}/crew"
        assert tier["store"]["writer"] == "reader"
        # A member given another namespace than the lead's is told so, not left empty.
        stray = SidecarProcess(tmp_path / "s" / "agent", tmp_path / "s" / "no-crew",
                               role="agent", extra=[*extra[:-1], f"{space}-typo"])  # fmt: skip
        stray.proc = subprocess.Popen(stray.args, env=stray.env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            wait_for(lambda: _answers(stray) and lead_reason(stray) is not None,
                     timeout=20, what="a member of a lost namespace to say so")  # fmt: skip
            assert "no lead has ever served namespace" in str(lead_reason(stray))
            assert stray.search("zeppelins", scope="crew") == []
        finally:
            stray.kill()
        lead.kill()  # nothing goes through the lead
        wait_for(lambda: lead_reason(member) is not None, timeout=10,
                 what="the member to see that no lead holds the namespace")  # fmt: skip
        assert f"no lead holds namespace '{space}/crew'" in str(lead_reason(member))
        hits = member.search("where does staging run? zeppelins", scope="crew")
        assert [(h["file"], h["source"]) for h in hits] == [("topics/infra.md", "crew")]
        both = member.search("zeppelins", scope="both")
        assert [h["file"] for h in both] == ["topics/infra.md"]
        status, _ = member.call(
            "POST",
            "/memory/write",
            {"scope": "crew", "file": "topics/m.md", "content": "- member", "mode": "append"},
        )
        assert status != 201
        assert member.get("/memory/status?scope=crew")["total_files"] == 1
        assert not (tmp_path / "m" / "no-crew" / "topics").exists()
    finally:
        lead.kill()
        member.kill()


def test_a_reader_knows_a_namespace_served_once_even_after_its_index_is_reset(
    tmp_path: Path, pg_url: str
) -> None:
    space = f"served-{tmp_path.name}"
    lead = open_store(pg_url, space, single_writer=True)
    reader = open_store(pg_url, space, read_only=True)
    stray = open_store(pg_url, f"{space}-typo", read_only=True)
    try:
        lead.set_meta("probe", "x")  # a write takes the writer lease
        lead.reset()  # a rebuild drops the namespace's rows, but not that it is served
        assert reader.problem() is None
        assert "no lead has ever served namespace" in str(stray.problem())
        lead.close()
        assert f"no lead holds namespace {space!r}" in str(reader.problem())
    finally:
        for store in (lead, reader, stray):
            store.close()


def lead_reason(proc: SidecarProcess) -> str | None:
    """The health reason saying the crew namespace has no lead, if there is one."""
    health = proc.get("/healthz")
    found = [r for r in health.get("reasons", []) if r.startswith("crew: no lead ")]
    assert not found or (health["status"] == "degraded"
                         and health["tiers"]["crew"]["state"] == "broken")  # fmt: skip
    return found[0] if found else None


def _answers(proc: SidecarProcess) -> bool:
    try:
        proc.get("/healthz")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
    return True


def test_after_a_database_restart_every_sidecar_recovers_and_nothing_is_rebuilt(
    tmp_path: Path,
) -> None:
    """A lead, its standby and a member reading directly, through a restart of
    PostgreSQL: all come back on their own; the index, which survived, is caught up
    rather than dropped and rebuilt (readers never see it empty); the standby, which
    may not write, stands by again instead of failing to rebuild forever."""
    crew = tmp_path / "crew"
    (crew / "topics").mkdir(parents=True)
    (crew / "topics" / "infra.md").write_text("# Infra\n\nStaging runs on zeppelins.\n")
    with pg_server.server() as running:
        url = running.get_uri()
        flags = ["--crew-store", url, "--namespace", f"restart-{tmp_path.name}",
                 "--reconcile-interval", "0.5"]  # fmt: skip
        lead = SidecarProcess(tmp_path / "a1" / "agent", crew, extra=flags).start()
        standby = SidecarProcess(tmp_path / "a2" / "agent", crew, extra=flags)
        member = SidecarProcess(tmp_path / "m" / "agent", tmp_path / "m" / "crew",
                                role="agent", extra=flags)  # fmt: skip
        try:
            standby.proc = subprocess.Popen(standby.args, env=standby.env,
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)  # fmt: skip
            wait_for(lambda: _answers(standby) and crew_store(standby)["writer"] == "standby",
                     timeout=20, what="the second lead to stand by")  # fmt: skip
            member.start()
            pg_server.stop(running)
            for proc in (lead, standby, member):  # each has seen the server gone
                wait_for(lambda p=proc: p.get("/healthz")["status"] == "degraded", timeout=20,
                         what="a sidecar to notice the server is gone")  # fmt: skip
            status, answer = member.call("GET", "/memory/status?scope=crew")
            assert (status, answer["error"]) == (503, "crew_store_unavailable")
            (crew / "topics" / "ops.md").write_text("# Ops\n\nPager rotation uses wombats.\n")
            pg_server.start(running)

            def recovered(proc: SidecarProcess) -> bool:
                health = proc.get("/healthz")
                return health["status"] == "ok" and bool(proc.search("wombats", scope="crew"))

            for proc in (lead, standby, member):
                wait_for(lambda p=proc: recovered(p), timeout=40,
                         what="a sidecar to recover from the restart")  # fmt: skip
            assert {crew_store(lead)["writer"], crew_store(standby)["writer"]} == {
                "lead",
                "standby",
            }
            for proc in (lead, standby):
                with urllib.request.urlopen(f"{proc.url}/metrics", timeout=10) as resp:
                    metrics = resp.read().decode()
                assert 'kind="heal"' not in metrics  # no tier was rebuilt from its files
            assert member.get("/memory/status?scope=crew")["total_files"] == 2
        finally:
            for proc in (lead, standby, member):
                proc.kill()
