"""The journal's HTTP routes: record, list, look up, relate, recall, and memory health."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sidecar import ops as shared
from sidecar.journal import ops
from sidecar.journal.journal import Journal

JOURNAL: web.AppKey[Journal] = web.AppKey("journal", Journal)


async def _record(journal: Journal, body: dict[str, Any]) -> dict[str, Any]:
    """A batch (``events``) or one event; ``events.check_batch`` checks them."""
    body = dict(body)
    scope = shared.string_value(body.pop("scope", None), "scope") or "agent"
    return await journal.record(scope, body)


async def _relate(journal: Journal, a: dict[str, Any]) -> dict[str, Any]:
    return await journal.relate(
        a["scope"], a["src"] or "", a["dst"] or "", a["relation"] or "", a["weight"]
    )


ROUTES = (
    shared.Route(ops.RECORD, _record, status=201, parse=False),
    shared.Route(ops.LIST, lambda journal, a: journal.listing(*ops.listing_args(a))),
    shared.Route(ops.RELATE, _relate, status=201),
    shared.Route(ops.EVENT, lambda journal, a: journal.event(a["scope"], a["id"])),
    shared.Route(ops.RECALL, lambda journal, a: journal.recall(*ops.recall_args(a))),
    shared.Route(ops.HEALTH, lambda journal, a: journal.snapshot_health(a["scope"])),
)


def add_routes(app: web.Application, capability: Journal) -> None:
    shared.add_routes(app, JOURNAL, capability, *ROUTES)
