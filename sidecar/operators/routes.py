"""``POST /memory/operator`` and ``POST /memory/operator/opt-out``, on the lead."""

from __future__ import annotations

from aiohttp import web

from sidecar import ops as shared
from sidecar.operators import ops
from sidecar.operators.operators import Operators

OPERATORS: web.AppKey[Operators] = web.AppKey("operators", Operators)

ROUTES = (
    shared.Route(
        ops.UPDATE,
        lambda operators, a: operators.update(**a),
        status=lambda answer: 200 if answer["written"] else 202,
    ),
    shared.Route(ops.OPT_OUT, lambda operators, a: operators.opt_out(**a)),
)


def add_routes(app: web.Application, capability: Operators) -> None:
    shared.add_routes(app, OPERATORS, capability, *ROUTES)
