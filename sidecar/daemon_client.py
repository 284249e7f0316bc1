"""A blocking JSON client for the CLI commands that talk to a running daemon, and what
every such command shares: where it looks for the daemon (``--url``), ``--json``, and
printing the answer."""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

DEFAULT_PORT = 9119  # where ``sidecar serve`` listens, and so where a client looks


def client_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    func: Callable[[argparse.Namespace], int],
    help: str,
    json_help: str | None = "print the daemon's JSON answer",
) -> argparse.ArgumentParser:
    """A command that talks to the daemon: ``--url`` (``SIDECAR_URL``, else the default
    port on loopback) and, unless ``json_help`` is None, ``--json``."""
    p = sub.add_parser(name, help=help)
    url = os.environ.get("SIDECAR_URL", f"http://127.0.0.1:{DEFAULT_PORT}")
    p.add_argument("--url", default=url, help="the local daemon (env SIDECAR_URL)")
    if json_help is not None:
        p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=func)
    return p


def given(**fields: Any) -> dict[str, Any]:
    """The optional fields a command was given: one left out stays out of the request, so
    the daemon's default holds."""
    return {name: value for name, value in fields.items() if value not in (None, "", [])}


def print_hits(
    args: argparse.Namespace,
    answer: dict[str, Any],
    warnings: str,
    none: str,
    text: str,
    lines: Callable[[dict[str, Any], str], list[str]],
) -> None:
    """A search answer in a shell (as it came with ``--json``): its ``warnings``, then each
    hit's ``lines`` given its ``text``, which a flagged hit withholds as the MCP tools do
    (``sidecar read`` shows a flagged file to the operator asking for it, not a list)."""
    if print_json(args, answer):
        return
    for warning in answer.get(warnings, []):
        print(f"warning: {warning}")
    if not answer["hits"]:
        print(none)
    for hit in answer["hits"]:
        shown = "[withheld: flagged as a prompt injection]" if hit.get("flagged") else hit[text]
        print("\n".join(lines(hit, str(shown))))


def print_json(args: argparse.Namespace, body: Any) -> bool:
    """With ``--json``, print the daemon's answer as it came and say so (True); without,
    the command prints its own lines."""
    if args.json:
        print(json.dumps(body, indent=2, ensure_ascii=False))
    return bool(args.json)


def error_detail(exc: urllib.error.HTTPError) -> str:
    """Our JSON error body's detail, else the status line's reason."""
    try:
        body = json.loads(exc.read())
        return str(body.get("detail") or body.get("error") or exc.reason)
    except (ValueError, AttributeError, OSError):
        return str(exc.reason)


def unreachable(base: str, why: object) -> str:
    """No daemon answered at ``base``: say which URL was tried, and the two ways out (start
    one, or name the one already running elsewhere)."""
    return (
        f"no sidecar answered at {base} (unreachable: {why}). Start one with `sidecar serve` "
        "(or `make run`); if one is running on another port (make run PORT=9311, say), pass "
        "--url http://127.0.0.1:9311 or export SIDECAR_URL=http://127.0.0.1:9311"
    )


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def call(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One request to the daemon; an error answer or no answer ends the command with a
    message saying which (exit status 1)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    req = urllib.request.Request(base.rstrip("/") + path, data, headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"sidecar: {exc.code}: {error_detail(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SystemExit(f"sidecar: {unreachable(base, getattr(exc, 'reason', exc))}") from None
