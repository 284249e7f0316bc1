"""``POST /memory/search``: the search capability's HTTP route."""

from __future__ import annotations

from aiohttp import web

from sidecar.retrieval.ops import SEARCH as SEARCH_OP
from sidecar.retrieval.search import Search
from sidecar.web import json_body

SEARCH: web.AppKey[Search] = web.AppKey("search", Search)


async def search(request: web.Request) -> web.Response:
    args = SEARCH_OP.parse(await json_body(request))
    return web.json_response((await request.app[SEARCH].search(**args)).to_json())


def add_routes(app: web.Application, capability: Search) -> None:
    app[SEARCH] = capability
    app.router.add_post("/memory/search", search)
