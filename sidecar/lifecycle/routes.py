"""``POST /memory/maintain``: the lifecycle engine's HTTP route."""

from __future__ import annotations

from aiohttp import web

from sidecar import ops as shared
from sidecar.lifecycle import ops
from sidecar.lifecycle.engine import Lifecycle

LIFECYCLE: web.AppKey[Lifecycle] = web.AppKey("lifecycle", Lifecycle)

ROUTES = (
    shared.Route(ops.MAINTAIN, lambda lifecycle, a: lifecycle.maintain(a["scope"], a["dry_run"])),
)


def add_routes(app: web.Application, capability: Lifecycle) -> None:
    shared.add_routes(app, LIFECYCLE, capability, *ROUTES)
