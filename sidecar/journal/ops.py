"""The journal's operations, declared once: the HTTP routes check requests with them,
the MCP tools take their schemas from them, and the OpenAPI document must agree.

Times and severities are the journal's words; they live here for every capability
that takes them (the facts' ``as_of``)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from sidecar import ops
from sidecar.disk.tiers import SCOPES
from sidecar.errors import ApiError
from sidecar.journal import events, ranking
from sidecar.journal.index import Filters

if TYPE_CHECKING:  # recall loads the safety scanner: the command line reads these without it
    from sidecar.journal.recall import RecallQuery

MAX_LIST = 500
_CURSOR_TS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?")


def time(about: str = "ISO 8601 with a time zone, e.g. 2026-11-24T09:00:00Z") -> ops.Field:
    """An ISO 8601 timestamp with a zone, as Unix time; empty or absent reads as None."""

    def check(value: object, name: str) -> float | None:
        return None if value in (None, "") else events.parse_time(value, name)

    return ops.Field({"type": "string", "description": about}, check)


def _cursor(raw: object, name: str) -> tuple[float, str] | None:
    """What ``listing`` wrote as ``next_cursor``: repr() of a finite float, then an id."""
    if not raw:
        return None
    ts, sep, event_id = str(raw).partition("|")
    at = float(ts) if _CURSOR_TS.fullmatch(ts) and sep and event_id else math.nan
    if not math.isfinite(at):  # also a number too large for a float ("1e999")
        raise ApiError(
            400, "bad_cursor", "'cursor' must be a next_cursor value from an earlier answer"
        )
    return at, event_id


def severity() -> ops.Field:
    return ops.choice(events.SEVERITIES, "info")


# What a caller sends to record one event; ``events.check_batch`` checks it (with the
# batch's ``events[i]`` in its answers), so this declaration serves the MCP tool's schema.
RECORD = ops.Op.of(
    type=ops.text(
        required=True,
        minLength=1,
        maxLength=events.MAX_TYPE_CHARS,
        about="dotted lowercase kind, e.g. deploy.failed, user.correction, peer.escalation",
    ),
    summary=ops.text(required=True, minLength=1, maxLength=events.MAX_SUMMARY_CHARS),
    severity=severity(),
    payload=ops.obj("structured detail (up to 16 KB)"),
    session_id=ops.label(),
    importance=ops.score(),
    priority=ops.choice(tuple(events.PRIORITY_FLOORS)),
    supersedes=ops.text(about="id of an event this corrects"),
    valid_until=time("when this stops being true"),
    user_id=ops.text(
        minLength=1,
        maxLength=events.MAX_WHO_CHARS,
        about="the operator the event is about (with workspace_id); only their key is kept",
    ),
    workspace_id=ops.text(minLength=1, maxLength=events.MAX_WHO_CHARS),
    scope=ops.scope(),
    via="POST /memory/journal",
    unsure="the event may or may not have been recorded. List the journal before recording "
    "it again.",
)

RECALL = ops.Op.of(
    "POST /memory/recall",
    query=ops.query(),
    k=ops.whole(1, 50, 5),
    scope=ops.scope(SCOPES, aliases=True),
    session_id=ops.label(about="only this session's events; an open session it names is not idle"),
    types=ops.words(None, 50, "an array of up to 50 event types"),
    since=time(),
    until=time(),
    walk=ops.whole(0, 1, 0),
    include_superseded=ops.flag(False),
    mark=ops.flag(True),
    ranking=ops.choice(ranking.RANKINGS, ranking.DEFAULT_RANKING),
)
RECALL_TOOL_OMITS = ("mark", "ranking")  # the tool always marks, and ranks the default way

LIST = ops.Op.of(
    "GET /memory/journal",
    scope=ops.scope(),
    since=time(),
    until=time(),
    type=ops.words(None, None, "event types"),
    session_id=ops.label(),
    limit=ops.whole(1, MAX_LIST, 50),
    cursor=ops.Field({"type": "string"}, _cursor),
    min_importance=ops.score(),
)

RELATE = ops.Op.of(
    "POST /memory/journal/relations",
    scope=ops.scope(),
    src=ops.text("", required=True),
    dst=ops.text("", required=True),
    relation=ops.text("", required=True),
    weight=ops.score(1.0),
)

EVENT = ops.Op.of("GET /memory/journal/{id}", scope=ops.scope())

HEALTH = ops.Op.of("GET /memory/health", scope=ops.scope())


def _filters(a: dict[str, Any], types: tuple[str, ...], **rest: Any) -> Filters:
    return Filters(
        session_id=a["session_id"], types=types, since=a["since"], until=a["until"], **rest
    )


def listing_args(a: dict[str, Any]) -> tuple[str, Filters, tuple[float, str] | None, int]:
    """(scope, filters, cursor, limit) of a listing: every event, superseded or expired."""
    filters = _filters(
        a,
        a["type"],
        include_superseded=True,
        include_expired=True,
        min_importance=a["min_importance"],
    )
    return a["scope"], filters, a["cursor"], a["limit"]


def recall_args(a: dict[str, Any]) -> tuple[RecallQuery, str, bool]:
    """(query, scope, mark) of a checked recall."""
    from sidecar.journal.recall import RecallQuery

    filters = _filters(a, a["types"], include_superseded=a["include_superseded"])
    return RecallQuery(a["query"], a["k"], filters, a["walk"], a["ranking"]), a["scope"], a["mark"]


def recall_query(body: dict[str, Any]) -> tuple[RecallQuery, str, bool]:
    """A recall request checked (shared by HTTP, MCP and the lead's crew address)."""
    return recall_args(RECALL.parse(body))
