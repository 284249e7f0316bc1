"""``sidecar maintain [--scope] [--dry-run]``, through the running daemon."""

from __future__ import annotations

import argparse

from sidecar.daemon_client import call, client_command, print_json
from sidecar.lifecycle.ops import MAINTAIN
from sidecar.ops import add_args, cli_body


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(
        sub, "maintain", cmd_maintain, "archive daily logs past the retention window now"
    )
    add_args(p, MAINTAIN, "--scope", "--dry-run")


def cmd_maintain(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/maintain", cli_body(MAINTAIN, args))
    if not print_json(args, answer):
        from sidecar.lifecycle.tools import render  # with the MCP SDK: not for every command

        print(render(answer, {}))
    return 0
