"""Run ``sidecar serve`` as a real separate process for end-to-end tests."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A free port below the ephemeral range: a port the kernel handed out (bind to 0) can
    be given to any outgoing connection in the time before the sidecar binds it, and once
    was; ports below the range are never handed out that way."""
    floor = _ephemeral_floor()
    for _ in range(1000):
        port = random.randrange(max(1024, floor - 12_000), floor)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port below {floor}")


# What every client of the API sends: writes and reindex requests need it.
JSON = {"Content-Type": "application/json"}


class SidecarProcess:
    def __init__(
        self,
        agent_dir: Path,
        crew_dir: Path,
        role: str = "lead",
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            sys.executable, "-m", "sidecar", "serve",
            "--agent-dir", str(agent_dir), "--crew-dir", str(crew_dir),
            "--role", role, "--port", str(self.port), "--log-level", "INFO", *(extra or []),
        ]  # fmt: skip
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        agent_dir.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = agent_dir.parent / f"sidecar-{self.port}.log"

    def start(self, timeout: float = 20.0) -> SidecarProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, env=self.env)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"sidecar exited early:\n{self.log_path.read_text()}")
            try:
                health = self.get("/healthz")
                if health.get("watcher") == "ready" and all(
                    t["state"] in ("ready", "proxied") for t in health["tiers"].values()
                ):
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or listening and still starting its service
            if time.monotonic() > deadline:
                self.kill()  # not left running past the test that gave up on it
                raise AssertionError(f"sidecar not ready:\n{self.log_path.read_text()}")
            time.sleep(0.02)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=JSON)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        url: str | None = None,
    ) -> tuple[int, Any]:
        """Any request, error statuses included: (status, JSON body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request((url or self.url) + path, data=data, method=method,
                                     headers={**JSON, **(headers or {})})  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def search(self, query: str, scope: str = "agent") -> list[dict[str, Any]]:
        body = self.request("POST", "/memory/search", {"query": query, "scope": scope})
        return list(body["results"])

    def terminate(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def wait_for(check: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll a synchronous check until true, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)
