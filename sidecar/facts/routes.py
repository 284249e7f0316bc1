"""The facts' HTTP routes: search, history, an operator's invalidation, consolidate now."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar.errors import ApiError
from sidecar.facts.facts import Facts
from sidecar.facts.log import CATEGORIES
from sidecar.journal.events import parse_time
from sidecar.retrieval.routes import task_query
from sidecar.web import check_fields, check_params, int_field, json_body, string_field

FACTS: web.AppKey[Facts] = web.AppKey("facts", Facts)
SEARCH_FIELDS = ("query", "category", "limit", "as_of", "scope")


def _scope(value: str | None) -> str:
    scope = value or "agent"
    if scope not in ("agent", "crew"):
        raise ApiError(400, "bad_scope", "'scope' must be agent or crew")
    return scope


def search_body(body: dict[str, Any]) -> tuple[str, str, str | None, int, float | None]:
    """(query, scope, category, limit, as_of) checked field by field, for HTTP and MCP."""
    check_fields(body, SEARCH_FIELDS)
    query = task_query(body)
    category = string_field(body, "category")
    if category is not None and category not in CATEGORIES:
        raise ApiError(400, "bad_category", f"'category' must be one of {', '.join(CATEGORIES)}")
    as_of = string_field(body, "as_of")
    when = parse_time(as_of, "as_of") if as_of is not None else None
    limit = int_field(body, "limit", 10, 1, 50)
    return query, _scope(string_field(body, "scope")), category, limit, when


async def search(request: web.Request) -> web.Response:
    query, scope, category, limit, as_of = search_body(await json_body(request))
    return web.json_response(await request.app[FACTS].search(query, scope, category, limit, as_of))


async def history(request: web.Request) -> web.Response:
    check_params(request, ("scope",))
    scope = _scope(request.query.get("scope"))
    return web.json_response(request.app[FACTS].history(scope, request.match_info["id"]))


async def invalidate(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope", "reason"))
    reason = string_field(body, "reason", "") or ""
    if len(reason) > 500:
        raise ApiError(400, "bad_reason", "'reason' is limited to 500 characters")
    answer = await request.app[FACTS].invalidate(
        _scope(string_field(body, "scope")), request.match_info["id"], reason
    )
    return web.json_response(answer)


async def consolidate(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope",))
    scope = string_field(body, "scope")
    return web.json_response(await request.app[FACTS].consolidate(_scope(scope) if scope else None))


def add_routes(app: web.Application, capability: Facts) -> None:
    app[FACTS] = capability
    app.router.add_post("/memory/facts", search)
    app.router.add_get("/memory/facts/{id}/history", history)
    app.router.add_post("/memory/facts/{id}/invalidate", invalidate)
    app.router.add_post("/memory/consolidate", consolidate)
