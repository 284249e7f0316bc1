"""memory.facts: what is known, as facts distilled from the journal (read only)."""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types

from sidecar.facts import ops
from sidecar.mcp_results import McpTool, result

FACTS = "memory.facts"


class FactsBackend(Protocol):
    """Raises ``ApiError`` for failures the caller can act on."""

    async def facts(self, body: dict[str, Any]) -> dict[str, Any]: ...


def render(body: dict[str, Any]) -> str:
    facts = body.get("facts", [])
    if not facts:
        return "No known facts match."
    lines = [f"{len(facts)} known fact(s), best first (distilled from past events):"]
    lines += [f"- [{f['category']}] {f['fact']} (sources: {f['sources']}, id {f['id']})"
              for f in facts]  # fmt: skip
    return "\n".join(lines)


async def search(backend: FactsBackend, args: dict[str, Any]) -> types.CallToolResult:
    body = await backend.facts(args)
    return result(render(body), body)


FACTS_TOOL = types.Tool(
    name=FACTS,
    title="Look up known facts",
    description=(
        "Look up what is known about the user and the work: facts distilled from past events "
        "(where they live, what they prefer, how you should behave), each true until a later "
        "event changed it. as_of asks what was true at an earlier time."
    ),
    input_schema=ops.SEARCH.schema(),
    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
)

TOOLS = (McpTool(FACTS_TOOL, search, "memory sidecar unavailable — no facts were looked up"),)
