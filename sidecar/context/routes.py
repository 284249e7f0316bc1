"""``GET /memory/context``: the memory block as text, or JSON with per-section accounting."""

from __future__ import annotations

from aiohttp import web

from sidecar.context.builder import ContextBuilder
from sidecar.errors import ApiError, check_label
from sidecar.web import check_params

CONTEXT: web.AppKey[ContextBuilder] = web.AppKey("context", ContextBuilder)


async def context(request: web.Request) -> web.StreamResponse:
    check_params(request, ("budget", "query", "user_id", "workspace_id", "session_id"))
    q = request.query
    try:
        budget = int(q.get("budget", "15000"))
    except ValueError:
        raise ApiError(400, "bad_budget", "'budget' must be a whole number") from None
    block = await request.app[CONTEXT].build(
        budget, q.get("query") or None, q.get("user_id") or None, q.get("workspace_id"),
        check_label(q.get("session_id") or None, "session_id") or "default",
    )  # fmt: skip
    if "application/json" in request.headers.get("Accept", ""):
        return web.json_response(block.to_json())
    return web.Response(text=block.text, content_type="text/plain", charset="utf-8")


def add_routes(app: web.Application, capability: ContextBuilder) -> None:
    app[CONTEXT] = capability
    app.router.add_get("/memory/context", context)
