"""The sidecar daemon as a real subprocess on loopback, and a keep-alive HTTP client for it.

``Daemon`` is a context manager: leaving the block (normally, on an exception,
or on Ctrl-C) always sends SIGTERM and, if the daemon does not exit in time,
SIGKILL. On Linux the daemon also gets SIGTERM if the benchmark process dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from sidecar.disk.tiers import walk_markdown

_PR_SET_PDEATHSIG = 1


class DaemonError(RuntimeError):
    """The daemon did not start, died, or never reached the state we waited for."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sidecar_command() -> list[str]:
    """The venv's ``sidecar`` console script, next to the interpreter running us."""
    script = Path(sys.executable).parent / "sidecar"
    return [str(script)] if script.exists() else [sys.executable, "-m", "sidecar"]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Client:
    """Sequential JSON requests over one persistent (keep-alive) connection."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.port = port
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def raw(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """One request; the body is read in full so the connection can be reused."""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def json(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        status, raw = self.raw(method, path, data)
        return status, json.loads(raw) if raw else None

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        status, body = self.json(
            "POST", "/memory/search", {"query": query, "limit": limit, "scope": "agent"}
        )
        if status != 200:
            raise DaemonError(f"search {query!r} answered {status}: {body}")
        return list(body["results"])

    def status(self) -> dict[str, Any]:
        code, body = self.json("GET", "/memory/status?scope=agent")
        if code != 200:
            raise DaemonError(f"status answered {code}: {body}")
        return dict(body)


class Daemon:
    def __init__(
        self,
        agent_dir: Path,
        crew_dir: Path,
        log_path: Path,
        role: str = "lead",
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.agent_dir = agent_dir
        self.crew_dir = crew_dir
        self.log_path = log_path
        self.role = role
        self.extra_args = extra_args or []
        self.env = {**os.environ, **(env or {})}
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0  # time.monotonic() when the process was spawned
        self._log: IO[bytes] | None = None
        self.client = Client(self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise DaemonError("daemon not started")
        return self.proc.pid

    def __enter__(self) -> Daemon:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        flags = {
            "--agent-dir": self.agent_dir,
            "--crew-dir": self.crew_dir,
            "--role": self.role,
            "--port": self.port,
            "--log-level": "WARNING",
            # The corpora are dated in the past: a benchmark measures them as written, so
            # the lifecycle keeps every daily log unless a benchmark (lifecycle) says so.
            "--daily-retention-days": 100_000,
        }
        cmd = [
            *sidecar_command(),
            "serve",
            *(str(x) for k, v in flags.items() if k not in self.extra_args for x in (k, v)),
            *self.extra_args,
        ]
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.started_at = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self.env,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, wait, then SIGKILL; returns the exit code (None if never started)."""
        self.client.close()
        proc, self.proc = self.proc, None
        code = None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _check_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            code = None if self.proc is None else self.proc.returncode
            raise DaemonError(f"daemon exited (code {code}); log tail:\n{self.log_tail()}")

    def wait_ready(self, timeout: float = 30.0) -> float:
        """Poll GET /healthz until it answers 200; returns the seconds it took."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            self._check_alive()
            with contextlib.suppress(OSError, http.client.HTTPException):
                if self.client.raw("GET", "/healthz")[0] == 200:
                    return time.monotonic() - started
            time.sleep(0.02)
        raise DaemonError(f"no 200 from /healthz within {timeout} s; log:\n{self.log_tail()}")

    def notes(self) -> int:
        """How many notes the daemon indexes in its agent folder: counted by the daemon's own
        walk (``learnings/`` and ``facts/`` are indexed in their own formats, not as notes),
        so a wait for them cannot drift from what the daemon does."""
        return sum(1 for _ in walk_markdown(self.agent_dir))

    def wait_indexed(
        self, expected_files: int | None = None, timeout: float = 60.0
    ) -> dict[str, Any]:
        """Poll the agent tier's status until the index is idle, holds every file (by default
        every note of the folder, :meth:`notes`), and (with an embedder) every chunk has its
        vector."""
        if expected_files is None:
            expected_files = self.notes()
        started = time.monotonic()
        last: dict[str, Any] = {}
        while time.monotonic() - started < timeout:
            self._check_alive()
            last = self.client.status()
            if (
                not last.get("indexing")
                and last.get("queue_depth") == 0
                and not last.get("pending")  # chunks still waiting for a vector
                and last.get("total_files") == expected_files
            ):
                return last
            time.sleep(0.05)
        raise DaemonError(
            f"index not ready within {timeout} s (want {expected_files} files); last status {last}"
        )

    def memory_kb(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak RSS) of the daemon process, in KiB."""
        fields: dict[str, int] = {}
        with open(f"/proc/{self.pid}/status", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(rest.split()[0])
        return fields
