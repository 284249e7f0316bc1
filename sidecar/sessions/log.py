"""Where a session becomes durable: ``sessions/log.jsonl`` in the agent tier, append-only.

One JSON object a line, never edited:

    {"kind": "started", "session_id", "at", "agent_id"?, "operator"?, "task"?}
    {"kind": "step", "session_id", "step", "at", ...what it did}
    {"kind": "ended", "session_id", "at", "summary_id", "events", "how"}

``step`` is one of ``STEPS``: each of a session's end steps is written once it is done,
so a daemon killed between two steps runs only the ones not written after its restart.
The open sessions are what the log folds to; nothing else holds them. ``operator`` is
the operator's non-reversible key (the name of their model file), never the raw ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl
from sidecar.errors import ApiError, check_label
from sidecar.journal.events import epoch

LOG = "sessions/log.jsonl"
STEPS = ("reinforced", "promoted", "summarised")  # in the order an end runs them
KINDS = ("started", "step", "ended")


@dataclass(slots=True)
class Session:
    session_id: str
    started_at: float
    last_seen: float  # the last line of it, or its last event: idleness counts from here
    agent_id: str | None = None
    operator: str | None = None
    task: str | None = None
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "started_at": self.started_at,
                "agent_id": self.agent_id, "operator": self.operator,
                "steps": sorted(self.steps), "ended": self.ended is not None}  # fmt: skip


def encode(records: list[dict[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
    )


def append(root: Path, records: list[dict[str, Any]]) -> None:
    """Every record durably, as one write (blocking)."""
    (root / "sessions").mkdir(exist_ok=True)
    jsonl.append(root, LOG, encode(records))


def fold(root: Path) -> tuple[dict[str, Session], list[str]]:
    """Every session the log holds, and each line that does not fit (skipped, and said):
    a hand edit or a torn write never stops the others from being read (blocking)."""
    sessions: dict[str, Session] = {}
    problems: list[str] = []
    try:
        lines = list(jsonl.read_lines(root, LOG))
    except FileNotFoundError:
        return sessions, problems
    for line in lines:
        why = line.error or _apply(sessions, line.record or {})
        if why:
            problems.append(f"{LOG} line {line.number}: {why}; skipped")
    return sessions, problems


def _apply(sessions: dict[str, Session], r: dict[str, Any]) -> str | None:
    """Fold one record in; why it does not fit, if it does not."""
    kind, sid, at = r.get("kind"), r.get("session_id"), epoch(r.get("at"))
    if kind not in KINDS:
        return f"'kind' must be one of {', '.join(KINDS)}"
    if not isinstance(sid, str) or _bad_label(sid):
        return "'session_id' must be a printable label"
    if at is None:
        return "'at' must be an ISO 8601 time"
    session = sessions.get(sid)
    if kind == "started":
        if session is None:
            task = r.get("task") if isinstance(r.get("task"), str) else None
            sessions[sid] = Session(sid, at, at, _label(r.get("agent_id")),
                                    _label(r.get("operator")), task)  # fmt: skip
        return None
    if session is None:
        return f"session {sid!r} has no 'started' line before it"
    session.last_seen = max(session.last_seen, at)
    if kind == "step":
        if r.get("step") not in STEPS:
            return f"'step' must be one of {', '.join(STEPS)}"
        session.steps.setdefault(r["step"], r)
    elif session.ended is None:
        session.ended = r
    return None


def _label(value: object) -> str | None:
    return value if isinstance(value, str) and not _bad_label(value) else None


def _bad_label(value: str) -> bool:
    try:
        check_label(value, "label")
    except ApiError:
        return True
    return False
