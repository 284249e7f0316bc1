"""``POST /memory/write`` and ``GET /memory/read``: the notes capability's HTTP routes;
``/memory/files``: the browsable files, listed, read and followed (for ``sidecar mcp``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from sidecar import ops as shared
from sidecar.notes import ops
from sidecar.notes.browse import Browser
from sidecar.notes.notes import Notes

NOTES: web.AppKey[Notes] = web.AppKey("notes", Notes)
BROWSER: web.AppKey[Browser] = web.AppKey("browser", Browser)
FOLLOW_KEEPALIVE = 15.0  # seconds between blank lines on an idle change stream


ROUTES = (
    shared.Route(ops.WRITE, lambda notes, a: notes.write(**a), status=201),
    shared.Route(ops.READ, lambda notes, a: notes.read(**a)),
)


def add_routes(app: web.Application, capability: Notes) -> None:
    shared.add_routes(app, NOTES, capability, *ROUTES)


async def _list_files(browser: Browser, a: dict[str, Any]) -> dict[str, Any]:
    return {"scope": a["scope"], "files": await browser.list(a["scope"])}


BROWSE_ROUTES = (
    shared.Route(ops.LIST_FILES, _list_files),
    shared.Route(ops.READ_FILE, lambda browser, a: browser.read(a["scope"], a["file"])),
)


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
    shared.add_routes(app, BROWSER, browser, *BROWSE_ROUTES)
    app.router.add_get("/memory/files/changes", follow_files)
    app.on_shutdown.append(_close_followers)
