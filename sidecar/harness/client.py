"""A hook's line to the daemon: short timeouts, one deadline for the whole hook, and a
log of what went wrong in a file, since the harness reads the hook's stdout.

A harness waits for its hooks, so a daemon that is down, slow or refusing must cost the
agent well under a second: each request gets at most ``REQUEST_TIMEOUT_S`` and all of a
hook's requests together ``DEADLINE_S`` (the offline block, process start and interpreter
exit come on top of it, within a second in all).
"""

from __future__ import annotations

import http.client
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REQUEST_TIMEOUT_S = 0.4
DEADLINE_S = 0.6
DEFAULT_URL = "http://127.0.0.1:9119"  # where ``sidecar serve`` listens unless told
MAX_LOG_BYTES = 256 * 1024  # then the log moves to .1, replacing the one before


class Unavailable(Exception):
    """The daemon did not answer in time, or at all."""


class Refused(Unavailable):
    """The daemon answered with an error."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(f"HTTP {status} {error}: {detail}")
        self.status, self.error = status, error


class Client:
    def __init__(self, url: str, deadline_s: float = DEADLINE_S) -> None:
        parts = urlsplit(url)
        self.bad = None
        if parts.scheme != "http" or not parts.hostname:
            self.bad = f"the daemon's URL must be http://host:port, not {url!r}"
        self.host, self.port = parts.hostname or "", parts.port or 80
        self.base = parts.path.rstrip("/")
        self.until = time.monotonic() + deadline_s

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One JSON request within what is left of the deadline; Unavailable if the daemon
        is down or slow, Refused if it answers with an error."""
        if self.bad:
            raise Unavailable(self.bad)
        left = min(REQUEST_TIMEOUT_S, self.until - time.monotonic())
        if left <= 0:
            raise Unavailable("no time left in the hook's deadline")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        conn = http.client.HTTPConnection(self.host, self.port, timeout=left)
        try:
            conn.request(method, self.base + path, data, headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise Unavailable(f"{method} {path}: {exc or type(exc).__name__}") from None
        finally:
            conn.close()
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = None
        if resp.status >= 400:
            err = answer if isinstance(answer, dict) else {}
            raise Refused(resp.status, str(err.get("error", resp.reason)),
                          str(err.get("detail", "")))  # fmt: skip
        return answer


def log_path() -> Path:
    """``SIDECAR_HOOK_LOG``, else ``.hooks.log`` in the agent tier (``SIDECAR_AGENT_DIR``,
    else the daemon's default)."""
    if named := os.environ.get("SIDECAR_HOOK_LOG"):
        return Path(named).expanduser()
    return Path(os.environ.get("SIDECAR_AGENT_DIR") or "~/.memory").expanduser() / ".hooks.log"


def log(event: str, session_id: str | None, message: str) -> None:
    """One JSON line in the hook's log, redacted as the journal's events are; a log that
    cannot be written is let go (a hook never fails the agent over its own log)."""
    from sidecar.harness.redact import redact  # messages quote the payload and the daemon

    path = log_path()
    line = json.dumps({"ts": datetime.now(UTC).isoformat(timespec="seconds"), "event": event,
                       "session_id": session_id, "message": redact(message[:2000])},
                      ensure_ascii=False)  # fmt: skip
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        with path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass
