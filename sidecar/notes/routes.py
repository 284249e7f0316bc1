"""``POST /memory/write`` and ``GET /memory/read``: the notes capability's HTTP routes."""

from __future__ import annotations

from aiohttp import web

from sidecar.errors import ApiError
from sidecar.notes.notes import Notes
from sidecar.web import check_fields, json_body, string_field

NOTES: web.AppKey[Notes] = web.AppKey("notes", Notes)


async def write(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope", "file", "content", "mode"))
    result = await request.app[NOTES].write(
        string_field(body, "scope", "agent"), string_field(body, "file"),
        string_field(body, "content"), string_field(body, "mode", "append"),
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
    result = await request.app[NOTES].read(
        request.query.get("scope", "agent"), request.query.get("file", ""),
        _line_param(request, "start_line"), _line_param(request, "end_line"),
    )  # fmt: skip
    return web.json_response(result)


def add_routes(app: web.Application, capability: Notes) -> None:
    app[NOTES] = capability
    app.router.add_post("/memory/write", write)
    app.router.add_get("/memory/read", read)
