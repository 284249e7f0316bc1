"""The sessions' operations, declared once: the HTTP routes check requests with them, the
MCP tools and ``sidecar session`` take their schemas and flags from them."""

from __future__ import annotations

from sidecar import ops
from sidecar.context import block
from sidecar.context.ops import CONTEXT
from sidecar.errors import MAX_LABEL_CHARS, ApiError
from sidecar.operators.identity import check_id

MAX_ID_CHARS = 256  # a user_id or workspace_id, as the operator model takes them


def _session(value: object, name: str) -> str:
    session_id = ops.label().check(value, name)
    if session_id is None:
        raise ApiError(400, "bad_session_id", "'session_id' is required: the id session/start "
                       "answered")  # fmt: skip
    return str(session_id)


def _who(value: object, name: str) -> str | None:
    text = ops.string_value(value, name)
    if text is None:
        return None
    if not text or len(text) > MAX_ID_CHARS:
        raise ApiError(400, f"bad_{name}", f"'{name}' must be 1 to {MAX_ID_CHARS} characters")
    check_id(name, text)
    return text


def _task(value: object, name: str) -> str | None:
    text = ops.string_value(value, name)
    if text is not None and len(text) > ops.MAX_QUERY_CHARS:  # named, unlike a query's
        raise ApiError(400, "query_too_long", f"'{name}' is limited to {ops.MAX_QUERY_CHARS} "
                       f"characters (got {len(text):,}): say in a few sentences what the "
                       "session is about")  # fmt: skip
    return text or None


def _who_field(about: str) -> ops.Field:
    return ops.Field({"type": "string", "maxLength": MAX_ID_CHARS, "description": about}, _who)


START = ops.Op.of(
    "POST /memory/session/start",
    session_id=ops.label(about="the session's id; absent: one is assigned (a UUIDv7)"),
    agent_id=ops.label(about="the agent working in the session"),
    user_id=_who_field("the operator the session works with (needs workspace_id)"),
    workspace_id=_who_field("the operator's workspace"),
    task=ops.Field(
        {
            "type": "string",
            "maxLength": ops.MAX_QUERY_CHARS,
            "description": "what the session is about: the memory block is built for it",
        },
        _task,
    ),
    budget=ops.Field(
        {
            "type": "integer",
            "minimum": 1000,
            "maximum": 200_000,
            "default": block.DEFAULT_BUDGET,
            "description": "the memory block's size in characters",
        },
        CONTEXT.fields["budget"].check,
        block.DEFAULT_BUDGET,
    ),
    unsure="the session may or may not have started. Start it again with the same "
    "session_id: starting an open session again answers the same session.",
)

END = ops.Op.of(
    "POST /memory/session/end",
    session_id=ops.Field({"type": "string", "maxLength": MAX_LABEL_CHARS}, _session, required=True),
    unsure="the session may or may not have ended. End it again: ending a session twice "
    "does nothing the second time.",
)
