"""memory.remember: a short-lived note, recallable at once, promoted to an episode later."""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types

from sidecar.mcp_results import McpTool, result
from sidecar.working import ops

REMEMBER = "memory.remember"


class WorkingBackend(Protocol):
    async def remember(self, body: dict[str, Any]) -> dict[str, Any]: ...


async def remember(backend: WorkingBackend, args: dict[str, Any]) -> types.CallToolResult:
    body = await backend.remember(args)
    return result(f"Noted until {body['expires_at']} (id {body['id']}); recallable now.", body)


REMEMBER_TOOL = types.Tool(
    name=REMEMBER,
    title="Note something for now",
    description=(
        "Note something short-lived about the current work (a finding, an intermediate "
        "result, what the user just said). It is recallable at once with memory.recall; "
        "later a sleep pass condenses the session's notes into one lasting episode."
    ),
    input_schema=ops.REMEMBER_TOOL_SCHEMA,
    annotations=types.ToolAnnotations(
        read_only_hint=False, destructive_hint=False, open_world_hint=False
    ),
)

TOOLS = (McpTool(REMEMBER_TOOL, remember, "memory sidecar unavailable — nothing was noted"),)
