"""memory.facts: what is known, as facts distilled from the journal (read only)."""

from __future__ import annotations

from typing import Any

from sidecar.facts import ops
from sidecar.mcp_results import answer, listing, tool

FACTS = "memory.facts"


def render(body: dict[str, Any], args: dict[str, Any]) -> str:
    return "\n".join(
        listing(
            body.get("facts", []),
            "No known facts match.",
            "{n} known fact(s), best first (distilled from past events):",
            lambda f: f"- [{f['category']}] {f['fact']} (sources: {f['sources']}, id {f['id']})",
        )
    )


TOOLS = (
    tool(
        FACTS,
        "Look up known facts",
        "Look up what is known about the user and the work: facts distilled from past events "
        "(where they live, what they prefer, how you should behave), each true until a later "
        "event changed it. as_of asks what was true at an earlier time.",
        ops.SEARCH.schema(),
        answer(ops.SEARCH, render),
        "memory sidecar unavailable — no facts were looked up",
    ),
)
