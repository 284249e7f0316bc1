"""``POST /memory/operator`` and ``POST /memory/operator/opt-out``, on the lead."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar.errors import ApiError
from sidecar.operators import identity, model
from sidecar.operators.operators import Operators
from sidecar.web import bool_field, check_fields, int_field, json_body, string_field

OPERATORS: web.AppKey[Operators] = web.AppKey("operators", Operators)


def _who(body: dict[str, Any]) -> tuple[str, str]:
    found = []
    for name in ("user_id", "workspace_id"):
        value = string_field(body, name)
        if not value or len(value) > 256:
            raise ApiError(400, f"bad_{name}", f"'{name}' is required: 1 to 256 characters")
        identity.check_id(name, value)
        found.append(value)
    return found[0], found[1]


def _fields(body: dict[str, Any]) -> dict[str, str]:
    raw = body.get("fields", {})
    if not isinstance(raw, dict) or len(raw) > model.MAX_FIELDS:
        raise ApiError(
            400,
            "bad_fields",
            f"'fields' must be an object of at most "
            f'{model.MAX_FIELDS} fields, e.g. {{"timezone": "Europe/Lisbon"}}',
        )
    out = {}
    for name, value in raw.items():
        if not model.FIELD_NAME.fullmatch(name):
            raise ApiError(
                400,
                "bad_fields",
                f"field name {name[:50]!r} must be lowercase "
                "letters, digits and '_', starting with a letter",
            )
        if (
            not isinstance(value, str)
            or not value.strip()
            or "\n" in value
            or (len(value) > model.MAX_VALUE_CHARS)
        ):
            raise ApiError(
                400,
                "bad_fields",
                f"'{name}' must be one line of text, 1 to {model.MAX_VALUE_CHARS} characters",
            )
        out[name] = " ".join(value.split())
    return out


async def update(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(
        body, ("user_id", "workspace_id", "fields", "messages", "session_seconds", "distill")
    )
    user_id, workspace_id = _who(body)
    seconds = body.get("session_seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise ApiError(400, "bad_session_seconds", "'session_seconds' must be a number >= 0")
    answer = await request.app[OPERATORS].update(
        user_id,
        workspace_id,
        _fields(body),
        int_field(body, "messages", 0, 0, 10**9),
        float(seconds),
        bool_field(body, "distill", False),
    )
    return web.json_response(answer, status=200 if answer["written"] else 202)


async def opt_out(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("user_id", "workspace_id"))
    return web.json_response(await request.app[OPERATORS].opt_out(*_who(body)))


def add_routes(app: web.Application, capability: Operators) -> None:
    app[OPERATORS] = capability
    app.router.add_post("/memory/operator", update)
    app.router.add_post("/memory/operator/opt-out", opt_out)
