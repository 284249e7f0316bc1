"""``sidecar mcp``: the memory tools over stdio, for clients that spawn their MCP servers.

The proxy holds no memory of its own: every call goes to the local daemon over
HTTP. It outlives the daemon on purpose: while the daemon is down (or says its
write path is unhealthy) the tools are withdrawn and the client is told, and
they come back, with another notice, when the daemon does. stdout carries the
protocol, so logs go to stderr only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from mcp.server.stdio import stdio_server

from sidecar.api.mcp.tools import MemoryTools, quiet_sdk_logs
from sidecar.errors import ApiError
from sidecar.ops import Op

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 1.0
HEALTH_TIMEOUT = 2.0
CALL_TIMEOUT = 10.0
WRITE_TIMEOUT = 20.0  # a write waits for fsync and for its reindex job


class HttpBackend:
    """``MemoryBackend`` over the daemon's HTTP API, on one pooled session."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:  # created lazily: it must belong to the running loop
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=8),
                timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT, connect=CONNECT_TIMEOUT),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _call(self, method: str, path: str, seconds: float, **kwargs: Any) -> dict[str, Any]:
        """One request; an error answer becomes the ``ApiError`` the daemon described."""
        async with self._http().request(
            method,
            self.url + path,
            timeout=aiohttp.ClientTimeout(total=seconds, connect=CONNECT_TIMEOUT),
            **kwargs,
        ) as resp:
            try:
                body = await resp.json(content_type=None)
            except ValueError:
                body = None
            if not isinstance(body, dict):
                raise RuntimeError(f"{method} {path} answered {resp.status} without a JSON object")
            if resp.status >= 400:
                raise ApiError.from_json(resp.status, body)
            return body

    async def run(self, op: Op, body: dict[str, Any]) -> dict[str, Any]:
        """The op's route on the daemon: a GET's arguments as query parameters, any other
        method's as a JSON body."""
        method, path = op.route.split(" ", 1)
        if method == "GET":
            params = {name: str(value) for name, value in body.items() if value is not None}
            return await self._call(method, path, CALL_TIMEOUT, params=params)
        if op.unsure is None:
            return await self._call(method, path, CALL_TIMEOUT, json=body)
        # A change. If the daemon stops answering after the request may have reached it,
        # claim neither outcome: tell the model what to check first.
        try:
            return await self._call(method, path, WRITE_TIMEOUT, json=body)
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError):
            raise  # never connected: certainly nothing changed
        except (aiohttp.ClientError, TimeoutError) as exc:
            why = f"the memory sidecar stopped answering ({exc or type(exc).__name__})"
            check_first = op.unsure.format_map(defaultdict(lambda: None, body))
            raise ApiError(504, "outcome_unknown", f"{why}; {check_first}") from exc

    async def file_changes(self) -> AsyncIterator[dict[str, Any]]:
        """The daemon's NDJSON change stream, line by line, for as long as it stays open."""
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT)
        async with self._http().get(self.url + "/memory/files/changes", timeout=timeout) as resp:
            if resp.status != 200:
                raise RuntimeError(f"the change stream answered {resp.status}")
            async for line in resp.content:
                if line.strip():
                    yield json.loads(line)

    async def context(
        self, budget: int, query: str | None, user_id: str | None, workspace_id: str | None
    ) -> str:
        given = {"budget": str(budget), "query": query, "user_id": user_id,
                 "workspace_id": workspace_id}  # fmt: skip
        params = {k: v for k, v in given.items() if v is not None}
        async with self._http().get(
            self.url + "/memory/context", params=params, headers={"Accept": "text/plain"}
        ) as resp:
            if resp.status < 400:
                return await resp.text()
            try:
                body = await resp.json(content_type=None)
            except ValueError:
                body = None
        raise ApiError.from_json(resp.status, body if isinstance(body, dict) else {})

    async def reindex(self, scope: str) -> dict[str, Any]:
        return await self._call("POST", f"/memory/reindex?scope={scope}", CALL_TIMEOUT, json={})

    async def status(self, scope: str) -> dict[str, Any]:
        return await self._call("GET", "/memory/status", CALL_TIMEOUT, params={"scope": scope})

    async def write_health(self) -> tuple[bool, str | None]:
        """Healthy means the daemon answers ``/healthz`` and reports its write path ok."""
        try:
            health = await self._call("GET", "/healthz", HEALTH_TIMEOUT)
        except (aiohttp.ClientError, TimeoutError, RuntimeError, ApiError) as exc:
            return False, f"cannot reach the memory sidecar at {self.url}: {exc or 'timeout'}"
        write_path = health.get("write_path")
        if not isinstance(write_path, dict):
            return False, "the memory sidecar does not report its write path"
        if write_path.get("ok") is not True:
            return False, str(write_path.get("reason") or "write path unhealthy")
        return True, None


async def serve_stdio(url: str, poll_interval: float = 1.0) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    quiet_sdk_logs()
    backend = HttpBackend(url)
    tools = MemoryTools(backend)
    try:
        await tools.refresh_health()  # so the first tools/list is already right
        if not tools.healthy:
            why = {"url": url, "reason": tools.reason}
            log.warning("memory sidecar not ready; tools stay hidden until it is", extra=why)
        monitor = asyncio.create_task(tools.monitor(poll_interval), name="mcp-health")
        follow = asyncio.create_task(tools.resources.follow(), name="mcp-files")
        try:
            async with stdio_server() as (read_stream, write_stream):
                await tools.server.run(
                    read_stream, write_stream, tools.server.create_initialization_options()
                )
        finally:
            for task in (monitor, follow):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    finally:
        await backend.close()
