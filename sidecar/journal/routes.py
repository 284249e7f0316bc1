"""The journal's HTTP routes: record, list, relate, recall, and memory health."""

from __future__ import annotations

from aiohttp import web

from sidecar.journal import ops
from sidecar.journal.journal import Journal
from sidecar.ops import string_value
from sidecar.web import json_body

JOURNAL: web.AppKey[Journal] = web.AppKey("journal", Journal)


async def record(request: web.Request) -> web.Response:
    body = await json_body(request)
    scope = string_value(body.pop("scope", None), "scope") or "agent"
    return web.json_response(await request.app[JOURNAL].record(scope, body), status=201)


async def listing(request: web.Request) -> web.Response:
    scope, filters, cursor, limit = ops.listing_query(request.query)
    return web.json_response(await request.app[JOURNAL].listing(scope, filters, cursor, limit))


async def recall(request: web.Request) -> web.Response:
    q, scope, mark = ops.recall_query(await json_body(request))
    return web.json_response(await request.app[JOURNAL].recall(q, scope, mark))


async def relate(request: web.Request) -> web.Response:
    a = ops.RELATE.parse(await json_body(request))
    answer = await request.app[JOURNAL].relate(
        a["scope"], a["src"] or "", a["dst"] or "", a["relation"] or "", a["weight"]
    )
    return web.json_response(answer, status=201)


async def health(request: web.Request) -> web.Response:
    scope = ops.HEALTH.parse_query(request.query)["scope"]
    return web.json_response(await request.app[JOURNAL].snapshot_health(scope))


def add_routes(app: web.Application, capability: Journal) -> None:
    app[JOURNAL] = capability
    app.router.add_post("/memory/journal", record)
    app.router.add_get("/memory/journal", listing)
    app.router.add_post("/memory/journal/relations", relate)
    app.router.add_post("/memory/recall", recall)
    app.router.add_get("/memory/health", health)
