"""The facts' HTTP routes: search, history, an operator's invalidation, consolidate now."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar import ops as shared
from sidecar.facts import ops
from sidecar.facts.facts import Facts

FACTS: web.AppKey[Facts] = web.AppKey("facts", Facts)


async def _history(facts: Facts, a: dict[str, Any]) -> Any:
    return facts.history(a["scope"], a["id"])


ROUTES = (
    shared.Route(ops.SEARCH, lambda facts, a: facts.search(**a)),
    shared.Route(ops.HISTORY, _history),
    shared.Route(
        ops.INVALIDATE,
        lambda facts, a: facts.invalidate(fact_id=a["id"], scope=a["scope"], reason=a["reason"]),
    ),
    shared.Route(ops.CONSOLIDATE, lambda facts, a: facts.consolidate(a["scope"])),
)


def add_routes(app: web.Application, capability: Facts) -> None:
    shared.add_routes(app, FACTS, capability, *ROUTES)
