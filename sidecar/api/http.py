"""The HTTP API an agent curls on localhost:9119: the app, its guards, and the daemon-wide
routes (status, reindex, health); each capability adds its own routes.

Every error is JSON ``{"error": code, "detail": why}``. Requests whose Host
header is not a loopback name are refused, so a web page the agent's browser
opens cannot reach memory through DNS rebinding.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from sidecar.api import openapi, scrape
from sidecar.api.mcp.mount import MCP_PATH, mount_mcp
from sidecar.api.ops import NONE, SCOPED
from sidecar.errors import ApiError
from sidecar.metrics import REJECTED_INPUTS
from sidecar.service import MemoryService
from sidecar.ui import routes as ui_routes
from sidecar.web import (
    HTTP_CODES,
    MAX_BODY_BYTES,
    Handler,
    error_response,
    is_loopback_host,
    is_loopback_origin,
    json_body,
)

log = logging.getLogger(__name__)

SERVICE: web.AppKey[MemoryService] = web.AppKey("service", MemoryService)


def _host_guard(allowed: tuple[str, ...]) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if host is not None and not is_loopback_host(host, allowed):
            return error_response(403, "forbidden_host", f"Host {host!r} is not a loopback name")
        return await handler(request)

    return middleware


# POSTs that change nothing: a search only reads (its Origin is still checked).
_READ_ONLY_POSTS = frozenset({"/memory/search"})


def _browser_guard(allowed: tuple[str, ...]) -> Any:
    """Refuse what a web page the agent's browser opens could send to localhost.

    A foreign ``Origin`` is refused on every route. A request that changes memory
    must also say ``Content-Type: application/json``: a browser sends that
    cross-site only after a CORS preflight, which this daemon never grants, so a
    plain form or ``fetch`` from another site cannot write. ``/mcp`` checks its own.
    """

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is not None and not is_loopback_origin(origin, allowed):
            return error_response(
                403, "forbidden_origin", f"Origin {origin!r} is not a loopback page"
            )
        if (
            request.method not in ("GET", "HEAD", "OPTIONS")
            and request.path not in _READ_ONLY_POSTS
            and request.path != MCP_PATH
            and request.match_info.http_exception is None  # no such route: 404 / 405 says so
            and request.content_type != "application/json"
        ):
            sent = request.headers.get("Content-Type")
            got = f"got {sent!r}" if sent is not None else "no Content-Type was sent"
            return error_response(
                415, "unsupported_media_type",
                f"{request.method} {request.path} takes Content-Type: application/json ({got}); "
                "every request but a GET and POST /memory/search must say so, which a web "
                "page cannot without a CORS preflight",
            )  # fmt: skip
        return await handler(request)

    return middleware


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes ``{"error", "detail"}`` JSON with a fitting status."""
    try:
        return await handler(request)
    except ApiError as exc:
        if exc.status < 500:
            REJECTED_INPUTS.labels(reason=exc.error).inc()
        response = web.json_response(exc.to_json(), status=exc.status)
        if "retry_after" in exc.extra:
            response.headers["Retry-After"] = str(exc.extra["retry_after"])
        return response
    except web.RequestPayloadError as exc:  # a body that will not decode (bad gzip, say)
        # Done with it: aiohttp would otherwise read the rest after answering, meet the same
        # error again and log it as an unhandled exception with a traceback.
        request.content.feed_eof()
        response = error_response(400, "bad_request", f"request body unreadable: {exc}")
        response.force_close()
        return response
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = HTTP_CODES.get(exc.status, "http_error")
        detail = exc.text or exc.reason
        if exc.status == 404:
            detail = f"no such endpoint: {request.method} {request.path}"
        elif isinstance(exc, web.HTTPMethodNotAllowed):
            allowed = ", ".join(sorted(exc.allowed_methods - {"HEAD"}))
            detail = f"{request.path} does not take {request.method}; it takes {allowed}"
        return error_response(exc.status, code, detail)
    except Exception as exc:
        log.exception("internal error", extra={"path": request.path})
        return error_response(500, "internal", f"{type(exc).__name__}: {exc}")


def _scope_param(request: web.Request) -> str:
    return str(SCOPED.parse_query(request.query)["scope"])


async def status(request: web.Request) -> web.Response:
    scope = _scope_param(request)
    return web.json_response(await request.app[SERVICE].status(scope))


async def reindex(request: web.Request) -> web.Response:
    scope = _scope_param(request)
    if request.body_exists and await request.read():
        fields = await json_body(request)  # {} or nothing: the scope is a query parameter
        if fields:
            detail = f"unknown field(s) {sorted(fields)}; reindex takes no body fields: "
            raise ApiError(400, "unknown_field", detail + "pass ?scope=agent|crew|both")
    return web.json_response(await request.app[SERVICE].reindex(scope), status=202)


async def healthz(request: web.Request) -> web.Response:
    NONE.parse_query(request.query)
    return web.json_response(await request.app[SERVICE].health())


def create_app(service: MemoryService) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        middlewares=[
            scrape.count_requests,
            _host_guard(service.settings.allowed_hosts),
            _browser_guard(service.settings.allowed_hosts),
            error_middleware,
        ],
    )
    app[SERVICE] = service
    service.add_routes(app)  # each capability's own routes
    app.router.add_get("/memory/status", status)
    app.router.add_post("/memory/reindex", reindex)
    app.router.add_get("/healthz", healthz)
    scrape.add_routes(app, service)
    openapi.add_routes(app)
    ui_routes.add_routes(app)  # the inspector page: HTML, outside the OpenAPI document
    mount_mcp(app, service)
    return app
