"""Folding journal lines into the index's tables: events, reference marks, relations.

A line is whatever is on disk: written by this daemon, by an older version, by
another program or by hand. No line may stop the fold. One that is not a record
we know is skipped; a known record with a value that does not fit its field (a
400-digit importance, a timestamp past 9999, a list where a word belongs) keeps
its record with that value read as its default. Either way the line is listed in
the index's problems with file, line and what was wrong, and logged.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from sidecar.disk import jsonl
from sidecar.errors import ApiError, check_label
from sidecar.journal.events import (
    PRIORITY_FLOORS,
    SEVERITIES,
    base_importance,
    epoch,
    payload_text,
    should_embed,
)
from sidecar.journal.index_schema import INSERT_EVENT, INSERTED
from sidecar.journal.links import link_new

log = logging.getLogger(__name__)

BATCH = 500
_RELATIONS = ("similar", "supports", "contradicts")
_VALUES = itemgetter(*INSERTED)  # a row's values in INSERT_EVENT's order


class BadRecord(Exception):
    """A line that is not a record the journal knows: skipped, and listed."""


def apply(conn: sqlite3.Connection, rel: str, lines: Iterable[jsonl.Line], inode: int) -> int:
    """Fold lines that follow what is known of ``rel``; returns events added. Events go in
    by the batch (one statement for the rows, one for their words); other records in order."""
    row = conn.execute("SELECT offset, lines FROM files WHERE path = ?", (rel,)).fetchone()
    end, count = row if row else (0, 0)
    added = 0
    events: list[dict[str, Any]] = []
    for line in lines:
        count += 1
        end = line.end
        error = line.error
        record = line.record
        if record is not None:
            try:
                if record.get("kind", "event") == "event":
                    event, defaults = event_row(rel, count, record)
                    events.append(event)
                else:
                    added += insert_events(conn, events)
                    events = []
                    defaults = fold_record(conn, record)
                if defaults:
                    kept = kept_note(defaults)
                    error = f"{error}; {kept}" if error else kept
            # Beyond the checks: whatever else a line holds costs that line, not the fold.
            except (BadRecord, ValueError, TypeError, ArithmeticError) as exc:
                error = str(exc)[:300]
        if error is not None:
            conn.execute("INSERT INTO problems VALUES (?, ?, ?)", (rel, count, error))
            log.warning("journal line not as written", extra={"file": rel, "line": count,
                                                               "error": error})  # fmt: skip
        if len(events) >= BATCH:
            added += insert_events(conn, events)
            events = []
    added += insert_events(conn, events)
    conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", (rel, end, count, inode))
    return added


def kept_note(defaults: list[str]) -> str:
    """A line's problem when its record was kept with values read as their defaults."""
    return "kept, read as default: " + "; ".join(defaults)


def fold_record(conn: sqlite3.Connection, record: dict[str, Any]) -> list[str]:
    """A record that changes what is known of events: a reference mark, a relation, or
    working entries summarised into one episode. Returns the values read as defaults."""
    kind = record.get("kind")
    if kind == "ref":
        ids, at = record.get("ids"), epoch(record.get("at"))
        if not isinstance(ids, list) or at is None:
            raise BadRecord("ref record needs 'ids' (a list) and 'at'")
        for part in range(0, len(ids), BATCH):
            chunk = list({i for i in ids[part : part + BATCH] if _text(i)})
            conn.execute(
                "UPDATE events SET refs = refs + 1, last_ref = max(coalesce(last_ref, 0), ?) "
                f"WHERE id IN ({','.join('?' * len(chunk))})",
                [at, *chunk],
            )
        return []
    if kind == "relation":
        src, dst, relation = record.get("src"), record.get("dst"), record.get("relation")
        if not (_text(src) and _text(dst) and isinstance(relation, str)):
            raise BadRecord("relation record needs 'src', 'dst' and a known 'relation'")
        if relation not in _RELATIONS:
            raise BadRecord("relation record needs 'src', 'dst' and a known 'relation'")
        weight, defaults = _unit(record.get("weight"), 1.0, "weight", "1.0")
        conn.execute("INSERT OR REPLACE INTO relations VALUES (?, ?, ?, ?)",
                     (src, dst, relation, weight))  # fmt: skip
        return defaults
    if kind == "summarised":  # working entries promoted into one episode: they leave recall
        ids, into = record.get("ids"), record.get("into")
        if not isinstance(ids, list) or not _text(into):
            raise BadRecord("summarised record needs 'ids' (a list) and 'into'")
        for part in range(0, len(ids), BATCH):
            chunk = [i for i in ids[part : part + BATCH] if _text(i)]
            conn.execute(
                "UPDATE events SET superseded_by = ? WHERE superseded_by IS NULL AND id IN "
                f"({','.join('?' * len(chunk))})",
                [into, *chunk],
            )
        return []
    raise BadRecord(f"unknown record kind {str(kind)[:40]!r}")


def insert_events(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
    """Rows from ``event_row``; an id already indexed (a catch-up after our own append) is
    left as it is. Returns how many were new."""
    if not rows:
        return 0
    (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()
    before = conn.total_changes
    conn.executemany(INSERT_EVENT, map(_VALUES, rows))
    added = conn.total_changes - before
    if added:
        conn.execute(
            "INSERT INTO events_fts(rowid, summary, body) SELECT seq, summary, body FROM events "
            "WHERE seq > ?",
            (last,),
        )
        conn.executemany(
            "UPDATE events SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL",
            [(row["id"], row["supersedes"]) for row in rows if row["supersedes"]],
        )
        link_new(conn, last + 1)  # which earlier events these probably update
    return added


def event_row(rel: str, line: int, record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An event line as a row of ``events`` (a value for each of ``INSERTED``), and the
    values read as their defaults."""
    event_id, kind, summary = record.get("id"), record.get("type"), record.get("summary")
    if not (_text(event_id) and _text(kind) and _text(summary)):
        raise BadRecord("event needs string 'id', 'type' and 'summary'")
    defaults: list[str] = []

    def default(name: str, why: str, value: Any, shown: str) -> Any:
        if record.get(name) is not None:  # absent or null (NaN on disk) is no problem
            defaults.append(f"'{name}' {why} (read as {shown})")
        return value

    ts, recorded = epoch(record.get("ts")), epoch(record.get("recorded_at"))
    if ts is None and recorded is None:
        raise BadRecord("event needs 'ts' or 'recorded_at': ISO 8601 with a zone, 1970-9999")
    if ts is None:
        ts = default("ts", "is not a timestamp from 1970 to 9999", recorded, "recorded_at")
    if recorded is None:
        recorded = default("recorded_at", "is not a timestamp from 1970 to 9999", ts, "ts")
    severity = record.get("severity", "info")
    if not isinstance(severity, str) or severity not in SEVERITIES:
        severity = default("severity", "is not info, warn or error", "info", "info")
    payload = record.get("payload", {})
    if not isinstance(payload, dict):
        payload = default("payload", "is not an object", {}, "{}")
    base, bad = _unit(record.get("importance"), None, "importance", "its type's importance")
    defaults += bad
    if base is None:
        base = base_importance(kind, severity)
    priority = record.get("priority")
    if priority is not None and not (isinstance(priority, str) and priority in PRIORITY_FLOORS):
        priority = default("priority", "is not pin, high or permanent", None, "none")
    valid_until = record.get("valid_until")
    if valid_until is not None and (valid_until := epoch(valid_until)) is None:
        default("valid_until", "is not a timestamp from 1970 to 9999", None, "none")
    supersedes = record.get("supersedes")
    if supersedes is not None and not _text(supersedes):
        supersedes = default("supersedes", "is not an event id", None, "none")
    labels = {}
    names = (("session_id", "default"), ("source", None), ("agent_id", None), ("operator", None))
    for name, fallback in names:
        value = record.get(name)
        # What a request may send: 1-128 characters, no control, bidi or invisible ones.
        if value is None:  # absent: its default, with nothing to report or check
            labels[name] = fallback
        elif _label(value):
            labels[name] = value
        else:
            labels[name] = default(name, "is not a label (1 to 128 printable characters)",
                                   fallback, str(fallback).lower())  # fmt: skip
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    body = payload_text(payload)
    if not (_text(text) and _text(body)):
        raise BadRecord("'payload' holds text that is not Unicode (a lone surrogate)")
    trimmed = record.get("trimmed")
    if trimmed is not None:
        size = trimmed.get("payload_bytes") if isinstance(trimmed, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and 0 <= size < 1 << 62:
            trimmed = size
        else:  # the payload is an excerpt all the same: only its former size is unknown
            trimmed = -1
            defaults.append("'trimmed' is not {\"payload_bytes\": N} (read as trimmed, "
                            "its former size unknown)")  # fmt: skip
    embed = should_embed({"type": kind, "severity": severity, "refs": record.get("refs")})
    row = {
        "id": event_id, "ts": ts, "recorded_at": recorded, "type": kind, "severity": severity,
        "summary": summary, "payload": text, "body": body, **labels, "base": base,
        "floor": PRIORITY_FLOORS[priority] if priority else 0.0, "priority": priority,
        "valid_until": valid_until, "supersedes": supersedes, "embeddable": int(embed),
        "file": rel, "line": line, "trimmed": trimmed,
    }  # fmt: skip
    return row, defaults


def _unit(value: object, fallback: float | None, name: str, shown: str) -> tuple[Any, list[str]]:
    """A number from 0 to 1 as a float, else ``fallback`` (and why, unless it is absent)."""
    if value is None:
        return fallback, []
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value), []  # compared first: float() of a 400-digit integer overflows
    return fallback, [f"'{name}' is not a number from 0 to 1 (read as {shown})"]


def _label(value: object) -> bool:
    try:
        return _text(value) and check_label(str(value), "label") is not None
    except ApiError:
        return False


def _text(value: object) -> bool:
    """A string SQLite can store: JSON may carry a lone surrogate (``\\ud800``) no UTF-8
    encoder takes, which would fail the whole batch it is in."""
    if not isinstance(value, str):
        return False
    if value.isascii():  # no surrogate, and no copy to find out
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True
