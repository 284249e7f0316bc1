"""memory.remember: a short-lived note, recallable at once, promoted to an episode later."""

from __future__ import annotations

from sidecar.mcp_results import answer, tool
from sidecar.working import ops

REMEMBER = "memory.remember"

TOOLS = (
    tool(
        REMEMBER,
        "Note something for now",
        "Note something short-lived about the current work (a finding, an intermediate "
        "result, what the user just said). It is recallable at once with memory.recall; "
        "later a sleep pass condenses the session's notes into one lasting episode.",
        ops.REMEMBER_TOOL_SCHEMA,
        answer(
            ops.REMEMBER,
            lambda body, _: f"Noted until {body['expires_at']} (id {body['id']}); recallable now.",
        ),
        "memory sidecar unavailable — nothing was noted",
        writes=True,
    ),
)
