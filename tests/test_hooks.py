"""``sidecar hook``: Claude Code's hook payloads (recorded in ``harness_payloads/``) in,
the harness's JSON out, and events in the journal; a daemon that is down, slow or
refusing never breaks the agent."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from sidecar.cli import main
from sidecar.context.offline import NOTICE
from sidecar.harness import claude_code, tool_use
from sidecar.harness.client import MAX_LOG_BYTES
from tests.sidecar_process import SidecarProcess, free_port

PAYLOADS = Path(__file__).parent / "harness_payloads"
SESSION = "9f3c2a1e-5b7d-4c8e-a1f2-3d4e5f6a7b8c"
EVENT_FILES = {
    "session-start": "session_start.json",
    "user-prompt": "user_prompt.json",
    "post-tool-use": "post_tool_use_bash.json",
    "stop": "stop.json",
    "session-end": "session_end.json",
}
TODAY = datetime.now(UTC).date()


def payload(name: str, **changes: Any) -> dict[str, Any]:
    return {**json.loads((PAYLOADS / name).read_text()), **changes}


def lay_down_memory(agent: Path, crew: Path) -> None:
    """Memory from earlier days: the core file, yesterday's log, a standing directive."""
    (agent / "daily").mkdir(parents=True, exist_ok=True)
    (crew / "learnings").mkdir(parents=True, exist_ok=True)
    (agent / "AGENT.md").write_text("- The orders table is large: index it CONCURRENTLY.\n")
    yesterday = (TODAY - timedelta(days=1)).isoformat()
    (agent / "daily" / f"{yesterday}.md").write_text("- Staging deploy blocked by a lock.\n")
    (crew / "learnings" / "deploys.md").write_text(
        "---\nid: freeze\ntype: directive\ninstitutional: true\n---\n"
        "Never deploy to production on a Friday.\n"
    )


def hook_env(url: str, agent: Path, crew: Path, log: Path) -> dict[str, str]:
    """What the hooks get. A loaded test machine can take longer than the 0.6 s default to
    answer (CI failed so at load 10): these tests are about what a hook does, not its speed
    (``bench --only hooks`` measures that), so its requests get 30 s in all; each still
    times out after 0.4 s."""
    return {**os.environ, "SIDECAR_URL": url, "SIDECAR_AGENT_DIR": str(agent),
            "SIDECAR_CREW_DIR": str(crew), "SIDECAR_HOOK_LOG": str(log),
            "SIDECAR_HOOK_DEADLINE": "30"}  # fmt: skip


def run_hook(
    event: str, body: dict[str, Any] | bytes, env: dict[str, str], *args: str
) -> tuple[int, str]:
    """The hook as the harness runs it: a process, the payload on stdin."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    proc = subprocess.run([sys.executable, "-m", "sidecar", "hook", event, *args], input=data,
                          capture_output=True, env=env, timeout=60)  # fmt: skip
    return proc.returncode, proc.stdout.decode()


def in_process(event: str, body: dict[str, Any] | bytes, monkeypatch: pytest.MonkeyPatch,
               capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:  # fmt: skip
    """The same command in this process: for many hooks in a row."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(["hook", event])
    return code, capsys.readouterr().out


def context_of(out: str, event: str) -> str:
    """The additional context, from stdout parsed as Claude Code parses it."""
    answer = json.loads(out)
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    return str(answer["hookSpecificOutput"]["additionalContext"])


def log_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SidecarProcess]:
    root = tmp_path_factory.mktemp("hooks")
    agent, crew = root / "agent", root / "crew"
    lay_down_memory(agent, crew)
    proc = SidecarProcess(agent, crew, extra=["--embedder", "none"]).start()
    proc.agent, proc.crew = agent, crew  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        proc.kill()


@pytest.fixture
def env(daemon: SidecarProcess, tmp_path: Path) -> dict[str, str]:
    return hook_env(daemon.url, daemon.agent, daemon.crew, tmp_path / "hooks.log")  # type: ignore[attr-defined]


def listing(daemon: SidecarProcess, session: str, kind: str) -> list[dict[str, Any]]:
    return list(daemon.get(f"/memory/journal?session_id={session}&type={kind}&limit=500")["events"])


# -- with the daemon up --------------------------------------------------------------------


def session_log(daemon: SidecarProcess, session: str) -> list[dict[str, Any]]:
    path = daemon.agent / "sessions" / "log.jsonl"  # type: ignore[attr-defined]
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r.get("session_id") == session]


def test_session_start_opens_the_session_and_answers_its_block_as_additional_context(
    daemon: SidecarProcess, env: dict[str, str]
) -> None:
    code, out = run_hook("session-start", payload("session_start.json"), env)
    text = context_of(out, "SessionStart")
    assert code == 0
    assert "index it CONCURRENTLY" in text and "Never deploy to production on a Friday" in text
    assert NOTICE not in text  # the daemon's block, not the files'
    assert [r["kind"] for r in session_log(daemon, SESSION)][:1] == ["started"]


def test_an_operator_named_by_half_still_gives_the_agent_its_memory(
    daemon: SidecarProcess, env: dict[str, str], down: dict[str, str]
) -> None:
    """A user id without its workspace (or the reverse) names no operator: the daemon and
    the files both refuse it, so the hook drops it, says so, and the agent has memory."""
    for where in (env, down):
        half = {**where, "SIDECAR_USER_ID": "ada"}
        half.pop("SIDECAR_WORKSPACE_ID", None)
        sid = f"half-operator-{where is env}"
        code, out = run_hook("session-start", payload("session_start.json", session_id=sid), half)
        assert code == 0
        assert "index it CONCURRENTLY" in context_of(out, "SessionStart")
        said = [line["message"] for line in log_lines(Path(half["SIDECAR_HOOK_LOG"]))]
        assert any("go together" in m for m in said)


def test_a_budget_out_of_range_is_brought_into_it_and_the_agent_has_its_memory(
    daemon: SidecarProcess, env: dict[str, str], down: dict[str, str]
) -> None:
    """The daemon and the files both refuse a budget outside 1000..200000 characters;
    a hook written with one still gives the agent a block, and says what it used."""
    for where in (env, down):
        for asked, used in (("10", 1000), ("9999999", 200_000)):
            sid = f"budget-{asked}-{where is env}"
            body = payload("session_start.json", session_id=sid)
            code, out = run_hook("session-start", body, where, "--budget", asked)
            text = context_of(out, "SessionStart")
            assert code == 0 and 0 < len(text) <= used
            said = [line["message"] for line in log_lines(Path(where["SIDECAR_HOOK_LOG"]))]
            assert any(f"--budget {asked} is outside" in m and f"with {used}" in m for m in said)


def test_user_prompt_is_recorded_and_past_events_come_back_within_the_budget(
    daemon: SidecarProcess, env: dict[str, str]
) -> None:
    daemon.request("POST", "/memory/journal", {
        "type": "deploy.failed", "summary": "staging deploy failed: migration lock timeout on "
        "orders; fixed by a concurrent index", "severity": "error", "session_id": "earlier",
    })  # fmt: skip
    session = "prompt-session"
    code, out = run_hook("user-prompt", payload("user_prompt.json", session_id=session), env)
    text = context_of(out, "UserPromptSubmit")
    assert code == 0
    assert "migration lock timeout" in text and text.startswith("<recalled-memory>")
    assert len(text) <= claude_code.PROMPT_CONTEXT_CHARS
    (recorded,) = listing(daemon, session, "user.message")
    assert recorded["summary"].startswith("The staging deploy failed again")
    assert recorded["source"] == "claude-code"


def test_fifty_tool_uses_become_fifty_events_in_their_session(
    daemon: SidecarProcess,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    shapes = ["post_tool_use_bash.json", "post_tool_use_read.json", "post_tool_use_edit.json"]
    for k in range(50):
        body = payload(shapes[k % 3], session_id="fifty", tool_use_id=f"toolu_{k:03d}")
        assert in_process("post-tool-use", body, monkeypatch, capsys) == (0, "")
    in_process("post-tool-use", payload("post_tool_use_bash.json", session_id="other"),
               monkeypatch, capsys)  # fmt: skip
    events = listing(daemon, "fifty", "tool.result")
    assert sorted(e["payload"]["tool_use_id"] for e in events) == [
        f"toolu_{k:03d}" for k in range(50)
    ]
    reads = [e for e in events if e["payload"]["tool"] == "Read"]
    assert reads[0]["summary"] == "Read /work/app/migrations/0042_orders_index.py"
    assert "outcome" not in reads[0]["payload"]  # a read's output is the file: not copied
    journal = daemon.agent / "journal"  # type: ignore[attr-defined]
    on_disk = {r["id"]: r for p in journal.glob("*.jsonl") for r in map(json.loads, p.open())}
    assert on_disk[reads[0]["id"]]["importance"] == tool_use.HIGH_VOLUME_IMPORTANCE
    bash = next(e for e in events if e["payload"]["tool"] == "Bash")
    assert bash["severity"] == "info" and "lock timeout on table orders" in bash["summary"]
    assert all(len(json.dumps(e["payload"]).encode()) <= tool_use.MAX_PAYLOAD_BYTES
               for e in events)  # fmt: skip
    assert not log_lines(Path(env["SIDECAR_HOOK_LOG"]))


def test_a_secret_in_a_tool_use_never_reaches_the_journal_files(
    daemon: SidecarProcess, env: dict[str, str]
) -> None:
    body = payload("post_tool_use_secrets.json", session_id="secrets")
    assert run_hook("post-tool-use", body, env) == (0, "")
    (event,) = listing(daemon, "secrets", "tool.result")
    on_disk = "".join(p.read_text() for p in (daemon.agent / "journal").glob("*.jsonl"))  # type: ignore[attr-defined]
    assert event["id"] in on_disk
    for secret in ("tok_live_8c1d2e3f4a5b6c7d8e9f0a1b", "AKIAZ7Q3EXAMPLE4KEY2",
                   "q8Xv2Lm9Pz4Rt7Wk1Jn5Hb3Gd6Fs0Yc8Ve2Ua4Ti"):  # fmt: skip
        assert secret not in on_disk
    assert "Authorization: Bearer [REDACTED]" in event["summary"]
    assert "AWS_SECRET_ACCESS_KEY=[REDACTED]" in event["payload"]["outcome"]


@pytest.mark.parametrize("event", ["session-end", "stop"])
def test_a_session_round_trip_ends_with_its_summary(
    daemon: SidecarProcess, env: dict[str, str], event: str
) -> None:
    session = f"round-trip-{event}"
    started = run_hook("session-start", payload("session_start.json", session_id=session), env)
    context_of(started[1], "SessionStart")
    run_hook("user-prompt", payload("user_prompt.json", session_id=session), env)
    run_hook("post-tool-use", payload("post_tool_use_bash.json", session_id=session), env)
    body = payload(EVENT_FILES[event], session_id=session)
    assert run_hook(event, body, env) == (0, "")  # nothing the harness could misread
    assert [r["kind"] for r in session_log(daemon, session)][-1] == "ended"
    (summary,) = listing(daemon, session, "summary.generated")
    assert summary["session_id"] == session
    assert not log_lines(Path(env["SIDECAR_HOOK_LOG"]))  # the daemon took every hook


def test_a_resumed_session_that_had_ended_still_gets_the_daemons_block(
    daemon: SidecarProcess, env: dict[str, str]
) -> None:
    """Claude Code's --resume starts again under the old id, after its SessionEnd."""
    body = payload("session_start.json", session_id="resumed", source="resume")
    context_of(run_hook("session-start", body, env)[1], "SessionStart")
    run_hook("session-end", payload("session_end.json", session_id="resumed"), env)
    code, out = run_hook("session-start", body, env)
    text = context_of(out, "SessionStart")
    assert code == 0 and "index it CONCURRENTLY" in text and NOTICE not in text
    (line,) = log_lines(Path(env["SIDECAR_HOOK_LOG"]))
    assert line["message"].startswith("the session had ended")
    assert [r["kind"] for r in session_log(daemon, "resumed")].count("ended") == 1


# -- with the daemon down, slow or refusing ------------------------------------------------


@pytest.fixture
def down(tmp_path: Path) -> dict[str, str]:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    lay_down_memory(agent, crew)
    return hook_env(f"http://127.0.0.1:{free_port()}", agent, crew, tmp_path / "hooks.log")


def test_with_the_daemon_down_every_hook_exits_0_and_session_start_reads_the_files(
    down: dict[str, str],
) -> None:
    for event, name in EVENT_FILES.items():
        code, out = run_hook(event, payload(name), down)
        assert code == 0
        if event == "session-start":
            text = context_of(out, "SessionStart")
            assert text.startswith(NOTICE)
            assert "index it CONCURRENTLY" in text and "Staging deploy blocked" in text
            assert "Never deploy to production on a Friday" in text
        else:
            assert out == ""
    logged = log_lines(Path(down["SIDECAR_HOOK_LOG"]))
    assert [line["event"] for line in logged] == list(claude_code.EVENTS.values())
    assert all(line["session_id"] == SESSION for line in logged)


class Stub:
    """A daemon that answers every request with ``status``, or never answers at all."""

    def __init__(self, status: int | None) -> None:
        self.status = status
        self.seen: list[tuple[str, Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.path, await request.json() if request.can_read_body else None))
        if self.status is None:
            await self.release.wait()
        return web.json_response(
            {"error": "busy", "detail": "try later"}, status=self.status or 200
        )


@pytest.fixture
def stub(request: pytest.FixtureRequest) -> Iterator[tuple[Stub, str]]:
    """The stub on loopback, in a thread of its own (the hooks block this one)."""
    stub, loop = Stub(request.param), asyncio.new_event_loop()
    port, ready = free_port(), threading.Event()

    async def serve() -> web.AppRunner:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", stub.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return runner

    runner = loop.run_until_complete(serve())
    thread = threading.Thread(target=lambda: (ready.set(), loop.run_forever()), daemon=True)
    thread.start()
    ready.wait()
    try:
        yield stub, f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stub.release.set)
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@pytest.mark.parametrize("stub", [None, 503], indirect=True, ids=["slow", "refusing"])
def test_a_slow_or_refusing_daemon_costs_a_log_line_not_the_session(
    stub: tuple[Stub, str], down: dict[str, str]
) -> None:
    seen, url = stub
    env = {**down, "SIDECAR_URL": url}
    code, out = run_hook("session-start", payload("session_start.json"), env)
    assert code == 0 and context_of(out, "SessionStart").startswith(NOTICE)
    assert run_hook("post-tool-use", payload("post_tool_use_bash.json"), env) == (0, "")
    assert run_hook("stop", payload("stop.json"), env) == (0, "")
    assert [path for path, _ in seen.seen] == [
        "/memory/session/start",
        "/memory/journal",
        "/memory/session/end",
    ]
    assert seen.seen[2][1] == {"session_id": SESSION}
    logged = log_lines(Path(env["SIDECAR_HOOK_LOG"]))
    assert [line["event"] for line in logged] == ["SessionStart", "PostToolUse", "Stop"]
    why = "timed out" if seen.status is None else "HTTP 503 busy"
    assert why in logged[1]["message"]


def test_a_payload_that_is_not_json_is_logged_and_the_agent_goes_on(
    down: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in down.items():
        monkeypatch.setenv(name, value)
    assert in_process("post-tool-use", b"{not json", monkeypatch, capsys) == (0, "")
    assert in_process("user-prompt", b"[1, 2]", monkeypatch, capsys) == (0, "")
    assert in_process("post-tool-use", {"session_id": "s"}, monkeypatch, capsys) == (0, "")
    code, out = in_process("session-start", b"", monkeypatch, capsys)
    assert code == 0 and context_of(out, "SessionStart").startswith(NOTICE)
    assert main(["hook", "pre-compact"]) == 0  # a hook line this sidecar does not know
    messages = [line["message"] for line in log_lines(Path(down["SIDECAR_HOOK_LOG"]))]
    assert "stdin is not JSON" in messages[0] and "must be a JSON object" in messages[1]
    assert "without a tool_name" in messages[2]
    assert "not a hook this sidecar runs" in messages[-1]


def test_the_hook_log_stays_bounded(down: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    for name, value in down.items():
        monkeypatch.setenv(name, value)
    log = Path(down["SIDECAR_HOOK_LOG"])
    log.write_text("x" * (MAX_LOG_BYTES + 1))
    in_process("stop", payload("stop.json"), monkeypatch, capsys)
    assert log.with_name(log.name + ".1").stat().st_size == MAX_LOG_BYTES + 1
    assert [line["event"] for line in log_lines(log)] == ["Stop"]


def test_offline_learnings_that_do_not_parse_are_logged(
    down: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in down.items():
        monkeypatch.setenv(name, value)
    broken = Path(down["SIDECAR_CREW_DIR"]) / "learnings" / "broken.md"
    broken.write_text("---\nid: [unclosed\n")
    code, out = in_process("session-start", payload("session_start.json"), monkeypatch, capsys)
    assert code == 0 and "Never deploy to production on a Friday" in context_of(out, "SessionStart")
    (_, problem) = log_lines(Path(down["SIDECAR_HOOK_LOG"]))
    assert problem["message"].startswith("not read as written: crew learnings/broken.md:1:")


def test_the_hook_log_holds_no_secret_the_payload_or_command_line_carried(
    down: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The log quotes what it was given (a payload's event name, an unknown hook line):
    it used to keep a token there as it came."""
    for name, value in down.items():
        monkeypatch.setenv(name, value)
    body = {"session_id": "s", "hook_event_name": "password=hunter9", "prompt": "hi"}
    assert in_process("user-prompt", body, monkeypatch, capsys) == (0, "")
    assert main(["hook", "pre-compact", "--token", "ghp_" + "a1" * 18]) == 0
    text = Path(down["SIDECAR_HOOK_LOG"]).read_text()
    assert "hunter9" not in text and "a1a1a1" not in text and "[REDACTED]" in text


@pytest.mark.parametrize("value", ["soon", "0", "nan", "-1", "61"])
def test_a_hook_deadline_that_is_not_a_number_of_seconds_is_logged_and_the_default_used(
    down: dict[str, str], value: str
) -> None:
    env = {**down, "SIDECAR_HOOK_DEADLINE": value}
    code, out = run_hook("session-start", payload("session_start.json"), env)
    assert code == 0 and context_of(out, "SessionStart").startswith(NOTICE)
    messages = [line["message"] for line in log_lines(Path(env["SIDECAR_HOOK_LOG"]))]
    assert any(m.startswith(f"SIDECAR_HOOK_DEADLINE={value!r} is not a number") for m in messages)
