"""The HTTP API an agent curls on localhost:9119.

Every error is JSON ``{"error": code, "detail": why}``. Requests whose Host
header is not a loopback name are refused, so a web page the agent's browser
opens cannot reach memory through DNS rebinding.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from sidecar.api.mcp.mount import mount_mcp
from sidecar.disk.tiers import SCOPES
from sidecar.errors import ApiError
from sidecar.service import MemoryService
from sidecar.web import (
    MAX_BODY_BYTES,
    Handler,
    check_fields,
    error_response,
    is_loopback_host,
    json_body,
)

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4096
MAX_LIMIT = 50
SERVICE: web.AppKey[MemoryService] = web.AppKey("service", MemoryService)

_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
}


def _host_guard(allowed: tuple[str, ...]) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if host is not None and not is_loopback_host(host, allowed):
            return error_response(403, "forbidden_host", f"Host {host!r} is not a loopback name")
        return await handler(request)

    return middleware


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes ``{"error", "detail"}`` JSON with a fitting status."""
    try:
        return await handler(request)
    except ApiError as exc:
        return web.json_response(exc.to_json(), status=exc.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = _HTTP_CODES.get(exc.status, "http_error")
        detail = exc.text or exc.reason
        if exc.status == 404:
            detail = f"no such endpoint: {request.method} {request.path}"
        return error_response(exc.status, code, detail)
    except Exception as exc:
        log.exception("internal error", extra={"path": request.path})
        return error_response(500, "internal", f"{type(exc).__name__}: {exc}")


def _scope_param(request: web.Request, allow_both: bool) -> str:
    scope = request.query.get("scope", "agent")
    allowed = SCOPES if allow_both else ("agent", "crew")
    if scope not in allowed:
        raise ApiError(400, "bad_scope", f"scope must be one of {', '.join(allowed)}")
    return scope


async def parse_search(request: web.Request) -> tuple[str, str, int, str | None]:
    """(query, scope, limit, mode) from a search request body, or a 400 saying what is wrong."""
    body = await json_body(request)
    check_fields(body, ("query", "limit", "scope", "mode"))
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, "missing_query", "'query' must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ApiError(400, "query_too_long", f"'query' is limited to {MAX_QUERY_CHARS} characters")
    limit = body.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ApiError(400, "bad_limit", f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    scope = body.get("scope", "agent")
    if scope not in SCOPES:
        raise ApiError(400, "bad_scope", f"'scope' must be one of {', '.join(SCOPES)}")
    return query, scope, limit, body.get("mode")  # the service checks it, for every caller


async def search(request: web.Request) -> web.Response:
    query, scope, limit, mode = await parse_search(request)
    response = await request.app[SERVICE].search(query, scope, limit, mode)
    return web.json_response(response.to_json())


async def write(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope", "file", "content", "mode"))
    result = await request.app[SERVICE].write(
        body.get("scope", "agent"), body.get("file"), body.get("content"),
        body.get("mode", "append"),
    )  # fmt: skip
    return web.json_response(result, status=201)


def _line_param(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, "bad_range", f"'{name}' must be a whole number") from None


async def read(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    result = await service.read(
        request.query.get("scope", "agent"), request.query.get("file", ""),
        _line_param(request, "start_line"), _line_param(request, "end_line"),
    )  # fmt: skip
    return web.json_response(result)


async def context(request: web.Request) -> web.StreamResponse:
    """The memory block as text, or JSON with per-section accounting."""
    q = request.query
    try:
        budget = int(q.get("budget", "15000"))
    except ValueError:
        raise ApiError(400, "bad_budget", "'budget' must be a whole number") from None
    block = await request.app[SERVICE].context(
        budget, q.get("query") or None, q.get("user_id") or None, q.get("workspace_id")
    )
    if "application/json" in request.headers.get("Accept", ""):
        return web.json_response(block.to_json())
    return web.Response(text=block.text, content_type="text/plain", charset="utf-8")


async def status(request: web.Request) -> web.Response:
    scope = _scope_param(request, allow_both=False)
    return web.json_response(await request.app[SERVICE].status(scope))


async def reindex(request: web.Request) -> web.Response:
    scope = _scope_param(request, allow_both=True)
    return web.json_response(await request.app[SERVICE].reindex(scope), status=202)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response(await request.app[SERVICE].health())


def create_app(service: MemoryService) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        middlewares=[_host_guard(service.settings.allowed_hosts), error_middleware],
    )
    app[SERVICE] = service
    app.router.add_post("/memory/search", search)
    app.router.add_get("/memory/status", status)
    app.router.add_post("/memory/reindex", reindex)
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/memory/write", write)
    app.router.add_get("/memory/read", read)
    app.router.add_get("/memory/context", context)
    mount_mcp(app, service)
    return app
