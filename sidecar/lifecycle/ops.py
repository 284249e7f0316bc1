"""The lifecycle's operation, declared once: the HTTP route checks requests with it, the
MCP tool takes its schema from it, ``sidecar maintain`` its flags."""

from __future__ import annotations

from sidecar import ops
from sidecar.disk.tiers import SCOPES

MAINTAIN = ops.Op.of(
    "POST /memory/maintain",
    scope=ops.scope(
        SCOPES, "both", about="agent, crew (on the crew lead) or both: every tier served here."
    ),
    dry_run=ops.flag(False, "change nothing; answer what a pass would do"),
    unsure="a maintenance pass may have run; it is safe to run again (GET /memory/status "
    "shows the last one).",
)
