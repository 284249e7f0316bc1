"""``sidecar context``: the memory block for a system prompt, from the running daemon, or
built from the memory files with ``--offline`` when there is none."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

from sidecar.context.ops import CONTEXT
from sidecar.daemon_client import client_command, error_detail, unreachable
from sidecar.ops import add_args, cli_body


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(sub, "context", cmd_context, "print the memory block for a system prompt",
                       json_help="JSON with per-section accounting")  # fmt: skip
    add_args(p, CONTEXT, "--budget", "--query", "--user-id", "--workspace-id",
             budget="characters, 1000 to 200000 (default 15000)",
             query="fill leftover budget with the best hits for this",
             user_id="the session opener, for the operator model",
             workspace_id="the session opener's workspace")  # fmt: skip
    p.add_argument("--offline", action="store_true",
                   help="build the block from the memory files, without the daemon "
                   "(tiers from SIDECAR_AGENT_DIR and SIDECAR_CREW_DIR; no --query)")  # fmt: skip


def cmd_context(args: argparse.Namespace) -> int:
    if args.offline:
        return _offline(args)
    query = urllib.parse.urlencode(cli_body(CONTEXT, args))
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


def _offline(args: argparse.Namespace) -> int:
    """The block from the files: what the daemon would show, less what needs its indexes."""
    if args.query:
        raise SystemExit("sidecar: --offline builds no search section: leave out --query")
    from sidecar.context import offline

    problems: list[str] = []
    try:
        block = offline.build(*offline.tier_dirs(), args.budget, args.user_id,
                              args.workspace_id, problems)  # fmt: skip
    except ValueError as exc:
        raise SystemExit(f"sidecar: {exc}") from None
    except OSError as exc:  # a tier that is a file, or one this user cannot read
        raise SystemExit(f"sidecar: cannot read the memory files: {exc}") from None
    if args.json:
        body = {**block.to_json(), "offline": True, "problems": problems}
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(block.text)
        for problem in problems:
            print(f"sidecar: not read as written: {problem}", file=sys.stderr)
    return 0
