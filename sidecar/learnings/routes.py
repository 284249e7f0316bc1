"""The learnings' HTTP routes: learn, list, search, compact."""

from __future__ import annotations

from aiohttp import web

from sidecar import ops as shared
from sidecar.learnings import ops
from sidecar.learnings.learnings import Learnings

LEARNINGS: web.AppKey[Learnings] = web.AppKey("learnings", Learnings)

ROUTES = (
    shared.Route(ops.LEARN, lambda learnings, a: learnings.learn(a), status=201),
    shared.Route(
        ops.SEARCH,
        lambda learnings, a: learnings.search(ops.search_args(a, learnings.default_scope())),
    ),
    shared.Route(ops.LIST, lambda learnings, a: learnings.listing(**a)),
    shared.Route(ops.COMPACT, lambda learnings, a: learnings.compact(**a)),
)


def add_routes(app: web.Application, capability: Learnings) -> None:
    shared.add_routes(app, LEARNINGS, capability, *ROUTES)
