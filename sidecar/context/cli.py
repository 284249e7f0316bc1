"""``sidecar context``: the memory block for a system prompt, from the running daemon."""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.parse
import urllib.request

from sidecar.daemon_client import client_command, error_detail, unreachable


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(sub, "context", cmd_context, "print the memory block for a system prompt",
                       json_help="JSON with per-section accounting")  # fmt: skip
    p.add_argument(
        "--budget", type=int, default=15_000, help="characters, 1000 to 200000 (default 15000)"
    )
    p.add_argument("--query", help="fill leftover budget with the best hits for this")
    p.add_argument("--user-id", help="the session opener, for the operator model")
    p.add_argument("--workspace-id", help="the session opener's workspace")


def cmd_context(args: argparse.Namespace) -> int:
    params = {"budget": args.budget, "query": args.query, "user_id": args.user_id,
              "workspace_id": args.workspace_id}  # fmt: skip
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    accept = "application/json" if args.json else "text/plain"
    req = urllib.request.Request(f"{args.url.rstrip('/')}/memory/context?{query}",
                                 headers={"Accept": accept})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            sys.stdout.write(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"sidecar: {exc.code}: {error_detail(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SystemExit(f"sidecar: {unreachable(args.url, getattr(exc, 'reason', exc))}") from None
    return 0
