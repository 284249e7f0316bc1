"""``POST /memory/remember``: a working entry."""

from __future__ import annotations

from aiohttp import web

from sidecar.ops import check_fields
from sidecar.web import json_body
from sidecar.working import ops
from sidecar.working.working import Working

WORKING: web.AppKey[Working] = web.AppKey("working", Working)


async def remember(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ops.REMEMBER.names)  # Working checks the values
    return web.json_response(await request.app[WORKING].remember(body), status=201)


def add_routes(app: web.Application, capability: Working) -> None:
    app[WORKING] = capability
    app.router.add_post("/memory/remember", remember)
