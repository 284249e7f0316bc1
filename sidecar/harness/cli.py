"""``sidecar hook <event>``: one harness hook, and ``sidecar hook install claude-code``.

A harness runs a hook on every prompt and tool use and waits for it, so this command
imports only what its event needs (``sidecar.cli`` sends ``hook`` here before loading
the other commands) and never fails the agent: whatever goes wrong (bad stdin, a daemon
down, slow or refusing) is a line in the hook's log and exit status 0, with nothing on
stdout the harness could misread.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sidecar.harness.claude_code import EVENTS
from sidecar.harness.client import DEFAULT_URL

HARNESSES = ("claude-code",)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("hook", help="run an agent harness's hook (JSON on stdin and stdout), "
                       "or install the hooks in its settings")  # fmt: skip
    events = p.add_subparsers(dest="hook_event", required=True)
    for name, harness_name in EVENTS.items():
        about = f"Claude Code's {harness_name} hook"
        if name == "stop":  # see install.INSTALLED
            about = "end the session (not installed for Claude Code: its Stop ends every answer)"
        e = events.add_parser(name, help=about)
        url = os.environ.get("SIDECAR_URL", DEFAULT_URL)
        e.add_argument("--url", default=url, help="the local daemon (env SIDECAR_URL)")
        if name == "session-start":
            e.add_argument("--user-id", default=os.environ.get("SIDECAR_USER_ID"),
                           help="the operator, for their model (env SIDECAR_USER_ID)")  # fmt: skip
            e.add_argument("--workspace-id", default=os.environ.get("SIDECAR_WORKSPACE_ID"),
                           help="the operator's workspace (env SIDECAR_WORKSPACE_ID)")  # fmt: skip
            e.add_argument("--budget", type=int, default=15_000,
                           help="the memory block's characters (default 15000)")  # fmt: skip
        e.set_defaults(func=cmd_hook)
    i = events.add_parser("install", help="write the hooks into a harness's settings")
    i.add_argument("harness", choices=HARNESSES)
    i.add_argument("--project", type=Path, metavar="DIR",
                   help="DIR/.claude/settings.json (default: ~/.claude/settings.json)")  # fmt: skip
    i.add_argument("--uninstall", action="store_true",
                   help="take out the sidecar's hooks, and only those")  # fmt: skip
    i.set_defaults(func=cmd_install)


def cmd_hook(args: argparse.Namespace) -> int:
    """Exit 0 whatever happens; what went wrong goes to the hook's log."""
    from sidecar.harness import claude_code as cc
    from sidecar.harness.client import Client, Unavailable, log

    name = cc.EVENTS[args.hook_event]
    session_id = None
    try:
        try:
            payload = cc.parse(sys.stdin.buffer.read())
        except cc.BadPayload as exc:
            if args.hook_event != "session-start":
                raise
            log(name, None, f"{exc}; the session starts without Claude Code's id")
            payload = {}  # the agent still gets its memory
        user, workspace = getattr(args, "user_id", None), getattr(args, "workspace_id", None)
        if bool(user) != bool(workspace):  # the daemon and the files would both refuse it
            log(name, None, "SIDECAR_USER_ID and SIDECAR_WORKSPACE_ID go together: one alone "
                "names no operator, so memory is given without an operator model")  # fmt: skip
            user = workspace = None
        client = Client(args.url, _deadline(name))
        hook = cc.Hook(payload, client, user, workspace, _budget(args, name))
        session_id = hook.session_id
        said = payload.get("hook_event_name")
        if said not in (None, name):
            log(name, session_id, f"payload says hook_event_name={said!r}; handled as {name}")
        out = cc.HANDLERS[args.hook_event](hook)
    except (cc.BadPayload, Unavailable) as exc:
        log(name, session_id, str(exc))
        out = ""
    except Exception as exc:  # a hook never breaks the agent, whatever the bug
        log(name, session_id, f"hook failed: {type(exc).__name__}: {exc}")
        out = ""
    if out:
        sys.stdout.write(out + "\n")
    return 0


def _deadline(name: str) -> float:
    """``SIDECAR_HOOK_DEADLINE``: seconds for all of a hook's requests, for a machine whose
    daemon answers slower than the default allows (a loaded host). A value that is not a
    number from 0.1 to 60 is logged and the default used: a hook never fails the agent."""
    from sidecar.harness.client import DEADLINE_S, log

    raw = os.environ.get("SIDECAR_HOOK_DEADLINE", "").strip()
    if not raw:
        return DEADLINE_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0.1 <= seconds <= 60:  # NaN fails too
        log(name, None, f"SIDECAR_HOOK_DEADLINE={raw[:40]!r} is not a number of seconds from "
            f"0.1 to 60; the hook's requests get {DEADLINE_S} s")  # fmt: skip
        return DEADLINE_S
    return seconds


def _budget(args: argparse.Namespace, name: str) -> int:
    """A budget the daemon would refuse is brought into range, so the agent still starts
    with its memory (a misconfigured hook must not leave it with none)."""
    from sidecar.context.block import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET
    from sidecar.harness.client import log

    asked = getattr(args, "budget", DEFAULT_BUDGET)
    budget = min(max(asked, MIN_BUDGET), MAX_BUDGET)
    if budget != asked:
        log(name, None, f"--budget {asked} is outside {MIN_BUDGET}..{MAX_BUDGET} characters; "
            f"the memory block is built with {budget}")  # fmt: skip
    return int(budget)


def cmd_install(args: argparse.Namespace) -> int:
    from sidecar.harness.install import InstallError, apply, settings_path

    path = settings_path(args.project)
    try:
        changed = apply(path, not args.uninstall)
    except InstallError as exc:
        raise SystemExit(f"sidecar: {exc}") from None
    verb = "uninstalled from" if args.uninstall else "installed in"
    print(f"sidecar hooks {verb} {path}" if changed else f"{path}: nothing to change")
    return 0


def main(argv: list[str]) -> int:
    """``sidecar hook ...`` without the other commands' imports."""
    parser = argparse.ArgumentParser(prog="sidecar")
    register(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["hook", *argv])
    except SystemExit as exc:
        if argv[:1] == ["install"] or exc.code in (0, None):
            raise
        # A harness reads some exit statuses as "block the prompt": a hook line it cannot
        # parse is the installer's mistake, which the log tells, not the agent's.
        from sidecar.harness.client import log

        log("hook", None, f"sidecar hook {' '.join(argv)}: not a hook this sidecar runs")
        return 0
    return int(args.func(args))
