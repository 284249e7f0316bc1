"""Offline commands work on a tier folder with no server running."""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar import config, ops
from sidecar.cli import build_parser, main
from sidecar.cli import serve as serve_cli
from sidecar.config import Caps, Settings
from tests.sidecar_process import SidecarProcess


@pytest.fixture
def tier(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "daily").mkdir(parents=True)
    (root / "AGENT.md").write_text("# Preferences\n## Editor\nUses helix with the gruvbox theme.\n")
    (root / "daily" / "2026-11-02.md").write_text(
        "# 2026-11-02\nTried the gruvbox light variant.\n"
    )
    return root


def test_search_json(tier: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "which theme does the editor use", "-p", str(tier), "-F", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["query_mode"] == "terms"
    assert body["results"][0]["file"] == "AGENT.md"
    assert body["results"][0]["heading"] == "Preferences > Editor"
    assert {r["source"] for r in body["results"]} == {"agent"}


def test_search_table_and_crew_label(tier: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "gruvbox", "-p", str(tier), "-S", "crew", "-l", "1"]) == 0
    out = capsys.readouterr().out
    assert len([ln for ln in out.splitlines() if ".md:" in ln]) == 1
    assert "gruvbox" in out


@pytest.fixture
def crew_tier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SIDECAR_CREW_DIR", raising=False)
    monkeypatch.delenv("SIDECAR_AGENT_DIR", raising=False)
    root = tmp_path / "crew"
    (root / "topics").mkdir(parents=True)
    (root / "CREW.md").write_text("# Crew\nThe crew deploys with the falcon pipeline.\n")
    (root / "topics" / "deploys.md").write_text("# Deploys\nFalcon runs every night.\n")
    return root


def search_sources(args: list[str], capsys: pytest.CaptureFixture[str]) -> set[str]:
    assert main(["search", *args, "-F", "json"]) == 0
    return {r["source"] for r in json.loads(capsys.readouterr().out)["results"]}


def test_search_labels_a_crew_folder_as_crew(
    crew_tier: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No -S: a folder with CREW.md and no AGENT.md is the crew tier.
    assert search_sources(["falcon", "-p", str(crew_tier)], capsys) == {"crew"}
    assert main(["status", "-p", str(crew_tier)]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "crew"
    # -S always wins.
    assert search_sources(["falcon", "-p", str(crew_tier), "-S", "agent"], capsys) == {"agent"}


def test_search_labels_the_configured_crew_dir_as_crew(
    crew_tier: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (crew_tier / "CREW.md").unlink()  # no marker file: the folder is crew by configuration
    assert search_sources(["falcon", "-p", str(crew_tier)], capsys) == {"agent"}
    monkeypatch.setenv("SIDECAR_CREW_DIR", str(crew_tier / "topics" / ".."))
    assert search_sources(["falcon", "-p", str(crew_tier)], capsys) == {"crew"}


def test_search_sees_files_changed_since_last_run(
    tier: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["search", "gruvbox", "-p", str(tier)])
    (tier / "AGENT.md").write_text("# Preferences\nSwitched to the nord theme.\n")
    capsys.readouterr()
    main(["search", "nord", "-p", str(tier), "-F", "json"])
    assert json.loads(capsys.readouterr().out)["count"] == 1


def test_reindex_and_status(tier: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reindex", "-p", str(tier)]) == 0
    assert "indexed 2 files" in capsys.readouterr().out
    assert main(["status", "-p", str(tier)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["total_files"] == 2
    assert status["indexed_at"]


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sidecar", "search", "x", "-p", str(tmp_path / "nope")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "is not a directory" in result.stderr


def test_seed_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["seed-demo", str(tmp_path / "demo")]) == 0
    assert (tmp_path / "demo" / "agent" / "AGENT.md").is_file()
    assert (tmp_path / "demo" / "crew" / "CREW.md").is_file()


def run_sidecar(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar", *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"SIDECAR_EMBED_THREADS": "abc"}, "argument --embed-threads: invalid int value: 'abc'"),
        ({"SIDECAR_PORT": "9119x"}, "argument --port: invalid int value: '9119x'"),
        (
            {"SIDECAR_EMBEDDER": "olama"},
            "embedder must be one of auto, minilm, ollama, openai, lead, none",
        ),
        ({"SIDECAR_EMBED_THREADS": "0"}, "embed threads must be at least 1"),
    ],
)
def test_serve_refuses_bad_settings_from_the_environment(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    args = ["serve", "--agent-dir", str(tmp_path), "--port", "0"]
    if "SIDECAR_PORT" in env:
        args = args[:-2]
    result = run_sidecar(args, env)
    assert result.returncode == 2
    assert says in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_serve_setting_does_not_break_other_commands(tmp_path: Path) -> None:
    result = run_sidecar(["doctor", "--url", "http://127.0.0.1:9"], {"SIDECAR_EMBED_THREADS": "x"})
    assert result.returncode == 1
    assert "unreachable" in result.stdout


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--port", "{port}"], "--port"),
        (["--role", "lead", "--port", "0", "--crew-listen", "127.0.0.1:{port}"], "--crew-listen"),
    ],
    ids=["loopback", "crew"],
)
def test_a_port_in_use_fails_the_start_before_anything_is_created(
    tmp_path: Path, flags: list[str], names: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        agent, crew = tmp_path / "agent", tmp_path / "crew"
        args = ["serve", "--agent-dir", str(agent), "--crew-dir", str(crew), "--embedder", "none"]
        args += [flag.format(port=port) for flag in flags]
        result = run_sidecar(args, {"SIDECAR_CREW_TOKEN": "t"})
    assert result.returncode == 2
    assert f"127.0.0.1:{port} is in use" in result.stderr and names in result.stderr
    assert not agent.exists() and not crew.exists()  # nothing was opened or created


def test_a_reserved_port_cannot_be_shared_by_another_server() -> None:
    """Bound but not listening, a port can still be bound by any server that sets
    SO_REUSEADDR (as aiohttp and asyncio do), which then takes it from the sidecar."""
    (mine,) = serve_cli._reserve("127.0.0.1", 0, "advice")
    with mine, socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError) as taken:
            other.bind(mine.getsockname())
        assert taken.value.errno == errno.EADDRINUSE


def test_an_address_the_resolver_lists_twice_is_reserved_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """glibc lists an address twice when /etc/hosts names it on two lines; binding it twice
    with SO_REUSEADDR would succeed, and the second listener would then fail the start."""
    resolve = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: resolve(*a, **k) * 2)
    socks = serve_cli._reserve("127.0.0.1", 0, "advice")
    try:
        assert len(socks) == 1
    finally:
        for sock in socks:
            sock.close()


def test_a_reader_that_goes_away_ends_the_command_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sidecar ... | head``: the closed pipe ends the command with no traceback."""
    assert main(["seed-demo", str(tmp_path / "demo")]) == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    with open(write_end, "w", buffering=1) as closed:
        monkeypatch.setattr(sys, "stdout", closed)
        args = ["search", "database", "-p", str(tmp_path / "demo" / "crew"), "--format", "json"]
        assert main(args) == 1


def test_the_command_line_loads_the_daemon_only_to_serve() -> None:
    """``serve`` starts parsing a cold tier before it loads the HTTP stack and every
    capability (most of a start), so the two overlap; nothing imported with the command
    line may bring them in first."""
    heavy = ["aiohttp", "mcp", "numpy", "sidecar.service", "sidecar.server"]
    code = f"import sys, sidecar.cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_serve_refuses_an_agent_dir_that_is_a_file(tmp_path: Path) -> None:
    memory = tmp_path / "memory.md"
    memory.write_text("# not a folder\n")
    result = run_sidecar(["serve", "--agent-dir", str(memory), "--port", "0"], {})
    assert result.returncode == 2
    assert f"--agent-dir {memory} is not a folder" in result.stderr
    assert "Errno" not in result.stderr and "Traceback" not in result.stderr
    assert memory.read_text() == "# not a folder\n"


def test_serve_says_which_memory_folder_it_created(tmp_path: Path) -> None:
    typo = tmp_path / "memroy"  # a misspelt --agent-dir: an empty memory, said so once
    daemon = SidecarProcess(typo, tmp_path / "crew", role="agent").start()
    try:
        lines = [json.loads(line) for line in daemon.log_path.read_text().splitlines()]
    finally:
        daemon.terminate()
    created = [e for e in lines if e["msg"].startswith("created an empty memory folder")]
    assert [(e["level"], e["folder"]) for e in created] == [("info", str(typo))]
    assert typo.is_dir()


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"SIDECAR_CREW_LISTEN": "nowhere"}, "argument --crew-listen: expected HOST:PORT"),
        ({"SIDECAR_LLM_TIMEOUT": "soon"}, "argument --llm-timeout: invalid float value: 'soon'"),
        ({"SIDECAR_LLM_API": "gpt"}, "llm api must be one of ollama, openai, not 'gpt'"),
    ],
)
def test_a_bad_serve_variable_is_refused_by_serve_alone(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    """A variable is converted and checked where its flag is parsed, with the flag's name:
    ``serve`` refuses it, and no other command reads it."""
    result = run_sidecar(["serve", "--agent-dir", str(tmp_path), "--port", "0"], env)
    assert result.returncode == 2
    assert says in result.stderr and "Traceback" not in result.stderr
    other = run_sidecar(["doctor", "--url", "http://127.0.0.1:9"], env)
    assert other.returncode == 1 and "unreachable" in other.stdout
    assert "Traceback" not in other.stderr


def test_every_serve_flag_and_variable_reaches_its_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve``'s parser and the settings it starts with come from one declaration: each
    flag given lands in its field (the caps, units and comma lists included), and a
    variable stands in for its flag."""
    for name in [n for n in os.environ if n.startswith("SIDECAR_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SIDECAR_CREW_TOKEN", "secret")
    monkeypatch.setenv("SIDECAR_ALLOWED_HOSTS", "A.example,,b.example")
    monkeypatch.setenv("SIDECAR_MIN_FREE_MB", "3")
    monkeypatch.setenv("SIDECAR_NAMESPACE", "team")
    kinds = "core daily topic tier journal-day journal-tier learnings facts-log archive"
    kinds = [*kinds.split(), "journal-archive"]
    caps = [f"--cap-{kind}-bytes" for kind in kinds]
    argv = ["serve", "--agent-dir", str(tmp_path / "a"), "--crew-dir", str(tmp_path / "c"),
            "--role", "lead", "--host", "::1", "--port", "9", "--chunk-chars", "700",
            "--reconcile-interval", "5", "--allowed-host", "C.example",
            *[arg for i, flag in enumerate(caps) for arg in (flag, str(11 + i))],
            "--crew-listen", "[::1]:99", "--embedder", "none", "--embed-threads", "2",
            "--ollama-url", "http://o", "--ollama-model", "om", "--agent-id", "ag",
            "--llm-url", "http://l/v1", "--llm-model", "lm", "--llm-api-key-env", "KEY",
            "--llm-timeout", "7.5", "--agent-store", "sqlite", "--crew-store", "sqlite",
            "--store", "", "--journal-retention-days", "45", "--log-level", "DEBUG"]  # fmt: skip
    args = build_parser().parse_args(argv)
    assert config.from_flags(vars(args)) == Settings(
        agent_dir=tmp_path / "a", crew_dir=tmp_path / "c", role="lead", host="::1", port=9,
        chunk_chars=700, reconcile_interval=5.0,
        allowed_hosts=("a.example", "b.example", "c.example"), caps=Caps(*range(11, 21)),
        min_free_bytes=3 * 1024 * 1024, lead_url=None, crew_listen=("::1", 99),
        crew_token="secret", embedder="none", embed_threads=2, ollama_url="http://o",
        ollama_model="om", agent_id="ag", llm_url="http://l/v1", llm_model="lm",
        llm_api="openai", llm_api_key_env="KEY", llm_timeout=7.5, store="",
        agent_store="sqlite", crew_store="sqlite", namespace="team", journal_retention_days=45,
    )  # fmt: skip
    assert args.log_level == "DEBUG"


def test_the_configuration_page_names_every_serve_variable() -> None:
    """docs/configuration.md (generated from the declarations) names every ``serve``
    variable, and the one ``serve`` reads outside them."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text()
    listed = set(re.findall(r"`(SIDECAR_\w+)`", page))
    declared = {f"SIDECAR_{flag.env}" for flag in config.flags()}  # the crew token included
    assert listed == declared | {"SIDECAR_LOG_LEVEL"}


@pytest.mark.parametrize(
    ("args", "env", "names"),
    [
        (["--agent-dir", ""], {}, "--agent-dir"),
        ([], {"SIDECAR_AGENT_DIR": ""}, "--agent-dir"),  # ${AGENT_DIR} of a compose file, unset
        (["--agent-dir", "{tmp}/agent"], {"SIDECAR_CREW_DIR": " "}, "--crew-dir"),
    ],
)
def test_serve_refuses_an_empty_folder_setting_rather_than_serve_the_working_directory(
    tmp_path: Path, args: list[str], env: dict[str, str], names: str
) -> None:
    """An empty --agent-dir (or SIDECAR_AGENT_DIR) read as '.': the daemon made whatever
    folder it was started in (a repository, say) its memory, and said nothing."""
    with socket.socket() as taken:  # should the folder be taken, the start ends at the port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        flags = ["--port", str(taken.getsockname()[1]), "--embedder", "none"]
        result = subprocess.run(
            [sys.executable, "-m", "sidecar", "serve", *flags,
             *(a.format(tmp=tmp_path) for a in args)],
            capture_output=True, text=True, cwd=tmp_path,
            env={**os.environ, **env},
        )  # fmt: skip
    assert result.returncode == 2
    assert f"argument {names}: is empty" in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_command_takes_its_flags_from_the_op_it_mirrors() -> None:
    """One declaration: an op's fields become a command's arguments (type, choices,
    default, required, repeated, bare flags), and what the command was given becomes a
    body the op accepts, with what it was not given left to the daemon's default."""
    op = ops.Op.of(
        "POST /x",
        query=ops.query(),
        k=ops.whole(1, 50, 5),
        scope=ops.scope(),
        kinds=ops.words(("a", "b"), None, "a or b"),
        score=ops.score(),
        walk=ops.whole(0, 1, 0),
        mark=ops.flag(True),
        payload=ops.obj("a JSON object"),
        name=ops.text(required=True),
    )
    parser = argparse.ArgumentParser()
    ops.add_args(parser, op, "query", "-k", "-S --scope --tier", "kinds=--kind", "--score",
                 "--walk", "mark=--no-mark", "--payload", "--name", score="how sure")  # fmt: skip

    args = parser.parse_args(["q", "--name", "n"])
    assert ops.cli_body(op, args) == {"query": "q", "k": 5, "scope": "agent", "walk": 0,
                                      "mark": True, "name": "n"}  # fmt: skip
    argv = ["q", "-k", "7", "--tier", "crew", "--kind", "a", "--kind", "b", "--score", "0.5",
            "--walk", "--no-mark", "--payload", '{"x": 1}', "--name", "n"]  # fmt: skip
    body = ops.cli_body(op, parser.parse_args(argv))
    assert body == {"query": "q", "k": 7, "scope": "crew", "kinds": ["a", "b"], "score": 0.5,
                    "walk": 1, "mark": False, "payload": {"x": 1}, "name": "n"}  # fmt: skip
    assert op.parse(body)["kinds"] == ("a", "b")
    for wrong in (["q"], ["q", "--name", "n", "--kind", "c"], ["q", "--name", "n", "-S", "x"]):
        with pytest.raises(SystemExit):
            parser.parse_args(wrong)
    assert "how sure" in parser.format_help() and "a JSON object" in parser.format_help()


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_command_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    """``serve --help`` crashed: a setting's help said "10%", which argparse read as a
    format directive. Every command's help is printed, and says each of its flags."""
    commands = list(_parsers(build_parser()))
    assert len(commands) > 10
    printed = {}
    for path, parser in commands:
        with pytest.raises(SystemExit) as exc:
            main([*path, "--help"])
        assert exc.value.code == 0, path
        printed[path] = out = capsys.readouterr().out
        for action in parser._actions:
            for option in action.option_strings:
                assert option in out, (path, option)
    assert "jittered by up to 10%" in " ".join(printed[("serve",)].split())
