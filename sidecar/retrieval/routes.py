"""``POST /memory/search``: the search capability's HTTP route."""

from __future__ import annotations

from aiohttp import web

from sidecar.retrieval.ops import SEARCH as SEARCH_OP
from sidecar.retrieval.search import Search
from sidecar.web import json_body

SEARCH: web.AppKey[Search] = web.AppKey("search", Search)


async def parse_search(request: web.Request) -> tuple[str, str, int, str | None]:
    """(query, scope, limit, mode) from a search request body, or a 400 saying what is wrong."""
    a = SEARCH_OP.parse(await json_body(request))
    return a["query"], a["scope"], a["limit"], a["mode"]


async def search(request: web.Request) -> web.Response:
    query, scope, limit, mode = await parse_search(request)
    response = await request.app[SEARCH].search(query, scope, limit, mode)
    return web.json_response(response.to_json())


def add_routes(app: web.Application, capability: Search) -> None:
    app[SEARCH] = capability
    app.router.add_post("/memory/search", search)
