"""memory.write and memory.read: the notes capability's MCP tools.

The tools run against a backend with the notes' own methods: ``Notes`` itself
inside the daemon, or an HTTP client in the ``sidecar mcp`` stdio proxy.
"""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types

from sidecar.errors import ApiError
from sidecar.mcp_results import McpTool, result, with_entries, withhold_flagged
from sidecar.notes import ops

WRITE, READ = "memory.write", "memory.read"


class NotesBackend(Protocol):
    """Raises ``ApiError`` for failures the caller can act on."""

    async def write(self, body: dict[str, Any]) -> dict[str, Any]: ...

    async def read(self, body: dict[str, Any]) -> dict[str, Any]: ...


_LAYOUT = (
    "Files: agent tier (scope=agent, your own memory): AGENT.md (lasting facts, preferences, "
    "decisions) and daily/YYYY-MM-DD.md or daily/today (today's log, UTC). Crew tier "
    "(scope=crew, shared by the whole crew): CREW.md, daily/YYYY-MM-DD.md and topics/<slug>.md "
    "(slug: lowercase letters, digits, '-' and '_')."
)
_FILES = f"{_LAYOUT} No other paths are allowed."
# memory.read also opens any other note a search hit names (a person's own file).
_READ_FILES = (
    f"{_LAYOUT} memory.read also opens any other .md file a memory.search hit names (read only)."
)


def render_write(body: dict[str, Any]) -> str:
    usage = body.get("usage") or {}
    text = f"Saved to {body.get('scope')}/{body.get('file')}"
    if usage:
        text += f" ({usage.get('bytes')} of {usage.get('cap')} bytes, {usage.get('pct')}%)"
    text += "."
    if body.get("warning"):
        text += f"\nWarning: {body['warning']}"
    return with_entries(text, body)


def render_read(body: dict[str, Any]) -> str:
    where = f"{body.get('scope')}/{body.get('file')}"
    total = body.get("total_lines", 0)
    if not body.get("content") and not total:
        return f"{where} is empty."
    head = f"{where}, lines {body.get('start_line')}-{body.get('end_line')} of {total}:"
    return f"{head}\n{body.get('content', '')}"


async def write(backend: NotesBackend, args: dict[str, Any]) -> types.CallToolResult:
    body = await backend.write(args)
    return result(render_write(body), body)


async def read(backend: NotesBackend, args: dict[str, Any]) -> types.CallToolResult:
    """A file nobody has written yet is an empty answer, not an error."""
    scope, file = args["scope"], args["file"]
    try:
        body = await backend.read(args)
    except ApiError as exc:
        if exc.status != 404 or exc.error != "not_found":
            raise
        text = f"{scope}/{file}: {exc.detail}."
        body = {"scope": scope, "file": file, "exists": False, "content": ""}
        return result(text, {**body, "detail": exc.detail, **exc.extra})
    body = withhold_flagged(body)
    return result(render_read(body), {"exists": True, **body})


WRITE_TOOL = types.Tool(
    name=WRITE,
    title="Save to memory",
    description=(
        "Save something worth remembering to long-term memory (markdown files on disk; it "
        "survives restarts and is searchable as soon as this returns).\n"
        f"{_FILES} Only the crew lead may write the crew tier.\n"
        "mode=append (default) adds the content as new line(s) at the end of the file; "
        "mode=replace overwrites the whole file with the content.\n"
        "Size caps: AGENT.md and CREW.md 4,000 bytes, daily files 100 KB, topic and user "
        "files 16 KB. A write that would go over a cap writes nothing and returns the file's "
        "current_entries: consolidate them (merge duplicates, drop what is outdated or done) "
        "and retry in the same turn with mode=replace and the consolidated content plus the "
        "new entry. A write near the cap succeeds with a warning and current_entries: "
        "consolidate then, before the next append is refused."
    ),
    input_schema=ops.WRITE_TOOL_SCHEMA,
    annotations=types.ToolAnnotations(
        read_only_hint=False, destructive_hint=True, open_world_hint=False
    ),
)

READ_TOOL = types.Tool(
    name=READ,
    title="Read a memory file",
    description=(
        "Read a long-term memory file, whole or a line range (1-based, inclusive; e.g. the "
        f"lines memory.search reported). {_READ_FILES} A file nobody has written yet comes back "
        "empty, not as an error."
    ),
    input_schema=ops.READ_TOOL_SCHEMA,
    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
)

TOOLS = (
    McpTool(WRITE_TOOL, write, "memory sidecar unavailable — nothing was written"),
    McpTool(READ_TOOL, read, "memory sidecar unavailable — nothing was read"),
)
