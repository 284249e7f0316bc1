"""``POST /memory/operator`` and ``POST /memory/operator/opt-out``, on the lead."""

from __future__ import annotations

from aiohttp import web

from sidecar.operators import ops
from sidecar.operators.operators import Operators
from sidecar.web import json_body

OPERATORS: web.AppKey[Operators] = web.AppKey("operators", Operators)


async def update(request: web.Request) -> web.Response:
    answer = await request.app[OPERATORS].update(**ops.UPDATE.parse(await json_body(request)))
    return web.json_response(answer, status=200 if answer["written"] else 202)


async def opt_out(request: web.Request) -> web.Response:
    answer = await request.app[OPERATORS].opt_out(**ops.OPT_OUT.parse(await json_body(request)))
    return web.json_response(answer)


def add_routes(app: web.Application, capability: Operators) -> None:
    app[OPERATORS] = capability
    app.router.add_post("/memory/operator", update)
    app.router.add_post("/memory/operator/opt-out", opt_out)
