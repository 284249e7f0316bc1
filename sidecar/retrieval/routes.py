"""``POST /memory/search``: the search capability's HTTP route."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar import ops as shared
from sidecar.retrieval import ops
from sidecar.retrieval.search import Search

SEARCH: web.AppKey[Search] = web.AppKey("search", Search)


async def _search(search: Search, a: dict[str, Any]) -> dict[str, Any]:
    return (await search.search(**a)).to_json()


ROUTES = (shared.Route(ops.SEARCH, _search),)


def add_routes(app: web.Application, capability: Search) -> None:
    shared.add_routes(app, SEARCH, capability, *ROUTES)
