"""The notes' operations, declared once: the HTTP routes check requests with them, the
MCP tools take their schemas from them. ``Notes`` checks what a path or content may be."""

from __future__ import annotations

from sidecar import ops
from sidecar.errors import ApiError

_SCOPE_RW = "agent: your own memory. crew: memory shared by the crew."


def _file(value: object, name: str) -> str:
    if value is None:
        raise ApiError(
            400, "missing_file", "the 'file' parameter is required: a memory file of the tier, "
            "as search results name it (e.g. AGENT.md or daily/2026-11-21.md)",
        )  # fmt: skip
    return str(value)


def _line(value: object, name: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ApiError(400, "bad_range", f"'{name}' must be a whole number")
    return value


def file(about: str) -> ops.Field:
    """A memory file of the tier, as search results name it (a query parameter)."""
    return ops.Field({"type": "string", "description": about}, _file, required=True)


def line() -> ops.Field:
    return ops.Field({"type": "integer", "minimum": 1}, _line, from_text=ops.number(int))


WRITE = ops.Op.of(
    "POST /memory/write",
    scope=ops.scope(about=_SCOPE_RW),
    file=ops.text(
        about="AGENT.md, CREW.md, daily/YYYY-MM-DD.md, daily/today or "
        "topics/<slug>.md (CREW.md and topics: crew only).",
        required=True,
    ),
    content=ops.text(
        about="Markdown to append (e.g. '- Staging moved to eu-west-2.') "
        "or the whole new file for mode=replace.",
        required=True,
    ),
    mode=ops.choice(("append", "replace"), "append"),
    unsure="the write may or may not have been saved. Read {file} before writing it again.",
)
WRITE_TOOL_SCHEMA = WRITE.schema(require=("scope",))

READ = ops.Op.of(
    "GET /memory/read",
    scope=ops.scope(about=_SCOPE_RW),
    file=file("e.g. AGENT.md or daily/2026-11-21.md"),
    start_line=line(),
    end_line=line(),
)
READ_TOOL_SCHEMA = READ.schema(require=("scope",))

LIST_FILES = ops.Op.of("GET /memory/files", scope=ops.scope())
READ_FILE = ops.Op.of("GET /memory/files/read", scope=ops.scope(), file=file("a file of the tier"))
# It follows every tier: a ``scope`` would promise a filter it lacks.
FOLLOW = ops.Op.of("GET /memory/files/changes")
