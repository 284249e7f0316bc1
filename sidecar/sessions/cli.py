"""``sidecar session start`` and ``sidecar session end``: a session from a shell (a
harness's hook script, say), through the running daemon."""

from __future__ import annotations

import argparse
import sys

from sidecar.daemon_client import call, client_command, print_json
from sidecar.ops import add_args, cli_body
from sidecar.sessions.ops import END, START


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    session = sub.add_parser("session", help="start a session with its memory block, or end one")
    verbs = session.add_subparsers(dest="verb", required=True)
    p = client_command(
        verbs, "start", cmd_start, "open a session; print the memory block for its task",
        json_help="print the daemon's JSON answer (the id and the block)",
    )  # fmt: skip
    add_args(p, START, "--task", "--session-id", "--agent-id", "--user-id", "--workspace-id",
             "--budget")  # fmt: skip
    p = client_command(
        verbs, "end", cmd_end, "end a session: reinforce, promote its notes, summarise it"
    )
    add_args(p, END, "session_id")


def cmd_start(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/session/start", cli_body(START, args))
    if not print_json(args, answer):
        print(f"session {answer['session_id']}", file=sys.stderr)
        sys.stdout.write(answer["context"])
    return 0


def cmd_end(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/session/end", cli_body(END, args))
    if print_json(args, answer):
        return 0
    if not answer["started"]:
        print(f"{answer['session_id']}: not started here; learnings reinforced: "
              f"{sum(answer['reinforced'].values())}")  # fmt: skip
    elif answer["already_ended"]:
        print(f"{answer['session_id']}: had already ended at {answer['ended_at']}")
    else:
        print(f"{answer['session_id']}: ended; {answer['events']} events, "
              f"{len(answer['promoted'])} note group(s) promoted, summary {answer['summary_id']}"
              + (", memory updated" if answer["memory_updated"] else ""))  # fmt: skip
    return 0
