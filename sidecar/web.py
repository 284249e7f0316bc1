"""What every HTTP route needs, whichever capability serves it: loopback checks,
the body limit, JSON bodies with their fields checked, and the error shape.

Every error a route gives is JSON ``{"error": code, "detail": why}``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from sidecar import strict_json
from sidecar.errors import ApiError
from sidecar.metrics import HTTP_REQUESTS, REJECTED_INPUTS

MAX_BODY_BYTES = 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@functools.lru_cache(maxsize=64)  # every request asks, nearly always about one Host value
def is_loopback_host(host: str, extra: tuple[str, ...] = ()) -> bool:
    """True for localhost names and loopback addresses, with or without a port."""
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:9119
        name = name[1 : name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if name in extra or name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback_origin(origin: str, extra: tuple[str, ...] = ()) -> bool:
    """Browsers send Origin; only a page served from a loopback name counts as local
    (``null``, from a sandboxed frame or a file, does not)."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:  # "http://[::1", say: no page has that origin
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.netloc)
        and is_loopback_host(parts.netloc, extra)
    )


# Codes for answers aiohttp itself produces (routing and the HTTP parser).
HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "body_too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    431: "headers_too_large",
    500: "internal",
}


def error_response(status: int, error: str, detail: str) -> web.Response:
    if status < 500:
        REJECTED_INPUTS.labels(reason=error).inc()
    return web.json_response({"error": error, "detail": detail}, status=status)


class _JsonErrorHandler(RequestHandler):
    """Answers what never reaches the app (a request line or header aiohttp cannot
    parse, a URL over its limit) in the API's error shape too."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            super().handle_error(request, status, exc, message)  # logs it as aiohttp would
        else:  # the client's malformed request: counted and answered, not an error of ours
            self.logger.debug("malformed request from %s", request.remote, exc_info=exc)
            if request.writer.output_size > 0:  # as aiohttp: a response is half sent already
                raise ConnectionError("response already sent, cannot send the error")
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        detail = message if message and status != 500 else reason
        response = error_response(status, HTTP_CODES.get(status, "http_error"), detail)
        response.force_close()
        # Never routed, so the app's counting middleware did not see it: count it here.
        HTTP_REQUESTS.labels(route="unparsed", method="-", status=str(status)).inc()
        return response


class _JsonErrorServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _JsonErrorHandler(self, loop=self._loop, **self._kwargs)


class JsonErrorRunner(web.AppRunner):
    """An ``AppRunner`` whose every error answer, even the parser's, is JSON."""

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()  # the app's own server, started up
        return _JsonErrorServer(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            loop=made._loop,
            **made._kwargs,
        )


MAX_JSON_DEPTH = 8  # no request field is nested; a deep body is never one we asked for


def _depth(value: object) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object; a 400 for anything else, naming what is wrong."""
    raw = await request.read()
    try:
        body = strict_json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from exc
    except ValueError as exc:  # NaN, 1e400, or an integer of more than 4,300 digits
        detail = f"request body holds an unreadable number: {exc}"
        raise ApiError(400, "invalid_json", detail) from exc
    except RecursionError:
        raise ApiError(
            400, "too_deep", f"request body nests deeper than {MAX_JSON_DEPTH} levels"
        ) from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", "request body must be a JSON object")
    if b"\\ud" in raw or b"\\uD" in raw or b"\xed" in raw:  # a surrogate, escaped or raw?
        try:
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(
                400,
                "invalid_json",
                "request body holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text",
            ) from None
    for name, value in body.items():
        if _depth(value) > MAX_JSON_DEPTH - 1:
            raise ApiError(400, "too_deep", f"'{name}' nests deeper than {MAX_JSON_DEPTH} levels")
    return body
