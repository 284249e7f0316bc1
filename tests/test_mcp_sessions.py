"""Handshake-era ``/mcp`` sessions stay few: a flood of bare initializes neither grows the
daemon without bound nor locks a real client out; idle sessions expire; shutdown with
many sessions open ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from mcp import Client

from sidecar.api.http import create_app
from sidecar.api.mcp.mount import MCP_MOUNT
from sidecar.api.mcp.sessions import MAX_SESSIONS
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.sidecar_process import SidecarProcess
from tests.test_mcp_http import INITIALIZE, MCP_HEADERS, NAMES, mcp_url

PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


@pytest.fixture
async def server(service: MemoryService) -> AsyncIterator[TestServer]:
    async with TestServer(create_app(service), host="127.0.0.1") as srv:
        yield srv


async def initialize(http: aiohttp.ClientSession, url: str) -> str:
    """A bare initialize, as a loop would send it: the session it opens, never used again."""
    async with http.post(url, json=INITIALIZE, headers=MCP_HEADERS) as resp:
        assert resp.status == 200, await resp.text()
        await resp.read()
        return resp.headers["mcp-session-id"]


async def alive(http: aiohttp.ClientSession, url: str, session: str) -> bool:
    """Does the daemon still hold ``session``? (An ended one answers 404.)"""
    headers = {**MCP_HEADERS, "mcp-session-id": session, "MCP-Protocol-Version": "2025-11-25"}
    async with http.post(url, json=PING, headers=headers) as resp:
        await resp.read()
        assert resp.status in (200, 404), resp.status
        return resp.status == 200


async def test_a_flood_of_bare_initializes_is_bounded_and_a_real_client_is_served(
    server: TestServer,
) -> None:
    url = mcp_url(server)
    async with aiohttp.ClientSession() as http:
        flood = [await initialize(http, url) for _ in range(2 * MAX_SESSIONS)]
        async with Client(url, mode="legacy") as client:  # a new session, admitted
            assert [t.name for t in (await client.list_tools()).tools] == NAMES
        kept = [s for s in flood if await alive(http, url, s)]
    assert len(kept) < MAX_SESSIONS
    assert kept == flood[-len(kept) :]  # the oldest went first


async def test_a_client_in_session_keeps_it_through_a_flood(
    server: TestServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.app[MCP_MOUNT].limits = {"max_sessions": 3}
    url = mcp_url(server)
    caplog.set_level(logging.INFO, logger="sidecar")
    async with Client(url, mode="legacy") as client, aiohttp.ClientSession() as http:
        await client.list_tools()
        flood = [await initialize(http, url) for _ in range(10)]
        assert [t.name for t in (await client.list_tools()).tools] == NAMES
        assert [await alive(http, url, s) for s in flood[-2:]] == [True, True]
        assert not await alive(http, url, flood[-3])
    limit = [r for r in caplog.records if "at their limit" in r.getMessage()]
    assert len(limit) == 1  # told once, not at every eviction
    assert limit[0].levelno == logging.WARNING


async def test_an_idle_session_expires(server: TestServer) -> None:
    mount = server.app[MCP_MOUNT]
    mount.limits = {"idle_timeout": 0.2}
    url = mcp_url(server)
    async with aiohttp.ClientSession() as http:
        session = await initialize(http, url)

        async def expired() -> bool:  # asked without a request, which would keep it alive
            assert mount.endpoint is not None
            return mount.endpoint.manager.open_sessions == 0

        await eventually(expired, "the idle session to expire")
        assert not await alive(http, url, session)
        # A fresh client simply starts a new session.
        async with Client(url, mode="legacy") as client:
            assert [t.name for t in (await client.list_tools()).tools] == NAMES


async def test_shutdown_with_every_session_open_ends(tier_dirs: tuple[Path, Path]) -> None:
    """A real daemon full of sessions, idle ones and one holding its GET stream open,
    stops on SIGTERM and reports a clean exit."""
    daemon = SidecarProcess(*tier_dirs).start()
    try:
        url = daemon.url + "/mcp"
        async with aiohttp.ClientSession() as http:
            for _ in range(2 * MAX_SESSIONS):
                await initialize(http, url)
            async with Client(url, mode="legacy") as client:
                await client.list_tools()  # its GET stream is open once the session is
                code = await asyncio.to_thread(daemon.terminate)
        assert code == 0
    finally:
        daemon.kill()
    log = daemon.log_path.read_text()
    assert "Traceback" not in log, log


async def open_stream(http: aiohttp.ClientSession, url: str) -> tuple[str, aiohttp.ClientResponse]:
    """A session that initializes, then holds its GET stream open and sends nothing more: a
    client that leaked its MCP client object (one per tool call, never closed) does this."""
    session = await initialize(http, url)
    headers = {"mcp-session-id": session, "MCP-Protocol-Version": "2025-11-25"}
    async with http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         headers={**MCP_HEADERS, **headers}) as resp:  # fmt: skip
        assert resp.status == 202, await resp.text()
    stream = await http.get(url, headers={**headers, "Accept": "text/event-stream"})
    assert stream.status == 200
    return session, stream


async def test_sessions_that_only_hold_a_get_stream_do_not_lock_a_new_client_out(
    server: TestServer,
) -> None:
    """Every session holding its GET stream counted as busy: at the limit, every new client
    was refused (503 Too many open sessions) for as long as the streams stayed open."""
    server.app[MCP_MOUNT].limits = {"max_sessions": 3}
    url = mcp_url(server)
    async with aiohttp.ClientSession() as http:
        held = [await open_stream(http, url) for _ in range(3)]
        try:
            async with Client(url, mode="legacy") as client:  # admitted, not refused
                assert [t.name for t in (await client.list_tools()).tools] == NAMES
            oldest, stream = held[0]
            assert await stream.content.read() == b""  # its stream was ended...
            assert not await alive(http, url, oldest)  # ...and its session
            assert [await alive(http, url, s) for s, _ in held[1:]] == [True, True]
        finally:
            for _, stream in held:
                stream.close()
