"""The daemon-wide operations, declared once: status and reindex take a scope (the HTTP
routes as a query parameter, ``memory.reindex`` as its argument), health takes nothing."""

from __future__ import annotations

from sidecar import ops
from sidecar.disk.tiers import SCOPES

SCOPED = ops.Op.of("GET /memory/status", "POST /memory/reindex", scope=ops.scope(SCOPES))
NONE = ops.Op.of("GET /healthz")
