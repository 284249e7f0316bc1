"""The search's operation, declared once: the HTTP route and the crew address check
requests with it, the MCP tool takes its schema from it."""

from __future__ import annotations

from sidecar import ops
from sidecar.disk.tiers import SCOPES

SEARCH = ops.Op.of(
    "POST /memory/search",
    query=ops.query("missing_query", "'query' must be a non-empty string"),
    scope=ops.scope(SCOPES),
    limit=ops.whole(1, 50, 10),
    mode=ops.text(),  # ``Search`` checks its value
    archive=ops.flag(
        False,
        "also search archive/: old daily logs moved out of the active tier, by their "
        "words (hits say archived: true)",
    ),
    session_id=ops.label(about="the session searching: an open session it names is not idle"),
)
# The tool leaves the mode to the daemon, and shows a model fewer results at a time.
TOOL_SCHEMA = SEARCH.schema(omit=("mode",), limit={"maximum": 20})
