"""Docker does not run here: check the container files are consistent instead."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from sidecar.config import Settings
from sidecar.disk.tiers import Tier

CONTAINER = Path(__file__).resolve().parent.parent / "container"
REPO = CONTAINER.parent


def compose() -> dict[str, Any]:
    data = yaml.safe_load((CONTAINER / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def dockerfile_lines() -> list[str]:
    return (CONTAINER / "Dockerfile").read_text().splitlines()


def test_everything_the_dockerfile_copies_exists() -> None:
    copies = [line.split()[1:-1] for line in dockerfile_lines() if line.startswith("COPY ")]
    assert copies
    for sources in copies:
        for src in sources:
            assert (REPO / src).exists(), f"Dockerfile copies missing {src}"


def test_image_runs_as_non_root_with_a_health_check() -> None:
    lines = dockerfile_lines()
    assert any(re.match(r"USER (?!root)\w+", line) for line in lines)
    assert any(line.startswith("HEALTHCHECK") for line in lines)
    assert "/healthz" in "\n".join(lines)
    assert any(line.startswith("FROM python:3.11-slim") for line in lines)


def test_entrypoint_is_executable_shell() -> None:
    entry = CONTAINER / "entrypoint.sh"
    assert entry.stat().st_mode & 0o111
    assert subprocess.run(["sh", "-n", str(entry)], check=False).returncode == 0
    assert "exec sidecar" in entry.read_text()


def test_compose_has_one_lead_and_two_members_sharing_crew_memory() -> None:
    data = compose()
    services = data["services"]
    roles = {name: s["environment"]["SIDECAR_ROLE"] for name, s in services.items()}
    assert sorted(roles.values()) == ["agent", "agent", "lead"]
    lead = next(name for name, role in roles.items() if role == "lead")
    crew_port = services[lead]["environment"]["SIDECAR_CREW_LISTEN"].rsplit(":", 1)[1]
    for name, service in services.items():
        build = service["build"]
        assert (CONTAINER / build["context"] / build["dockerfile"]).is_file()
        env = service["environment"]
        assert "SIDECAR_CREW_TOKEN" in env
        crew_mounts = [v for v in service["volumes"] if v.split(":")[1] == "/crew/shared/.memory"]
        assert [v.split(":")[0] for v in crew_mounts] == ["crew-memory"]
        if name != lead:
            assert env["SIDECAR_LEAD_URL"] == f"http://{lead}:{crew_port}"
            assert crew_mounts[0].endswith(":ro")  # members never write crew memory
    assert set(data["volumes"]) >= {"crew-memory"}


def _interpolated(value: str) -> str:
    """Compose's ${VAR}, ${VAR:?why} and ${VAR:-default}, as if VAR were set."""
    return re.sub(r"\$\{(\w+)(?::?[-?][^}]*)?\}", lambda m: f"value-of-{m.group(1).lower()}", value)


def _serve_env_names() -> set[str]:
    """Every SIDECAR_* variable ``sidecar serve`` reads, from its flags' help."""
    from sidecar.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    names = {n for a in serve._actions for n in re.findall(r"SIDECAR_\w+", a.help or "")}
    return names | {"SIDECAR_CREW_TOKEN"}


def _settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp: Path) -> Settings:
    """What ``sidecar serve`` would start with under a service's environment."""
    from sidecar.cli import build_parser

    for name in [n for n in os.environ if n.startswith("SIDECAR_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, _interpolated(str(value)))
    args = build_parser().parse_args(["serve"])  # flag defaults are read from the env
    return Settings(
        agent_dir=tmp / "agent", crew_dir=tmp / "crew", role=args.role,
        lead_url=args.lead_url or None, crew_listen=args.crew_listen,
        crew_token=os.environ.get("SIDECAR_CREW_TOKEN"), store=args.store,
        agent_store=args.agent_store, crew_store=args.crew_store, namespace=args.namespace,
    )  # fmt: skip


def test_compose_postgres_two_leads_and_members_reading_the_crew_namespace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = yaml.safe_load((CONTAINER / "compose.postgres.yaml").read_text())
    services = data["services"]
    pg = services.pop("postgres")
    assert pg["image"].startswith("pgvector/pgvector:")
    assert "healthcheck" in pg
    known = _serve_env_names()
    crew = Tier("crew", tmp_path / "crew")
    leads, members = [], []
    for name, service in services.items():
        assert (CONTAINER / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        env = service["environment"]
        assert set(env) <= known, f"{name}: variables sidecar serve does not read"
        url = urllib.parse.urlsplit(_interpolated(env["SIDECAR_CREW_STORE"]))
        assert (url.scheme, url.hostname, url.path) == (
            "postgresql", "postgres", "/" + pg["environment"]["POSTGRES_DB"]
        )  # fmt: skip
        assert url.username == pg["environment"]["POSTGRES_USER"]
        assert url.password == _interpolated(pg["environment"]["POSTGRES_PASSWORD"])
        settings = _settings(env, monkeypatch, tmp_path)
        mounts = {v.split(":")[1]: v for v in service["volumes"]}
        assert mounts["/crew/shared/.memory"].startswith("crew-memory:")
        if settings.role == "lead":
            leads.append(settings.store_for(crew))
            assert settings.crew_reader() is None
            assert not mounts["/crew/shared/.memory"].endswith(":ro")  # either may write
        else:
            members.append(settings.crew_reader())
            assert mounts["/crew/shared/.memory"].endswith(":ro")
            assert settings.lead_url is not None
            lead = urllib.parse.urlsplit(settings.lead_url)
            assert lead.hostname in services
            port = services[lead.hostname]["environment"]["SIDECAR_CREW_LISTEN"].rsplit(":")[1]
            assert lead.port == int(port)
    assert len(leads) == 2 and len(members) == 2
    # One crew namespace: both leads write it (one at a time), members read it.
    assert len(set(leads)) == 1 and set(members) == set(leads)
    assert leads[0][1].endswith("/crew")
    mounted = {v.split(":")[0] for s in [pg, *services.values()] for v in s["volumes"]}
    assert mounted <= set(data["volumes"])
