"""What every HTTP route needs, whichever capability serves it: loopback checks,
the body limit, JSON bodies with their fields checked, and the error shape.

Every error a route gives is JSON ``{"error": code, "detail": why}``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from sidecar.errors import ApiError

MAX_BODY_BYTES = 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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


def error_response(status: int, error: str, detail: str) -> web.Response:
    return web.json_response({"error": error, "detail": detail}, status=status)


async def json_body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", "request body must be a JSON object")
    return body


def check_fields(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ApiError(
            400, "unknown_field", f"unknown field(s) {unknown}; allowed: {', '.join(allowed)}"
        )
