"""The journal's HTTP routes: record, list, relate, recall, and memory health."""

from __future__ import annotations

import math
import re

from aiohttp import web

from sidecar.errors import ApiError
from sidecar.journal import ops
from sidecar.journal.index import Filters
from sidecar.journal.journal import Journal
from sidecar.ops import string_value
from sidecar.web import json_body

JOURNAL: web.AppKey[Journal] = web.AppKey("journal", Journal)

_CURSOR_TS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?")


def parse_cursor(raw: str | None) -> tuple[float, str] | None:
    if not raw:
        return None
    ts, sep, event_id = raw.partition("|")
    # What ``listing`` wrote: repr() of a finite float, then the event's id.
    at = float(ts) if _CURSOR_TS.fullmatch(ts) and sep and event_id else math.nan
    if not math.isfinite(at):  # also a number too large for a float ("1e999")
        raise ApiError(
            400, "bad_cursor", "'cursor' must be a next_cursor value from an earlier answer"
        )
    return at, event_id


async def record(request: web.Request) -> web.Response:
    body = await json_body(request)
    scope = string_value(body.pop("scope", None), "scope") or "agent"
    return web.json_response(await request.app[JOURNAL].record(scope, body), status=201)


async def listing(request: web.Request) -> web.Response:
    a = ops.LIST.parse_query(request.query)
    filters = Filters(
        session_id=a["session_id"],
        types=a["type"],
        since=a["since"],
        until=a["until"],
        include_superseded=True,
        include_expired=True,
        min_importance=a["min_importance"],
    )
    answer = await request.app[JOURNAL].listing(
        a["scope"], filters, parse_cursor(a["cursor"]), a["limit"]
    )
    return web.json_response(answer)


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
    return web.json_response(await request.app[JOURNAL].health(scope))


def add_routes(app: web.Application, capability: Journal) -> None:
    app[JOURNAL] = capability
    app.router.add_post("/memory/journal", record)
    app.router.add_get("/memory/journal", listing)
    app.router.add_post("/memory/journal/relations", relate)
    app.router.add_post("/memory/recall", recall)
    app.router.add_get("/memory/health", health)
