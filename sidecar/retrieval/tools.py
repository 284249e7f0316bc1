"""memory.search: the search capability's MCP tool."""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types

from sidecar.mcp_results import McpTool, result, withhold_flagged
from sidecar.retrieval import ops

SEARCH = "memory.search"


class SearchBackend(Protocol):
    """Raises ``ApiError`` for failures the caller can act on."""

    async def search(self, body: dict[str, Any]) -> dict[str, Any]: ...


def render_search(body: dict[str, Any], query: str) -> str:
    results = body.get("results") or []
    if not results:
        return f"No memory matches {query!r}."
    lines = [f"{len(results)} result(s) for {query!r}:"]
    for i, r in enumerate(results, 1):
        heading = f" — {r['heading']}" if r.get("heading") else ""
        lines.append(
            f"{i}. [{r.get('source')}] {r.get('file')}:{r.get('start_line')}-{r.get('end_line')}"
            f"{heading}"
        )
        lines.extend(f"   {line}" for line in str(r.get("snippet", "")).splitlines())
    return "\n".join(lines)


async def search(backend: SearchBackend, args: dict[str, Any]) -> types.CallToolResult:
    body = withhold_flagged(await backend.search(args))
    return result(render_search(body, args["query"]), body)


SEARCH_TOOL = types.Tool(
    name=SEARCH,
    title="Search memory",
    description=(
        "Search long-term memory (by words, re-ranked by meaning when the sidecar has an "
        "embedding model; best matches first). Ask in plain language "
        "('which database did we pick?') or use FTS5 syntax (\"exact phrase\", AND/OR/NOT, "
        "prefix*). Each result names its file and line range, heading and a snippet; use "
        "memory.read for the surrounding lines. scope: agent (your memory, default), crew "
        "(shared memory) or both."
    ),
    input_schema=ops.TOOL_SCHEMA,
    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
)

TOOLS = (McpTool(SEARCH_TOOL, search, "memory sidecar unavailable — search unavailable"),)
