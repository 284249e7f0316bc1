"""``sidecar mcp``: the memory tools over MCP on stdin/stdout, for a client that starts
its servers as processes; every call goes to the running daemon."""

from __future__ import annotations

import argparse
import asyncio
import os

from sidecar import logs
from sidecar.cli.serve import log_level_option
from sidecar.daemon_client import client_command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(
        sub, "mcp", cmd_mcp, "serve the memory tools over MCP on stdin/stdout", json_help=None
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=os.environ.get("SIDECAR_MCP_POLL_INTERVAL", 1.0),
        help="seconds between daemon health checks (env SIDECAR_MCP_POLL_INTERVAL)",
    )
    log_level_option(p)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Logs go to stderr: stdout is the protocol."""
    logs.setup(args.log_level)
    try:
        from sidecar.api.mcp import stdio as mcp_stdio  # the MCP SDK loads only for this command

        asyncio.run(mcp_stdio.serve_stdio(args.url, args.poll_interval))
    except KeyboardInterrupt:
        return 130
    return 0
