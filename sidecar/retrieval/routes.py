"""``POST /memory/search``: the search capability's HTTP route."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar.disk.tiers import parse_scope
from sidecar.errors import ApiError
from sidecar.retrieval.query import check_length
from sidecar.retrieval.search import Search
from sidecar.web import check_fields, json_body, string_field

MAX_LIMIT = 50
SEARCH: web.AppKey[Search] = web.AppKey("search", Search)


def task_query(body: dict[str, Any]) -> str:
    """The ``query`` of a recall or learnings search: what the task at hand is about."""
    text = string_field(body, "query")
    if not text or not text.strip():
        raise ApiError(400, "bad_query", "'query' is required: what the task at hand is about")
    check_length(text)
    return text


async def parse_search(request: web.Request) -> tuple[str, str, int, str | None]:
    """(query, scope, limit, mode) from a search request body, or a 400 saying what is wrong."""
    body = await json_body(request)
    check_fields(body, ("query", "limit", "scope", "mode"))
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, "missing_query", "'query' must be a non-empty string")
    check_length(query)
    limit = body.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ApiError(400, "bad_limit", f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    mode = string_field(body, "mode")  # Search checks its value
    return query, parse_scope(body.get("scope", "agent")), limit, mode


async def search(request: web.Request) -> web.Response:
    query, scope, limit, mode = await parse_search(request)
    response = await request.app[SEARCH].search(query, scope, limit, mode)
    return web.json_response(response.to_json())


def add_routes(app: web.Application, capability: Search) -> None:
    app[SEARCH] = capability
    app.router.add_post("/memory/search", search)
