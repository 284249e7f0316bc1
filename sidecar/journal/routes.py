"""The journal's HTTP routes: record, list, relate, recall, and memory health."""

from __future__ import annotations

import math
import re
from typing import Any

from aiohttp import web

from sidecar.errors import ApiError, check_label
from sidecar.journal import ranking
from sidecar.journal.events import parse_time
from sidecar.journal.index import Filters
from sidecar.journal.journal import Journal
from sidecar.journal.recall import RecallQuery
from sidecar.retrieval.routes import task_query
from sidecar.web import (
    bool_field,
    check_fields,
    check_params,
    int_field,
    json_body,
    string_field,
)

JOURNAL: web.AppKey[Journal] = web.AppKey("journal", Journal)
MAX_LIST = 500
RECALL_FIELDS = (
    "query",
    "k",
    "scope",
    "session_id",
    "types",
    "since",
    "until",
    "include_superseded",
    "walk",
    "mark",
    "ranking",
)


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


def time_param(value: str | None, name: str) -> float | None:
    return None if value in (None, "") else parse_time(value, name)


def recall_query(body: dict[str, Any]) -> tuple[RecallQuery, str, bool]:
    """A recall request checked field by field (shared with the lead's crew address)."""
    check_fields(body, RECALL_FIELDS)
    text = task_query(body)
    types = body.get("types", [])
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types) or len(types) > 50:
        raise ApiError(400, "bad_types", "'types' must be an array of up to 50 event types")
    rank = string_field(body, "ranking", ranking.DEFAULT_RANKING)
    if rank not in ranking.RANKINGS:
        raise ApiError(
            400, "bad_ranking", f"'ranking' must be one of {', '.join(ranking.RANKINGS)}"
        )
    filters = Filters(
        session_id=check_label(string_field(body, "session_id"), "session_id"),
        types=tuple(types),
        since=time_param(string_field(body, "since"), "since"),
        until=time_param(string_field(body, "until"), "until"),
        include_superseded=bool_field(body, "include_superseded", False),
    )
    q = RecallQuery(
        text, int_field(body, "k", 5, 1, 50), filters, int_field(body, "walk", 0, 0, 1), rank
    )
    return q, string_field(body, "scope", "agent") or "agent", bool_field(body, "mark", True)


async def record(request: web.Request) -> web.Response:
    body = await json_body(request)
    scope = string_field(body, "scope", "agent") or "agent"
    body.pop("scope", None)
    return web.json_response(await request.app[JOURNAL].record(scope, body), status=201)


async def listing(request: web.Request) -> web.Response:
    check_params(request, ("scope", "since", "until", "type", "session_id", "limit", "cursor"))
    q = request.query
    try:
        limit = int(q.get("limit", "50"))
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIST:
        raise ApiError(400, "bad_limit", f"'limit' must be a whole number from 1 to {MAX_LIST}")
    filters = Filters(
        session_id=check_label(q.get("session_id") or None, "session_id"),
        types=tuple(t for t in q.getall("type", []) if t),
        since=time_param(q.get("since"), "since"),
        until=time_param(q.get("until"), "until"),
        include_superseded=True,
        include_expired=True,
    )
    answer = await request.app[JOURNAL].listing(
        q.get("scope", "agent"), filters, parse_cursor(q.get("cursor")), limit
    )
    return web.json_response(answer)


async def recall(request: web.Request) -> web.Response:
    q, scope, mark = recall_query(await json_body(request))
    return web.json_response(await request.app[JOURNAL].recall(q, scope, mark))


async def relate(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope", "src", "dst", "relation", "weight"))
    weight = body.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
        raise ApiError(400, "bad_weight", "'weight' must be a number from 0 to 1")
    answer = await request.app[JOURNAL].relate(
        string_field(body, "scope", "agent") or "agent",
        string_field(body, "src") or "",
        string_field(body, "dst") or "",
        string_field(body, "relation") or "",
        float(weight),
    )
    return web.json_response(answer, status=201)


async def health(request: web.Request) -> web.Response:
    check_params(request, ("scope",))
    scope = request.query.get("scope", "agent")  # the journal refuses any but agent and crew
    return web.json_response(await request.app[JOURNAL].snapshot_health(scope))


def add_routes(app: web.Application, capability: Journal) -> None:
    app[JOURNAL] = capability
    app.router.add_post("/memory/journal", record)
    app.router.add_get("/memory/journal", listing)
    app.router.add_post("/memory/journal/relations", relate)
    app.router.add_post("/memory/recall", recall)
    app.router.add_get("/memory/health", health)
