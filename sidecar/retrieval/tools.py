"""memory.search: the search capability's MCP tool."""

from __future__ import annotations

from typing import Any

from sidecar.mcp_results import answer, tool, withhold_flagged
from sidecar.retrieval import ops

SEARCH = "memory.search"


def render_search(body: dict[str, Any], args: dict[str, Any]) -> str:
    query = args["query"]
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


TOOLS = (
    tool(
        SEARCH,
        "Search memory",
        "Search long-term memory (by words, re-ranked by meaning when the sidecar has an "
        "embedding model; best matches first). Ask in plain language "
        "('which database did we pick?') or use FTS5 syntax (\"exact phrase\", AND/OR/NOT, "
        "prefix*). Each result names its file and line range, heading and a snippet; use "
        "memory.read for the surrounding lines. scope: agent (your memory, default), crew "
        "(shared memory) or both.",
        ops.TOOL_SCHEMA,
        answer(ops.SEARCH, render_search, withhold_flagged),
        "memory sidecar unavailable — search unavailable",
    ),
)
