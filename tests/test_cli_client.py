"""The command line as a client of a running daemon: where it looks for one, and what it
says when none answers there."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar import demo
from sidecar.api.http import create_app
from sidecar.cli import main
from sidecar.config import Settings
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.sidecar_process import free_port
from tests.test_journal import INJECTION

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


async def sidecar(*args: str) -> int:
    """A client command run as a shell would (blocking), off the loop serving the daemon."""
    return await asyncio.to_thread(main, list(args))


async def test_write_and_read_a_note_from_the_shell(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(client.make_url(""))
    assert (
        await sidecar("write", "AGENT.md", "--text", "# Prefs\n- terse commits", "--url", url) == 0
    )
    assert capsys.readouterr().out.startswith("wrote agent/AGENT.md (")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"- PostgreSQL 16\n")))
    assert await sidecar("write", "AGENT.md", "--append", "--url", url) == 0
    capsys.readouterr()
    assert await sidecar("read", "AGENT.md", "--url", url) == 0
    assert capsys.readouterr().out == "# Prefs\n- terse commits\n- PostgreSQL 16\n"
    assert await sidecar("read", "AGENT.md", "--lines", "2-3", "--url", url) == 0
    assert capsys.readouterr().out == "- terse commits\n- PostgreSQL 16\n"
    assert await sidecar("read", "AGENT.md", "--lines", "3-", "--json", "--url", url) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["content"], answer["start_line"], answer["end_line"]) == (
        "- PostgreSQL 16",
        3,
        3,
    )
    # the crew tier, by the same flag as every other command (--tier reads the same)
    assert await sidecar("write", "topics/deploy.md", "--tier", "crew", "--text", "Helm",
                         "--url", url) == 0  # fmt: skip
    assert await sidecar("read", "topics/deploy.md", "-S", "crew", "--url", url) == 0
    assert capsys.readouterr().out.endswith("Helm\n")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["write", "notes.md", "--text", "x"], "sidecar: 400: "),
        (["read", "daily/2026-01-02.md"], "sidecar: 404: daily/2026-01-02.md does not exist"),
        (["read", "AGENT.md", "--lines", "9-2"], "sidecar: 400: 'end_line' must not be before"),
    ],
)
async def test_write_and_read_errors_are_sentences(
    client: TestClient, args: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        await sidecar(*args, "--url", str(client.make_url("")))
    assert str(exc.value.code).startswith(says)


def test_write_without_text_says_how_to_give_it(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    with pytest.raises(SystemExit, match="give the text with --text, or on stdin"):
        main(["write", "AGENT.md", "--url", f"http://127.0.0.1:{free_port()}"])


def test_read_lines_must_be_a_range(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["read", "AGENT.md", "--lines", "two-five"])
    assert "expected A-B with line numbers" in capsys.readouterr().err


async def test_recall_from_the_shell_withholds_a_flagged_summary(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """A listed hit the scanner flagged shows a mark in place of its text, as over MCP."""
    url = str(client.make_url(""))
    for summary in (INJECTION, "the system prompt review is on Friday"):
        assert await sidecar("journal", "add", "--type", "peer.message", "--summary", summary,
                             "--url", url) == 0  # fmt: skip
    capsys.readouterr()
    assert await sidecar("recall", "system prompt instructions", "--url", url) == 0
    out = capsys.readouterr().out
    assert "[withheld: flagged as a prompt injection]" in out
    assert "the system prompt review is on Friday" in out and INJECTION not in out


@pytest.mark.parametrize("given", [["--text", ""], ["--text", " \n"], []])
async def test_an_empty_write_never_erases_a_note(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch, given: list[str]
) -> None:
    """``grep x notes | sidecar write AGENT.md`` with nothing matched replaced the agent's
    long-term memory with nothing."""
    url = str(client.make_url(""))
    assert await sidecar("write", "AGENT.md", "--text", "# Prefs\n- keep me", "--url", url) == 0
    before = (settings.agent_dir / "AGENT.md").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with pytest.raises(SystemExit, match=r"nothing to write.*AGENT\.md is unchanged"):
        await sidecar("write", "AGENT.md", *given, "--url", url)
    assert (settings.agent_dir / "AGENT.md").read_bytes() == before


def test_the_files_named_in_help_are_files_a_note_may_be(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """users/<slug>.md are operator models, which only the operator API writes."""
    for command in ("write", "read"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "users/" not in capsys.readouterr().out


async def test_context_errors_are_sentences_like_every_other_command(client: TestClient) -> None:
    """``sidecar context --budget 999`` printed the daemon's raw JSON error body."""
    with pytest.raises(SystemExit) as exc:
        await sidecar("context", "--budget", "999", "--url", str(client.make_url("")))
    assert exc.value.code == "sidecar: 400: 'budget' must be from 1000 to 200000 characters"


async def test_learnings_are_listed_from_the_shell_with_flagged_text_withheld(
    client: TestClient, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sidecar list-learnings`` takes its flags from the listing's op; a flagged
    learning (hand-written: the daemon refuses to learn one) is withheld as in every other
    list a shell shows."""
    url = str(client.make_url(""))
    (settings.agent_dir / "learnings").mkdir()
    (settings.agent_dir / "learnings/pasted.md").write_text(f"---\nid: pasted\n---\n{INJECTION}\n")
    assert await sidecar("learn", "Pin the base image digest.", "--url", url) == 0

    async def both_listed() -> bool:
        return len((await (await client.get("/memory/learnings")).json())["learnings"]) == 2

    await eventually(both_listed, "the hand-written learnings file to be indexed")
    capsys.readouterr()
    assert await sidecar("list-learnings", "--order", "recent", "--limit", "5", "--url", url) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and any(line.endswith("Pin the base image digest.") for line in out)
    assert any("[withheld: flagged as a prompt injection]" in line for line in out)
    with pytest.raises(SystemExit, match="limit"):
        await sidecar("list-learnings", "--limit", "201", "--url", url)
