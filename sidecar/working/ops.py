"""The working memory's operation, declared once: the HTTP route checks its fields with
it, the MCP tool takes its schema from it; ``Working.remember`` checks the values."""

from __future__ import annotations

from sidecar import ops
from sidecar.working.working import DEFAULT_TTL_S, MAX_TTL_S

REMEMBER = ops.Op.of(
    "POST /memory/remember",
    content=ops.text(required=True, minLength=1, maxLength=2000),
    source=ops.label("agent"),
    session_id=ops.label("default"),
    ttl_s=ops.whole(60, MAX_TTL_S, DEFAULT_TTL_S),
    scope=ops.scope(),
    unsure="the note may or may not have been saved. Recall it before noting it again.",
)
REMEMBER_TOOL_SCHEMA = REMEMBER.schema(omit=("scope",))  # a model notes for itself
