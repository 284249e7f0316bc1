"""What an event is: its fields and limits, the id and timestamps the sidecar gives it,
its base importance and whether it is worth a vector.

Everything here is checked before a byte reaches the disk, so a batch with one bad
event writes nothing, and the error names the event and the field.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sidecar.errors import ApiError, check_label, json_type

MAX_BATCH = 500
MAX_SUMMARY_CHARS = 2000
MAX_PAYLOAD_BYTES = 16 * 1024  # as compact JSON
MAX_TYPE_CHARS = 64
SEVERITIES = ("info", "warn", "error")
PRIORITY_FLOORS = {"pin": 0.80, "high": 0.85, "permanent": 0.95}
INPUT_FIELDS = (
    "type",
    "summary",
    "severity",
    "payload",
    "ts",
    "session_id",
    "source",
    "agent_id",
    "importance",
    "priority",
    "valid_until",
    "supersedes",
    "refs",
    "user_id",
    "workspace_id",
)
MAX_WHO_CHARS = 256  # a user_id or workspace_id, as the operator model takes them
_TYPE = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
FUTURE_SLACK = timedelta(days=1)  # clocks disagree; an event a day ahead is a mistake

# Base importance (0-1) before recency and reinforcement. Escalations, regressions,
# denials and corrections are what the next similar task most needs to know; routine
# info seeds 0.5; high-volume telemetry barely registers.
TYPE_BASE = {
    "peer.escalation": 0.85,
    "eval.regression_detected": 0.85,
    "user.correction": 0.8,
    "approval.denied": 0.75,
    "summary.generated": 0.7,
    "memory.consolidated": 0.7,
    "keeper.decision": 0.6,
    "mission.status_change": 0.55,
    "exec.output_chunk": 0.1,
    "container.metrics": 0.1,
}
SEVERITY_BASE = {"info": 0.5, "warn": 0.65, "error": 0.75}
LOW_SIGNAL_BASE = 0.1  # network.*

# The selective embedding policy: high-volume, low-signal types would drown the vector
# space, so only these get vectors (and anything tagged refs.episodic).
ALWAYS_EMBED = frozenset(
    {
        "peer.escalation",
        "summary.generated",
        "memory.consolidated",
        "approval.denied",
        "eval.regression_detected",
        "user.correction",
    }
)
EMBED_AT_WARN = frozenset({"keeper.decision", "mission.status_change"})
NEVER_EMBED = frozenset({"exec.output_chunk", "container.metrics"})


def low_signal(event_type: str) -> bool:
    return event_type in NEVER_EMBED or event_type.startswith("network.")


def base_importance(event_type: str, severity: str) -> float:
    if low_signal(event_type):
        return TYPE_BASE.get(event_type, LOW_SIGNAL_BASE)
    return max(TYPE_BASE.get(event_type, 0.0), SEVERITY_BASE[severity])


def should_embed(event: dict[str, Any]) -> bool:
    """The reference policy by type and severity, any error outside the telemetry types,
    and whatever an operator tagged ``refs.episodic``."""
    refs = event.get("refs")
    if isinstance(refs, dict) and refs.get("episodic") is True:
        return True
    kind, severity = event.get("type", ""), event.get("severity", "info")
    if low_signal(kind):
        return False
    if kind in ALWAYS_EMBED:
        return True
    if kind in EMBED_AT_WARN:
        return severity in ("warn", "error")
    return severity == "error"


# -- ids and time -------------------------------------------------------------------

_uuid_lock = threading.Lock()
_last_uuid = (0, 0)


def uuid7() -> str:
    """A time-ordered UUID (RFC 9562 v7): 48 bits of Unix ms, then a counter within the
    millisecond seeded at random, so ids sort in the order they were issued."""
    global _last_uuid
    with _uuid_lock:
        ms = time.time_ns() // 1_000_000
        last_ms, last_seq = _last_uuid
        if ms <= last_ms:
            ms, seq = last_ms, last_seq + 1
            if seq >= 1 << 12:  # 4,096 ids in one millisecond: borrow the next one
                ms, seq = ms + 1, random.getrandbits(6)
        else:
            seq = random.getrandbits(10)
        _last_uuid = (ms, seq)
    tail = random.getrandbits(62)  # ids need to be unique, not secret
    value = (ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | tail
    return str(uuid.UUID(int=value))


def iso(ts: float) -> str:
    """Unix time as ISO 8601 UTC with milliseconds: what the files and answers hold."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()  # the last ``iso`` can write


def utc_seconds(text: str) -> float:
    """An ISO 8601 timestamp with a zone (``Z`` or an offset) as Unix time: the one way
    every timestamp is read, from a request or a file. ``ValueError`` for one without a
    zone, or that has no UTC time ``iso`` can write (before 1970, or past 9999 once its
    offset is applied, as ``9999-12-31T23:59:59-23:59`` is)."""
    parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError("it has no time zone")
    try:
        ts = parsed.astimezone(UTC).timestamp()
    except OverflowError:
        ts = math.inf
    if not 0 <= ts <= LATEST:
        raise ValueError("it is not between 1970 and 9999 in UTC")
    return ts


def epoch(value: object) -> float | None:
    """A timestamp from a line on disk as Unix time; None if absent or not one."""
    if not isinstance(value, str):
        return None
    try:
        return utc_seconds(value)
    except ValueError:
        return None


def parse_time(value: object, name: str, where: str = "") -> float:
    """A timestamp from a request as Unix time; a 400 naming the field if it is not one."""
    if not isinstance(value, str):
        raise ApiError(
            400,
            f"bad_{name}",
            f"{where}'{name}' must be an ISO 8601 string, not {json_type(value)}",
        )
    try:
        return utc_seconds(value)
    except ValueError as exc:
        why = str(exc) if str(exc).startswith("it ") else "it is not an ISO 8601 timestamp"
        hint = f", e.g. {value[:19]}Z for UTC" if why == "it has no time zone" else ""
        raise ApiError(400, f"bad_{name}", f"{where}'{name}' {value[:40]!r}: {why}{hint}") from None


# -- checking input -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewEvent:
    """A checked event, ready to be written: ``record`` is its journal line."""

    record: dict[str, Any]
    embeddable: bool
    # The operator it names, (user_id, workspace_id): never written, only their key is
    # (``operator``, set by ``hooks.stamp`` before the event is written).
    who: tuple[str, str] | None = None


def _label(raw: dict[str, Any], name: str, default: str | None, where: str) -> str | None:
    value = raw.get(name, default)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(
            400, f"bad_{name}", f"{where}'{name}' must be a string, not {json_type(value)}"
        )
    return check_label(value, name, where)


def payload_text(payload: dict[str, Any]) -> str:
    """The payload's words for the sparse index and the scanner: keys and string values,
    one a line. Joined on one line, a value read as the tail of its key's sentence ("text
    Ignore all previous instructions"), which the scanner takes for a mention, not an order."""
    parts: list[str] = []
    stack: list[Any] = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                parts.append(str(key))
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            parts.append(item)
        elif item is not None and not isinstance(item, bool):
            parts.append(str(item))
    return "\n".join(parts)


def check_event(
    raw: object, now: float, agent_id: str, where: str = "", stamp: str | None = None
) -> NewEvent:
    """One event from a client, checked and completed; a 400 or 413 naming the field."""
    if not isinstance(raw, dict):
        raise ApiError(
            400, "bad_event", f"{where}an event must be a JSON object, not {json_type(raw)}"
        )
    unknown = sorted(set(raw) - set(INPUT_FIELDS))
    if unknown:
        assigned = [u for u in unknown if u in ("id", "recorded_at", "operator")]
        why = " (the sidecar assigns it)" if assigned else ""
        raise ApiError(
            400,
            "unknown_field",
            f"{where}unknown field(s) {unknown}{why}; allowed: {', '.join(INPUT_FIELDS)}",
        )
    kind = raw.get("type")
    if not isinstance(kind, str) or not kind:
        raise ApiError(
            400, "bad_type", f"{where}'type' is required: a dotted name such as peer.escalation"
        )
    if len(kind) > MAX_TYPE_CHARS or not _TYPE.fullmatch(kind):
        raise ApiError(
            400,
            "bad_type",
            f"{where}'type' must be lowercase dotted words "
            f"(a-z, 0-9, '_', '-'), at most {MAX_TYPE_CHARS} characters: {kind[:80]!r}",
        )
    summary = raw.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ApiError(400, "bad_summary", f"{where}'summary' is required: a non-empty string")
    if len(summary) > MAX_SUMMARY_CHARS:
        raise ApiError(
            413,
            "summary_too_large",
            f"{where}'summary' is {len(summary):,} "
            f"characters; the limit is {MAX_SUMMARY_CHARS:,}: put detail in "
            "'payload'",
        )
    if "\x00" in summary:
        raise ApiError(400, "bad_summary", f"{where}'summary' must not contain NUL characters")
    severity = raw.get("severity", "info")
    if severity not in SEVERITIES:
        raise ApiError(
            400,
            "bad_severity",
            f"{where}'severity' must be one of {', '.join(SEVERITIES)}, not {severity!r}"[:200],
        )
    payload = raw.get("payload", {})
    if not isinstance(payload, dict):
        raise ApiError(
            400, "bad_payload", f"{where}'payload' must be a JSON object, not {json_type(payload)}"
        )
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # NaN or Infinity (an MCP client's JSON may carry them): not JSON
        raise ApiError(
            400, "bad_payload", f"{where}'payload' holds NaN or Infinity, which JSON cannot hold"
        ) from None
    size = len(text.encode())
    if size > MAX_PAYLOAD_BYTES:
        raise ApiError(
            413,
            "payload_too_large",
            f"{where}'payload' is {size:,} bytes as JSON; the limit is {MAX_PAYLOAD_BYTES:,}",
        )
    stamp = stamp or iso(now)  # a batch formats its time of recording once
    if "ts" in raw:
        ts = parse_time(raw["ts"], "ts", where)
        if ts > now + FUTURE_SLACK.total_seconds():
            raise ApiError(400, "bad_ts", f"{where}'ts' is in the future: when did it happen?")
        when = iso(ts)
    else:
        when = stamp
    record: dict[str, Any] = {
        "id": uuid7(),
        "ts": when,
        "recorded_at": stamp,
        "type": kind,
        "severity": severity,
        "summary": summary,
        "payload": payload,
        "session_id": _label(raw, "session_id", "default", where),
        "source": _label(raw, "source", "agent", where),
        "agent_id": _label(raw, "agent_id", agent_id or None, where),
    }
    if "importance" in raw:
        value = raw["importance"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ApiError(
                400, "bad_importance", f"{where}'importance' must be a number from 0 to 1"
            )
        record["importance"] = float(value)
    if "priority" in raw:
        if not isinstance(raw["priority"], str) or raw["priority"] not in PRIORITY_FLOORS:
            raise ApiError(
                400,
                "bad_priority",
                f"{where}'priority' must be one of {', '.join(PRIORITY_FLOORS)}",
            )
        record["priority"] = raw["priority"]
    if "valid_until" in raw:
        record["valid_until"] = iso(parse_time(raw["valid_until"], "valid_until", where))
    if "supersedes" in raw:
        target = raw["supersedes"]
        if not isinstance(target, str) or not _is_uuid(target):
            raise ApiError(
                400, "bad_supersedes", f"{where}'supersedes' must be the id of an earlier event"
            )
        record["supersedes"] = target.lower()
    if "refs" in raw:
        refs = raw["refs"]
        if not isinstance(refs, dict) or not all(isinstance(v, bool) for v in refs.values()):
            raise ApiError(
                400,
                "bad_refs",
                f"{where}'refs' must be an object of flags, e.g. {{\"episodic\": true}}",
            )
        record["refs"] = refs
    return NewEvent(record, should_embed(record), _who(raw, where))


def _who(raw: dict[str, Any], where: str) -> tuple[str, str] | None:
    """The operator an event names by both ids, or None; a 400 for half a name."""
    user, workspace = raw.get("user_id"), raw.get("workspace_id")
    if user is None and workspace is None:
        return None
    for name, value in (("user_id", user), ("workspace_id", workspace)):
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_WHO_CHARS:
            raise ApiError(400, f"bad_{name}", f"{where}'{name}' must be a string of 1 to "
                           f"{MAX_WHO_CHARS} characters: an event names its operator by both "
                           "user_id and workspace_id")  # fmt: skip
    return str(user), str(workspace)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value) == 36


def check_batch(body: dict[str, Any], now: float, agent_id: str) -> list[NewEvent]:
    """One event (the body itself) or ``events``: a batch is checked whole before any write."""
    if "events" in body:
        unknown = sorted(set(body) - {"events"})
        if unknown:  # a misspelt option beside a batch would otherwise pass unnoticed
            raise ApiError(
                400,
                "unknown_field",
                f"unknown field(s) {unknown} beside 'events'; a batch is "
                '{"events": [...]} with an optional "scope"',
            )
        raw = body["events"]
        if not isinstance(raw, list) or not raw:
            raise ApiError(400, "bad_events", "'events' must be a non-empty array of events")
        if len(raw) > MAX_BATCH:
            raise ApiError(
                413,
                "batch_too_large",
                f"{len(raw):,} events in one request; the "
                f"limit is {MAX_BATCH}: send them in batches",
            )
        stamp = iso(now)
        return [check_event(e, now, agent_id, f"events[{i}]: ", stamp) for i, e in enumerate(raw)]
    return [check_event(body, now, agent_id)]
