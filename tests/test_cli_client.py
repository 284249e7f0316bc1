"""The command line as a client of a running daemon: where it looks for one, and what it
says when none answers there."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from sidecar import demo
from sidecar.api.http import create_app
from sidecar.cli import main
from sidecar.config import Settings
from sidecar.service import MemoryService
from tests.sidecar_process import free_port

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", [["doctor"], ["recall", "deploy"], ["context"]])
def test_no_daemon_names_the_url_tried_and_the_variable(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("SIDECAR_URL", url)
    try:
        code = main(command)
    except SystemExit as exc:
        code, said = 1, str(exc.code)
    else:
        said = capsys.readouterr().out
    assert code == 1
    assert f"no sidecar answered at {url}" in said
    assert "sidecar serve" in said and "export SIDECAR_URL=" in said


def test_make_run_says_what_to_export_for_its_port() -> None:
    plan = subprocess.run(
        ["make", "-n", "run", "PORT=9311"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert "export SIDECAR_URL=http://127.0.0.1:9311" in plan.stdout


async def test_context_at_the_documented_smallest_budget_shows_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, crew = demo.seed(tmp_path / "demo")  # what `make run` serves
    settings = Settings(agent_dir=agent, crew_dir=crew, role="lead", embedder="none",
                        reconcile_interval=3600)  # fmt: skip
    service = MemoryService(settings)
    await service.start()
    try:
        async with TestServer(create_app(service), host="127.0.0.1") as server:
            args = ["context", "--budget", "1000", "--url", str(server.make_url(""))]
            code = await asyncio.to_thread(main, args)
    finally:
        await service.stop()
    block = capsys.readouterr().out
    assert code == 0 and len(block) <= 1000
    assert "Prefers terse commit subjects" in block  # the agent's own memory, not just markers
    assert block.endswith("[END MEMORY INSTRUCTIONS]\n")
