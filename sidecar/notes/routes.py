"""``POST /memory/write`` and ``GET /memory/read``: the notes capability's HTTP routes;
``/memory/files``: the browsable files, listed, read and followed (for ``sidecar mcp``)."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from sidecar.errors import ApiError
from sidecar.notes.browse import Browser
from sidecar.notes.notes import Notes
from sidecar.web import check_fields, check_params, json_body, string_field

NOTES: web.AppKey[Notes] = web.AppKey("notes", Notes)
BROWSER: web.AppKey[Browser] = web.AppKey("browser", Browser)
FOLLOW_KEEPALIVE = 15.0  # seconds between blank lines on an idle change stream


async def write(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope", "file", "content", "mode"))
    result = await request.app[NOTES].write(
        string_field(body, "scope", "agent"), string_field(body, "file"),
        string_field(body, "content"), string_field(body, "mode", "append"),
    )  # fmt: skip
    return web.json_response(result, status=201)


def _line_param(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, "bad_range", f"'{name}' must be a whole number") from None


def _file_param(request: web.Request) -> str:
    if "file" not in request.query:
        raise ApiError(
            400, "missing_file", "the 'file' parameter is required: a memory file of the tier, "
            "as search results name it (e.g. AGENT.md or daily/2026-11-21.md)",
        )  # fmt: skip
    return request.query["file"]


async def read(request: web.Request) -> web.Response:
    check_params(request, ("scope", "file", "start_line", "end_line"))
    result = await request.app[NOTES].read(
        request.query.get("scope", "agent"), _file_param(request),
        _line_param(request, "start_line"), _line_param(request, "end_line"),
    )  # fmt: skip
    return web.json_response(result)


def add_routes(app: web.Application, capability: Notes) -> None:
    app[NOTES] = capability
    app.router.add_post("/memory/write", write)
    app.router.add_get("/memory/read", read)


async def list_files(request: web.Request) -> web.Response:
    check_params(request, ("scope",))
    scope = request.query.get("scope", "agent")
    found = await request.app[BROWSER].list(scope)
    return web.json_response({"scope": scope, "files": found})


async def read_file(request: web.Request) -> web.Response:
    browser = request.app[BROWSER]
    check_params(request, ("scope", "file"))
    result = await browser.read(request.query.get("scope", "agent"), _file_param(request))
    return web.json_response(result)


async def follow_files(request: web.Request) -> web.StreamResponse:
    """NDJSON: ``{"ready": true}`` once the baseline is taken, then one line per change
    (``{"scope", "file", "change"}``); a blank line now and then while nothing happens.
    It follows every tier: a parameter (``?scope=``) would promise a filter it lacks."""
    check_params(request, ())
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    try:
        async with request.app[BROWSER].follow() as changes:
            await response.prepare(request)
            await response.write(b'{"ready": true}\n')
            while True:
                try:
                    change = await asyncio.wait_for(changes.get(), FOLLOW_KEEPALIVE)
                except TimeoutError:
                    await response.write(b"\n")
                    continue
                if change is None:  # shutting down
                    break
                await response.write(json.dumps(change.to_json()).encode() + b"\n")
        await response.write_eof()
    except ConnectionResetError:
        pass  # the follower hung up: the stream's normal end, not a server error
    return response


async def _close_followers(app: web.Application) -> None:
    app[BROWSER].close()


def add_browse_routes(app: web.Application, browser: Browser) -> None:
    app[BROWSER] = browser
    app.router.add_get("/memory/files", list_files)
    app.router.add_get("/memory/files/read", read_file)
    app.router.add_get("/memory/files/changes", follow_files)
    app.on_shutdown.append(_close_followers)
