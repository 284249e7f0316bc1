"""``/mcp`` on an in-process daemon: the aiohttp-to-ASGI bridge, its guards and health gating."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import mcp_types as types
import pytest
from aiohttp.test_utils import TestServer
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from sidecar.api.http import create_app
from sidecar.api.mcp.mount import MCP_MOUNT
from sidecar.config import Settings
from sidecar.notes.tools import WRITE
from sidecar.retrieval.tools import SEARCH
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.test_mcp_tools import NAMES

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
async def server(service: MemoryService) -> AsyncIterator[TestServer]:
    app = create_app(service)
    app[MCP_MOUNT].poll_interval = 0.02
    async with TestServer(app, host="127.0.0.1") as srv:
        yield srv


def mcp_url(srv: TestServer) -> str:
    return str(srv.make_url("/mcp"))


def withdraw_writes(service: MemoryService) -> None:
    """Make the real write-health check fail: demand more free disk than exists."""
    service.notes.settings = dataclasses.replace(service.settings, min_free_bytes=1 << 62)


async def test_tools_work_in_process(server: TestServer, service: MemoryService) -> None:
    async with Client(mcp_url(server)) as client:
        assert [t.name for t in (await client.list_tools()).tools] == NAMES
        result = await client.call_tool(
            WRITE, {"scope": "crew", "file": "topics/billing.md", "content": "- PostgreSQL 16"}
        )
        assert not result.is_error
        found = await client.call_tool(SEARCH, {"query": "postgresql", "scope": "crew"})
    assert [r["file"] for r in found.structured_content["results"]] == ["topics/billing.md"]
    assert (service.settings.crew_dir / "topics" / "billing.md").read_text() == "- PostgreSQL 16\n"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_list_changes_stream_to_connected_clients(
    server: TestServer, service: MemoryService, mode: str
) -> None:
    """The change notice rides an open SSE response, so the bridge must stream, not buffer."""
    changed: asyncio.Queue[Any] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.put_nowait(message)

    async with Client(mcp_url(server), mode=mode, message_handler=on_message) as client:
        if mode == "auto":
            async with client.listen(tools_list_changed=True) as subscription:
                withdraw_writes(service)
                async with asyncio.timeout(10):
                    assert isinstance(await anext(aiter(subscription)), ToolsListChanged)
        else:
            await client.list_tools()  # the GET stream is open once the session is
            withdraw_writes(service)
            async with asyncio.timeout(10):
                await changed.get()
        assert (await client.list_tools()).tools == []
        refused = await client.call_tool(SEARCH, {"query": "anything"})
    assert refused.is_error
    block = refused.content[0]
    assert isinstance(block, types.TextContent)
    assert block.text.startswith("memory sidecar unavailable — search unavailable (agent: only")


async def test_unhealthy_daemon_lists_no_tools_from_the_start(
    tier_dirs: tuple[Path, Path],
) -> None:
    settings = Settings(
        *tier_dirs, role="lead", reconcile_interval=3600, min_free_bytes=1 << 62, embedder="none"
    )
    service = MemoryService(settings)
    await service.start()
    try:
        async with (
            TestServer(create_app(service), host="127.0.0.1") as srv,
            Client(mcp_url(srv)) as client,
        ):
            assert (await client.list_tools()).tools == []
            result = await client.call_tool(
                WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- x"}
            )
        assert result.is_error
        assert not (tier_dirs[0] / "AGENT.md").exists()
    finally:
        await service.stop()


@pytest.mark.parametrize(
    ("headers", "status", "error"),
    [
        ({"Host": "evil.example"}, 403, "forbidden_host"),
        ({"Host": "evil.example:80"}, 403, "forbidden_host"),
        ({"Origin": "http://evil.example"}, 403, "forbidden_origin"),
        ({"Origin": "null"}, 403, "forbidden_origin"),
        ({"Origin": "http://localhost:3000"}, 200, None),
        ({"Host": "localhost"}, 200, None),
    ],
)
async def test_dns_rebinding_and_cross_site_guards(
    server: TestServer, headers: dict[str, str], status: int, error: str | None
) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(mcp_url(server), json=INITIALIZE, headers={**MCP_HEADERS, **headers}) as resp,
    ):
        assert resp.status == status, await resp.text()
        if error is not None:
            assert (await resp.json())["error"] == error
        else:
            assert resp.headers.get("mcp-session-id")


async def test_loopback_host_with_port_reaches_the_transport(server: TestServer) -> None:
    """The SDK's own Host check must not refuse what the daemon's guard allowed."""
    host = f"127.0.0.1:{server.port}"
    async with (
        aiohttp.ClientSession() as http,
        http.post(mcp_url(server), json=INITIALIZE, headers={**MCP_HEADERS, "Host": host}) as resp,
    ):
        assert resp.status == 200
        assert "text/event-stream" in resp.headers["Content-Type"]
        assert b'"serverInfo"' in await resp.read()


async def test_oversized_body_is_refused(server: TestServer) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * (1 << 20) + b'"}'
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            mcp_url(server),
            data=io.BytesIO(body),
            headers={**MCP_HEADERS, "Content-Type": "application/json"},
        ) as resp,
    ):
        assert resp.status == 413
        assert (await resp.json())["error"] == "body_too_large"


async def test_shutdown_ends_open_streams_promptly(service: MemoryService) -> None:
    app = create_app(service)
    srv = TestServer(app, host="127.0.0.1")
    await srv.start_server()
    try:
        async with (
            Client(mcp_url(srv)) as modern,
            Client(mcp_url(srv), mode="legacy") as legacy,
            modern.listen(tools_list_changed=True) as subscription,
        ):
            await legacy.list_tools()
            started = time.monotonic()
            await srv.close()
            async for _ in subscription:  # a graceful close ends the loop
                pass
            assert time.monotonic() - started < 3
    finally:
        await srv.close()


async def test_a_client_leaving_before_its_answer_logs_no_error(
    server: TestServer, service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that hangs up while its tool call runs (a session closed early, a killed
    agent) is the common case, not a failure: the answer finds the connection closing, and
    nothing is logged as an ERROR (the SDK logs a write that raises, with a traceback)."""
    caplog.set_level("WARNING")
    async with (
        aiohttp.ClientSession() as http,
        http.post(mcp_url(server), json=INITIALIZE, headers=MCP_HEADERS) as resp,
    ):
        session = resp.headers["mcp-session-id"]
    headers = {**MCP_HEADERS, "mcp-session-id": session, "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
    agent_md = service.settings.agent_dir / "AGENT.md"
    for n in range(10):
        call = {"jsonrpc": "2.0", "id": n + 2, "method": "tools/call", "params": {
            "name": WRITE, "arguments": {"scope": "agent", "file": "AGENT.md",
                                         "content": f"- left before the answer {n}"}}}  # fmt: skip
        body = json.dumps(call).encode()
        _, writer = await asyncio.open_connection(server.host, server.port)
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(
            f"POST /mcp HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n{head}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()  # gone before the answer
        await writer.wait_closed()

        async def landed(n: int = n) -> bool:
            return agent_md.exists() and f"before the answer {n}" in agent_md.read_text()

        await eventually(landed, "the call to be carried out")
    async with Client(mcp_url(server)) as client:  # the server still serves sessions
        assert [t.name for t in (await client.list_tools()).tools] == NAMES
    errors = [r for r in caplog.records if r.levelno >= 40]
    assert not errors, [(r.name, r.getMessage()) for r in errors]
