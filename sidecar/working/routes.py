"""``POST /memory/remember``: a working entry."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar import ops as shared
from sidecar.working import ops
from sidecar.working.working import Working

WORKING: web.AppKey[Working] = web.AppKey("working", Working)


async def _remember(working: Working, body: dict[str, Any]) -> dict[str, Any]:
    shared.check_fields(body, ops.REMEMBER.names)  # Working checks the values
    return await working.remember(body)


ROUTES = (shared.Route(ops.REMEMBER, _remember, status=201, parse=False),)


def add_routes(app: web.Application, capability: Working) -> None:
    shared.add_routes(app, WORKING, capability, *ROUTES)
