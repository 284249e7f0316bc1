"""memory.write and memory.read: the notes capability's MCP tools."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from sidecar.errors import ApiError
from sidecar.mcp_results import (
    Backend,
    answer,
    result,
    tool,
    with_entries,
    with_warning,
    withhold_flagged,
)
from sidecar.notes import ops

WRITE, READ = "memory.write", "memory.read"


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


def render_write(body: dict[str, Any], args: dict[str, Any]) -> str:
    usage = body.get("usage") or {}
    text = f"Saved to {body.get('scope')}/{body.get('file')}"
    if usage:
        text += f" ({usage.get('bytes')} of {usage.get('cap')} bytes, {usage.get('pct')}%)"
    return with_entries(with_warning(f"{text}.", body), body)


def render_read(body: dict[str, Any]) -> str:
    where = f"{body.get('scope')}/{body.get('file')}"
    total = body.get("total_lines", 0)
    if not body.get("content") and not total:
        return f"{where} is empty."
    head = f"{where}, lines {body.get('start_line')}-{body.get('end_line')} of {total}:"
    return f"{head}\n{body.get('content', '')}"


async def read(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    """A file nobody has written yet is an empty answer, not an error."""
    scope, file = args["scope"], args["file"]
    try:
        body = await backend.run(ops.READ, args)
    except ApiError as exc:
        if exc.status != 404 or exc.error != "not_found":
            raise
        text = f"{scope}/{file}: {exc.detail}."
        body = {"scope": scope, "file": file, "exists": False, "content": ""}
        return result(text, {**body, "detail": exc.detail, **exc.extra})
    body = withhold_flagged(body)
    return result(render_read(body), {"exists": True, **body})


TOOLS = (
    tool(
        WRITE,
        "Save to memory",
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
        "consolidate then, before the next append is refused.",
        ops.WRITE_TOOL_SCHEMA,
        answer(ops.WRITE, render_write),
        "memory sidecar unavailable — nothing was written",
        writes=True,
        destructive=True,
    ),
    tool(
        READ,
        "Read a memory file",
        "Read a long-term memory file, whole or a line range (1-based, inclusive; e.g. the "
        f"lines memory.search reported). {_READ_FILES} A file nobody has written yet comes back "
        "empty, not as an error.",
        ops.READ_TOOL_SCHEMA,
        read,
        "memory sidecar unavailable — nothing was read",
    ),
)
