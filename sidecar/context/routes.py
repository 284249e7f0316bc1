"""``GET /memory/context``: the memory block as text, or JSON with per-section accounting."""

from __future__ import annotations

from aiohttp import web

from sidecar.context import ops
from sidecar.context.builder import ContextBuilder

CONTEXT: web.AppKey[ContextBuilder] = web.AppKey("context", ContextBuilder)


async def context(request: web.Request) -> web.StreamResponse:
    block = await request.app[CONTEXT].build(**ops.CONTEXT.parse_query(request.query))
    if "application/json" in request.headers.get("Accept", ""):
        return web.json_response(block.to_json())
    return web.Response(text=block.text, content_type="text/plain", charset="utf-8")


def add_routes(app: web.Application, capability: ContextBuilder) -> None:
    app[CONTEXT] = capability
    app.router.add_get("/memory/context", context)
