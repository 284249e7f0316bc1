"""Months of journal history laid down in the past, for the retention tests.

Day files are written directly, as an older daemon would have left them: events with
past ``ts`` and ``recorded_at``, some pinned (``priority: pin``), some important by type
(``peer.escalation``), some recalled recently (a ``ref`` record in a recent day file),
one superseded by a later event, a relation between two old events, and ordinary
events with a large payload. Each event's summary carries a word of its own
(``tok00042``) so recall can find exactly it.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sidecar.disk.jsonl import parse_line
from sidecar.journal.events import iso

DAY = 86400.0
WORDS = ("deploy", "runner", "cache", "retry", "vpn", "token", "schema", "queue", "build")


@dataclass
class History:
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> record
    token: dict[str, str] = field(default_factory=dict)  # id -> its word
    pinned: list[str] = field(default_factory=list)
    important: list[str] = field(default_factory=list)
    referenced: list[str] = field(default_factory=list)
    ordinary: list[str] = field(default_factory=list)  # old, large, nothing keeps them whole
    recent: list[str] = field(default_factory=list)  # inside the window
    superseded: tuple[str, str] = ("", "")  # (old, the event that supersedes it)
    related: tuple[str, str] = ("", "")
    files: dict[str, bytes] = field(default_factory=dict)  # rel -> bytes as laid down

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.files.values())


def _line(record: dict[str, Any]) -> bytes:
    """As another program may write it: NaN stays NaN."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def whole_payload(line: bytes) -> str:
    """An event line's payload as compact JSON, read as the daemon reads it (NaN: null)."""
    record, _ = parse_line(line.rstrip(b"\n"))
    assert record is not None
    return json.dumps(record["payload"], ensure_ascii=False, separators=(",", ":"))


def lay_down(
    root: Path, now: float, days: int, window_days: int, per_day: int = 2, big: int = 8000
) -> History:
    """``days`` days of history ending yesterday; ``window_days`` is the retention window
    the tests run with (what is older is due, what is newer is recent)."""
    rng = random.Random(31)
    h = History()
    by_day: dict[str, list[dict[str, Any]]] = {}
    n = 0
    for back in range(days, 0, -1):
        if back == window_days:
            continue  # the day the window ends on: neither clearly due nor clearly kept
        day_start = now - back * DAY
        day = datetime.fromtimestamp(day_start, UTC).date().isoformat()
        for j in range(per_day):
            t = day_start + j * 60
            old = back > window_days
            kind, severity, extra = "task.step", "info", {}
            role = n % 20
            size = 800
            if old and role == 0:
                extra = {"priority": "pin"}
                h_list = h.pinned
            elif old and role == 1:
                kind = "peer.escalation"
                h_list = h.important
            elif old and role == 2:
                h_list = h.referenced
            elif old:
                h_list, size = h.ordinary, big
            else:
                h_list, size = h.recent, big // 4
            event_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            token = f"tok{n:05d}"
            words = " ".join(rng.choice(WORDS) for _ in range(size // 7))
            record = {
                "id": event_id, "ts": iso(t), "recorded_at": iso(t + 1), "type": kind,
                "severity": severity, "summary": f"step {token} of the {rng.choice(WORDS)} job",
                "payload": {"log": words[:size], "n": n}, "session_id": f"s{back}",
                "source": "agent", "agent_id": "a1", **extra,
            }  # fmt: skip
            h.events[event_id] = record
            h.token[event_id] = token
            h_list.append(event_id)
            by_day.setdefault(day, []).append(record)
            n += 1
    # One old ordinary event superseded by a later old one; two old ones related.
    first, second, third = h.ordinary[0], h.ordinary[1], h.ordinary[2]
    h.events[second]["supersedes"] = first
    h.superseded = (first, second)
    h.related = (second, third)
    # Values another program wrote: a severity read as info, a NaN read as null (problems).
    h.events[h.ordinary[3]]["severity"] = "fatal"
    h.events[h.ordinary[4]]["payload"]["ratio"] = float("nan")
    relation = {"kind": "relation", "src": second, "dst": third, "relation": "supports",
                "weight": 1.0, "at": h.events[second]["recorded_at"]}  # fmt: skip
    # Recall used the referenced events five days ago: a ref record in that day's file.
    recent_day = datetime.fromtimestamp(now - 5 * DAY, UTC).date().isoformat()
    by_day[recent_day].append({"kind": "ref", "ids": h.referenced, "at": iso(now - 5 * DAY)})
    (root / "journal").mkdir(parents=True, exist_ok=True)
    for day, records in by_day.items():
        rel = f"journal/{day}.jsonl"
        lines = [_line(r) + (_line(relation) if r.get("id") == second else b"") for r in records]
        data = b"".join(lines)
        (root / rel).write_bytes(data)
        h.files[rel] = data
    return h


def index_state(conn: Any) -> dict[str, Any]:
    """What a rebuild must give again: every event's columns but its sequence number and
    the scanner's verdict (set later, in the background), the relations, the files read."""
    cols = [c[1] for c in conn.execute("PRAGMA table_info(events)") if c[1] not in ("seq", "flag")]
    events = conn.execute(f"SELECT {', '.join(cols)} FROM events ORDER BY id").fetchall()
    relations = conn.execute("SELECT * FROM relations ORDER BY src, dst").fetchall()
    files = conn.execute("SELECT path, offset, lines FROM files ORDER BY path").fetchall()
    problems = conn.execute("SELECT * FROM problems ORDER BY file, line").fetchall()
    words = conn.execute(
        "SELECT e.id FROM events_fts f JOIN events e ON e.seq = f.rowid "
        "WHERE events_fts MATCH 'excerpt' ORDER BY e.id"
    ).fetchall()
    return {"events": events, "relations": relations, "files": files, "fts": words,
            "problems": problems}  # fmt: skip
