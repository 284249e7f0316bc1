"""A blocking JSON client for the CLI commands that talk to a running daemon."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


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
