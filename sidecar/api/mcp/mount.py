"""Mount ``/mcp`` on the daemon, loading the MCP SDK only when a client first calls it.

The SDK and its dependencies cost about 40 MB of resident memory. Agents whose
MCP client launches ``sidecar mcp`` (stdio, a separate process) never touch
``/mcp``, so the daemon does not pay for it until someone does.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from sidecar.api.mcp.http import McpEndpoint
    from sidecar.service import MemoryService

MCP_PATH = "/mcp"


class LazyMcp:
    def __init__(self, service: MemoryService, poll_interval: float = 1.0) -> None:
        self.service = service
        self.poll_interval = poll_interval  # seconds between write-health checks
        # Session limits (``max_sessions``, ``idle_timeout``) other than the defaults.
        self.limits: dict[str, Any] = {}
        self.endpoint: McpEndpoint | None = None
        self._lock = asyncio.Lock()

    async def _endpoint(self) -> McpEndpoint:
        async with self._lock:
            if self.endpoint is None:
                from sidecar.api.mcp.http import McpEndpoint

                endpoint = McpEndpoint(self.service, self.poll_interval, **self.limits)
                await endpoint.start()
                self.endpoint = endpoint
            return self.endpoint

    async def handle(self, request: web.Request) -> web.StreamResponse:
        endpoint = self.endpoint or await self._endpoint()
        return await endpoint.handle(request)

    async def stop(self, app: web.Application) -> None:
        if self.endpoint is not None:
            await self.endpoint.stop()


MCP_MOUNT: web.AppKey[LazyMcp] = web.AppKey("mcp_mount", LazyMcp)


def mount_mcp(app: web.Application, service: MemoryService) -> None:
    mount = LazyMcp(service)
    app[MCP_MOUNT] = mount
    app.router.add_route("*", MCP_PATH, mount.handle)
    app.on_shutdown.append(mount.stop)
