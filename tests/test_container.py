"""Docker does not run here: check the container files are consistent instead."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

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
