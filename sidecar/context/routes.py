"""``GET /memory/context``: the memory block as text, or JSON with per-section accounting."""

from __future__ import annotations

from aiohttp import web

from sidecar import ops
from sidecar.context.builder import ContextBuilder
from sidecar.errors import ApiError

CONTEXT: web.AppKey[ContextBuilder] = web.AppKey("context", ContextBuilder)


def _budget(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, "bad_budget", "'budget' must be a whole number")
    return value


# The memory block's inputs; the builder checks the budget's range and the query's length.
CONTEXT_OP = ops.Op.of(
    "GET /memory/context",
    budget=ops.Field({"type": "integer"}, _budget, 15000, from_text=ops.number(int)),
    query=ops.text(),
    user_id=ops.text(),
    workspace_id=ops.text(),
    session_id=ops.label("default"),
)


async def context(request: web.Request) -> web.StreamResponse:
    a = CONTEXT_OP.parse_query(request.query)
    block = await request.app[CONTEXT].build(
        a["budget"], a["query"], a["user_id"], a["workspace_id"], a["session_id"]
    )
    if "application/json" in request.headers.get("Accept", ""):
        return web.json_response(block.to_json())
    return web.Response(text=block.text, content_type="text/plain", charset="utf-8")


def add_routes(app: web.Application, capability: ContextBuilder) -> None:
    app[CONTEXT] = capability
    app.router.add_get("/memory/context", context)
