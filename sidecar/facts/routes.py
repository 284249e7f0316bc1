"""The facts' HTTP routes: search, history, an operator's invalidation, consolidate now."""

from __future__ import annotations

from aiohttp import web

from sidecar.facts import ops
from sidecar.facts.facts import Facts
from sidecar.web import json_body

FACTS: web.AppKey[Facts] = web.AppKey("facts", Facts)


async def search(request: web.Request) -> web.Response:
    a = ops.SEARCH.parse(await json_body(request))
    return web.json_response(await request.app[FACTS].search(**a))


async def history(request: web.Request) -> web.Response:
    scope = ops.HISTORY.parse_query(request.query)["scope"]
    return web.json_response(request.app[FACTS].history(scope, request.match_info["id"]))


async def invalidate(request: web.Request) -> web.Response:
    args = ops.INVALIDATE.parse(await json_body(request))
    answer = await request.app[FACTS].invalidate(fact_id=request.match_info["id"], **args)
    return web.json_response(answer)


async def consolidate(request: web.Request) -> web.Response:
    scope = ops.CONSOLIDATE.parse(await json_body(request))["scope"]
    return web.json_response(await request.app[FACTS].consolidate(scope))


def add_routes(app: web.Application, capability: Facts) -> None:
    app[FACTS] = capability
    app.router.add_post("/memory/facts", search)
    app.router.add_get("/memory/facts/{id}/history", history)
    app.router.add_post("/memory/facts/{id}/invalidate", invalidate)
    app.router.add_post("/memory/consolidate", consolidate)
