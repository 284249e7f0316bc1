"""The facts' operations, declared once: the HTTP routes check requests with them, the
MCP tool takes its schema from them."""

from __future__ import annotations

from sidecar import ops
from sidecar.errors import ApiError
from sidecar.facts.log import CATEGORIES
from sidecar.journal.ops import time


def _reason(value: object, name: str) -> str:
    reason = ops.string_value(value, name) or ""
    if len(reason) > 500:
        raise ApiError(400, "bad_reason", "'reason' is limited to 500 characters")
    return reason


SEARCH = ops.Op.of(
    "POST /memory/facts",
    query=ops.query(),
    category=ops.choice(CATEGORIES),
    limit=ops.whole(1, 50, 10),
    as_of=time("ISO 8601 with a zone"),
    scope=ops.scope(),
)

HISTORY = ops.Op.of("GET /memory/facts/{id}/history", scope=ops.scope())
INVALIDATE = ops.Op.of(
    "POST /memory/facts/{id}/invalidate",
    scope=ops.scope(),
    reason=ops.Field({"type": "string", "maxLength": 500}, _reason),
)
# Without a scope: every tier.
CONSOLIDATE = ops.Op.of("POST /memory/consolidate", scope=ops.scope(default=None))
