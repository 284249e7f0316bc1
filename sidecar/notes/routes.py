"""``POST /memory/write`` and ``GET /memory/read``: the notes capability's HTTP routes;
``/memory/files``: the browsable files, listed, read and followed (for ``sidecar mcp``)."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from sidecar.notes import ops
from sidecar.notes.browse import Browser
from sidecar.notes.notes import Notes
from sidecar.web import json_body

NOTES: web.AppKey[Notes] = web.AppKey("notes", Notes)
BROWSER: web.AppKey[Browser] = web.AppKey("browser", Browser)
FOLLOW_KEEPALIVE = 15.0  # seconds between blank lines on an idle change stream


async def write(request: web.Request) -> web.Response:
    result = await request.app[NOTES].write(**ops.WRITE.parse(await json_body(request)))
    return web.json_response(result, status=201)


async def read(request: web.Request) -> web.Response:
    result = await request.app[NOTES].read(**ops.READ.parse_query(request.query))
    return web.json_response(result)


def add_routes(app: web.Application, capability: Notes) -> None:
    app[NOTES] = capability
    app.router.add_post("/memory/write", write)
    app.router.add_get("/memory/read", read)


async def list_files(request: web.Request) -> web.Response:
    scope = ops.LIST_FILES.parse_query(request.query)["scope"]
    found = await request.app[BROWSER].list(scope)
    return web.json_response({"scope": scope, "files": found})


async def read_file(request: web.Request) -> web.Response:
    a = ops.READ_FILE.parse_query(request.query)
    result = await request.app[BROWSER].read(a["scope"], a["file"])
    return web.json_response(result)


async def follow_files(request: web.Request) -> web.StreamResponse:
    """NDJSON: ``{"ready": true}`` once the baseline is taken, then one line per change
    (``{"scope", "file", "change"}``); a blank line now and then while nothing happens.
    It follows every tier: a parameter (``?scope=``) would promise a filter it lacks."""
    ops.FOLLOW.parse_query(request.query)
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
