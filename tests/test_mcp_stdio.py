"""The stdio proxy's HTTP backend against a stand-in daemon that answers what a test scripts.

The real daemon is covered end to end in ``test_mcp.py``; here the answers it
rarely gives on demand (a degraded write path, an old daemon, a dropped
connection mid-write) are scripted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from sidecar.api.mcp.stdio import HttpBackend
from sidecar.api.mcp.tools import MemoryTools
from sidecar.errors import ApiError
from sidecar.notes import ops as notes_ops
from sidecar.notes.tools import WRITE
from tests.sidecar_process import free_port


class Script:
    def __init__(self) -> None:
        self.health: Any = {"status": "ok", "write_path": {"ok": True, "reason": None}}
        self.write: tuple[int, Any] = (201, {"file": "AGENT.md", "scope": "agent"})
        self.drop_write = False
        self.seen: list[tuple[str, Any]] = []


WRITE_B = {"scope": "agent", "file": "AGENT.md", "content": "- b", "mode": "append"}


@pytest.fixture
async def script() -> Script:
    return Script()


@pytest.fixture
async def backend(script: Script) -> AsyncIterator[HttpBackend]:
    async def healthz(request: web.Request) -> web.Response:
        return web.json_response(script.health)

    async def write(request: web.Request) -> web.StreamResponse:
        script.seen.append(("write", await request.json()))
        if script.drop_write:
            assert request.transport is not None
            request.transport.close()  # the daemon died with the request in hand
            return web.Response()
        status, body = script.write
        if isinstance(body, str):
            return web.Response(status=status, text=body)
        return web.json_response(body, status=status)

    async def read(request: web.Request) -> web.Response:
        script.seen.append(("read", dict(request.query)))
        return web.json_response({"file": request.query["file"], "content": ""})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/memory/write", write)
    app.router.add_get("/memory/read", read)
    async with TestServer(app, host="127.0.0.1") as srv:
        http = HttpBackend(str(srv.make_url("")))
        yield http
        await http.close()


async def test_healthy_only_with_a_healthy_write_path(backend: HttpBackend, script: Script) -> None:
    assert await backend.write_health() == (True, None)
    script.health = {"status": "degraded", "write_path": {"ok": False, "reason": "disk full"}}
    assert await backend.write_health() == (False, "disk full")
    script.health = {"status": "ok"}  # a daemon too old to report it
    assert await backend.write_health() == (
        False,
        "the memory sidecar does not report its write path",
    )


async def test_unreachable_daemon_is_unhealthy_and_calls_are_unavailable() -> None:
    backend = HttpBackend(f"http://127.0.0.1:{free_port()}")
    try:
        healthy, reason = await backend.write_health()
        assert healthy is False
        assert reason and reason.startswith("cannot reach the memory sidecar at http://127.0.0.1:")
        tools = MemoryTools(backend)
        tools.healthy = True  # as if the daemon died since the last health check
        result = await tools.call(WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- x"})
    finally:
        await backend.close()
    assert result.is_error
    assert result.structured_content["error"] == "unavailable"
    assert "nothing was written" in result.structured_content["detail"]


async def test_error_answers_keep_every_field(backend: HttpBackend, script: Script) -> None:
    script.write = (
        422,
        {"error": "cap_exceeded", "detail": "over", "cap": 4000, "current_entries": "- a\n"},
    )
    with pytest.raises(ApiError) as caught:
        await backend.run(notes_ops.WRITE, WRITE_B)
    assert (caught.value.status, caught.value.error, caught.value.detail) == (
        422,
        "cap_exceeded",
        "over",
    )
    assert caught.value.extra == {"cap": 4000, "current_entries": "- a\n"}
    assert script.seen == [
        ("write", {"scope": "agent", "file": "AGENT.md", "content": "- b", "mode": "append"})
    ]


async def test_a_non_json_answer_is_not_a_success(backend: HttpBackend, script: Script) -> None:
    script.write = (502, "Bad Gateway")
    with pytest.raises(RuntimeError, match="answered 502 without a JSON object"):
        await backend.run(notes_ops.WRITE, WRITE_B)


async def test_a_write_cut_off_midway_claims_neither_outcome(
    backend: HttpBackend, script: Script
) -> None:
    script.drop_write = True
    with pytest.raises(ApiError) as caught:
        await backend.run(notes_ops.WRITE, WRITE_B)
    assert caught.value.error == "outcome_unknown"
    assert "may or may not have been saved" in caught.value.detail


async def test_read_sends_only_the_lines_asked_for(backend: HttpBackend, script: Script) -> None:
    await backend.run(notes_ops.READ, {"scope": "agent", "file": "AGENT.md"})
    lines = {"start_line": 2, "end_line": 5}
    await backend.run(notes_ops.READ, {"scope": "crew", "file": "CREW.md", **lines})
    assert script.seen == [
        ("read", {"scope": "agent", "file": "AGENT.md"}),
        ("read", {"scope": "crew", "file": "CREW.md", "start_line": "2", "end_line": "5"}),
    ]
