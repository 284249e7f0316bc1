"""The memory block's operation, declared once: ``GET /memory/context`` checks its query
parameters with it; the builder checks the budget's range and the query's length."""

from __future__ import annotations

from sidecar import ops
from sidecar.errors import ApiError


def _budget(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, "bad_budget", "'budget' must be a whole number")
    return value


CONTEXT = ops.Op.of(
    "GET /memory/context",
    budget=ops.Field({"type": "integer"}, _budget, 15000, from_text=ops.number(int)),
    query=ops.text(),
    user_id=ops.text(),
    workspace_id=ops.text(),
    session_id=ops.label("default"),
)
