"""The journal's derived index: ``journal.sqlite`` beside the tier's notes index.

It folds the day files into tables: events (with their reference counts and who
superseded them), an FTS5 mirror of their words, relations, vectors, and how far
each file has been read. Delete it and it is rebuilt from the files; vectors and
health snapshots are kept across a rebuild (vectors are keyed by event id and
model, so they stay right; snapshots cannot be derived at all).

One writer (the tier's journal thread) and a read-only connection per reader
thread, in WAL mode, as for the notes index (``sidecar.index.sqlite.Database``).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from itertools import starmap
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl
from sidecar.index.sqlite import Database, is_query_error
from sidecar.index.store import QuerySyntaxError
from sidecar.journal import log as journal_log
from sidecar.journal.fold import BATCH, apply
from sidecar.journal.index_schema import (
    DERIVED,
    PROBE,
    REREAD_FROM,
    SCHEMA,
    SCHEMA_VERSION,
    UPDATES,
    UPGRADE,
)
from sidecar.journal.ranking import importance_now

log = logging.getLogger(__name__)

FILENAME = "journal.sqlite"
SUMMARY_WEIGHT, BODY_WEIGHT = 2.0, 1.0  # a word in the summary says more than one in the payload


@dataclass(frozen=True, slots=True)
class Row:
    """An event as the index holds it, with what changed about it since."""

    seq: int
    id: str
    ts: float
    recorded_at: float
    type: str
    severity: str
    summary: str
    payload: str
    session_id: str
    source: str | None
    agent_id: str | None
    operator: str | None
    base: float
    floor: float
    priority: str | None
    valid_until: float | None
    supersedes: str | None
    superseded_by: str | None
    embeddable: bool
    refs: int
    last_ref: float | None
    trimmed: int | None  # the payload's bytes before retention cut it (-1: not known)
    flag: str | None

    def to_json(self) -> dict[str, Any]:
        from sidecar.journal.events import iso

        body: dict[str, Any] = {
            "id": self.id,
            "ts": iso(self.ts),
            "recorded_at": iso(self.recorded_at),
            "type": self.type,
            "severity": self.severity,
            "summary": self.summary,
            "payload": json.loads(self.payload),
            "session_id": self.session_id,
            "source": self.source,
            "agent_id": self.agent_id,
            "reference_count": self.refs,
            "last_referenced_at": iso(self.last_ref) if self.last_ref else None,
            "embeddable": bool(self.embeddable),
        }
        for name in ("operator", "priority", "supersedes", "superseded_by"):
            if getattr(self, name):
                body[name] = getattr(self, name)
        if self.valid_until is not None:
            body["valid_until"] = iso(self.valid_until)
        if self.trimmed is not None:  # the payload is an excerpt; the whole is archived
            body["trimmed"] = True
            body["payload_bytes"] = self.trimmed if self.trimmed >= 0 else None
        return body


EVENT_COLUMNS = ", ".join(f"e.{f.name} AS {f.name}" for f in fields(Row))


def _events(conn: sqlite3.Connection, sql: str, args: Sequence[Any]) -> list[Row]:
    """Rows of ``EVENT_COLUMNS``, which lists ``Row``'s fields in order: the values go in
    by position, with no dict built for each row."""
    return list(starmap(Row, conn.execute(sql, args)))


@dataclass(frozen=True, slots=True, kw_only=True)  # by name: fields get added between others
class Filters:
    session_id: str | None = None
    operator: str | None = None  # the operator's key: their events only
    types: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    include_superseded: bool = False
    include_expired: bool = False
    min_importance: float | None = None  # the crew's high-value entries only

    def sql(self, now: float) -> tuple[str, list[Any]]:
        """A WHERE clause over ``e`` (events) and its arguments."""
        where, args = ["1"], []  # type: ignore[var-annotated]
        if self.session_id is not None:
            where.append("e.session_id = ?")
            args.append(self.session_id)
        if self.operator is not None:
            where.append("e.operator = ?")
            args.append(self.operator)
        if self.types:
            where.append(f"e.type IN ({','.join('?' * len(self.types))})")
            args += list(self.types)
        if self.since is not None:
            where.append("e.ts >= ?")
            args.append(self.since)
        if self.until is not None:
            where.append("e.ts <= ?")
            args.append(self.until)
        if not self.include_superseded:
            where.append("e.superseded_by IS NULL")
        if not self.include_expired:
            where.append("(e.valid_until IS NULL OR e.valid_until > ?)")
            args.append(now)
        if self.min_importance is not None:  # ``ranking.importance_now``, run by SQLite
            where.append("importance(e.base, e.floor, ? - e.ts, e.refs) >= ?")
            args += [now, self.min_importance]
        return " AND ".join(where), args


class JournalIndex:
    """One writer (the tier's journal thread) and a reader per thread (``Database``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = Database(
            path,
            SCHEMA,
            SCHEMA_VERSION,
            PROBE,
            # Same tables: ``rebuild`` re-reads the lines, and keeps the vectors and health.
            keep=REREAD_FROM,
            functions=[("importance", 4, importance_now)],
            what="journal index",
            source="the journal",
        )
        # The tables were (re)created, or are an older version's: every file must be read again.
        self.rebuilt = self.db.found != SCHEMA_VERSION
        if self.db.found in REREAD_FROM:
            columns = {c[1] for c in self.db.writer.execute("PRAGMA table_info(events)")}
            for column, statements in UPGRADE.items():
                if column not in columns:
                    for statement in statements:
                        self.db.writer.execute(statement)
            self.db.writer.executescript(UPDATES)

    def reader(self) -> sqlite3.Connection:
        return self.db.reader()

    def close(self) -> None:
        self.db.close()

    # -- folding the files in (writer thread) ------------------------------------------

    def apply(self, rel: str, lines: Iterable[jsonl.Line], inode: int) -> int:
        """Fold lines appended to one file, in one transaction; returns events added."""
        with self.db.transaction() as conn:
            return apply(conn, rel, lines, inode)

    def apply_group(self, groups: list[tuple[str, list[jsonl.Line], int]]) -> list[int]:
        """A commit group's appends (file, lines, inode), in one transaction."""
        with self.db.transaction() as conn:
            return [apply(conn, rel, lines, inode) for rel, lines, inode in groups]

    def files(self) -> dict[str, tuple[int, int, int]]:
        """What has been read of each file: (offset, lines, inode)."""
        rows = self.db.writer.execute("SELECT path, offset, lines, inode FROM files")
        return {path: (offset, lines, inode) for path, offset, lines, inode in rows}

    def rebuild(self, root: Path) -> int:
        """Every journal file read again from the start, in one transaction: readers see
        the old index until the new one is complete. Returns the events indexed."""
        total = 0
        with self.db.transaction() as conn:
            for table in DERIVED:
                if table == "events_fts":
                    conn.execute("INSERT INTO events_fts(events_fts) VALUES ('delete-all')")
                else:
                    conn.execute(f"DELETE FROM {table}")
            for rel in journal_log.journal_files(root):
                try:
                    inode = os.lstat(root / rel).st_ino
                    total += apply(conn, rel, jsonl.read_lines(root, rel), inode)
                except (OSError, ValueError) as exc:
                    log.error("journal file not indexed", extra={"file": rel, "error": str(exc)})
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # with the lines it read
        self.rebuilt = False
        self.optimize()
        return total

    def catch_up(self, root: Path, rel: str) -> int:
        """Read what was appended to ``rel`` since it was last read."""
        offset, lines, inode = self.files().get(rel, (0, 0, 0))
        st = os.lstat(root / rel)
        if inode and (st.st_ino != inode or st.st_size < offset):
            raise ReplacedFile(f"{rel} was replaced or cut since it was indexed")
        if st.st_size == offset:
            return 0
        return self.apply(rel, jsonl.read_lines(root, rel, offset, lines + 1), st.st_ino)

    def day_events(self, rel: str) -> list[tuple[Any, ...]]:
        """(line, id, ts, recorded_at, base, floor, last_ref, trimmed) of the events ``rel``
        holds, for retention (writer thread: what it sees is what it will change)."""
        return self.db.writer.execute(
            "SELECT line, id, ts, recorded_at, base, floor, last_ref, trimmed FROM events "
            "WHERE file = ? ORDER BY line",
            (rel,),
        ).fetchall()

    def retrim(self, rel: str, rows: list[dict[str, Any]], size: int, inode: int) -> None:
        """``rel`` was replaced by its trimmed version: each row (``fold.event_row`` of a
        trimmed line, with its ``problem``) takes its new payload, words and size, and its
        line's problem is the new line's, in one transaction with the file's new size and
        inode, so the index stays what a rebuild would make."""
        with self.db.transaction() as conn:
            for row in rows:
                old = conn.execute(
                    "SELECT seq, summary, body FROM events WHERE id = ?", (row["id"],)
                ).fetchone()
                if old is None:
                    continue
                conn.execute(
                    "INSERT INTO events_fts(events_fts, rowid, summary, body) "
                    "VALUES ('delete', ?, ?, ?)",
                    old,
                )
                conn.execute(
                    "UPDATE events SET payload = ?, body = ?, trimmed = ? WHERE seq = ?",
                    (row["payload"], row["body"], row["trimmed"], old[0]),
                )
                conn.execute(
                    "INSERT INTO events_fts(rowid, summary, body) VALUES (?, ?, ?)",
                    (old[0], old[1], row["body"]),
                )
                conn.execute("DELETE FROM problems WHERE file = ? AND line = ?", (rel, row["line"]))
                if row["problem"] is not None:
                    conn.execute("INSERT INTO problems VALUES (?, ?, ?)",
                                 (rel, row["line"], row["problem"]))  # fmt: skip
            conn.execute(
                "UPDATE files SET offset = ?, inode = ? WHERE path = ?", (size, inode, rel)
            )

    def add_vectors(self, model: str, items: list[tuple[str, bytes]]) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", [(i, model, v) for i, v in items]
            )

    def add_snapshot(self, day: str, body: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO health VALUES (?, ?)", (day, json.dumps(body)))

    def optimize(self) -> None:
        self.db.writer.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")

    # -- reading (any thread) ------------------------------------------------------------

    def fetch(
        self, column: str, keys: Iterable[Any], filters: Filters | None = None, now: float = 0.0
    ) -> list[Row]:
        """Events whose ``column`` (seq or id) is in ``keys`` and that pass ``filters``."""
        assert column in ("seq", "id")
        where, args = filters.sql(now) if filters is not None else ("1", [])
        conn, wanted, out = self.reader(), list(keys), []
        for i in range(0, len(wanted), BATCH):
            part = wanted[i : i + BATCH]
            sql = (
                f"SELECT {EVENT_COLUMNS} FROM events e WHERE e.{column} IN "
                f"({','.join('?' * len(part))}) AND {where}"
            )
            out += _events(conn, sql, [*part, *args])
        return out

    def sparse(
        self, match: str, filters: Filters, now: float, limit: int
    ) -> list[tuple[int, float]]:
        """(seq, BM25 score, higher is better) of the best matches that pass the filters.

        FTS5 ranks its own matches fastest alone, so the best ``4 x limit`` are taken
        first and filtered; only if too few pass is the filtered query run over all."""
        where, args = filters.sql(now)
        conn = self.reader()
        weights = f"{SUMMARY_WEIGHT}, {BODY_WEIGHT}"
        try:
            top = conn.execute(
                f"SELECT rowid, -bm25(events_fts, {weights}) AS score FROM events_fts "
                "WHERE events_fts MATCH ? ORDER BY score DESC LIMIT ?",
                (match, 4 * limit),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if not is_query_error(exc):
                raise
            raise QuerySyntaxError(str(exc)) from exc
        if not top:
            return []
        marks = ",".join("?" * len(top))
        passed = {
            seq
            for (seq,) in conn.execute(
                f"SELECT e.seq FROM events e WHERE e.seq IN ({marks}) AND {where}",
                [*(seq for seq, _ in top), *args],
            )
        }
        hits = [(seq, score) for seq, score in top if seq in passed]
        if len(hits) >= limit or len(top) < 4 * limit:
            return hits[:limit]
        sql = (
            f"SELECT e.seq, -bm25(events_fts, {weights}) AS score "
            "FROM events_fts JOIN events e ON e.seq = events_fts.rowid "
            f"WHERE events_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
        return list(conn.execute(sql, [match, *args, limit]))

    def to_scan(self, limit: int) -> list[tuple[int, str]]:
        """(seq, text) of events the scanner has not read yet, oldest first."""
        rows = self.reader().execute(
            "SELECT seq, summary, body FROM events WHERE flag IS NULL ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(seq, f"{summary}\n{body}") for seq, summary, body in rows]

    def set_flags(self, verdicts: list[tuple[str, int]]) -> None:
        """(verdict, seq) pairs: '' for clean text, the finding as JSON otherwise."""
        with self.db.transaction() as conn:
            conn.executemany("UPDATE events SET flag = ? WHERE seq = ?", verdicts)

    def listing(
        self, filters: Filters, now: float, after: tuple[float, str] | None, limit: int
    ) -> list[Row]:
        where, args = filters.sql(now)
        if after is not None:
            where += " AND (e.ts, e.id) > (?, ?)"
            args += list(after)
        sql = f"SELECT {EVENT_COLUMNS} FROM events e WHERE {where} ORDER BY e.ts, e.id LIMIT ?"
        return _events(self.reader(), sql, [*args, limit])

    def latest(self, limit: int, embeddable: bool = False, operator: str | None = None
               ) -> list[Row]:  # fmt: skip
        """The events last recorded, newest first (what consolidation may not have seen);
        ``embeddable``: only those the embedding policy takes, the episodic ones;
        ``operator``: only that operator's (by their key)."""
        where = " AND e.embeddable = 1" if embeddable else ""
        where += " AND e.operator = ?" if operator is not None else ""
        sql = (f"SELECT {EVENT_COLUMNS} FROM events e WHERE 1{where} "
               "ORDER BY e.recorded_at DESC, e.seq DESC LIMIT ?")  # fmt: skip
        args = [operator] if operator is not None else []
        return _events(self.reader(), sql, (*args, limit))

    def neighbours(self, ids: Iterable[str]) -> dict[str, list[tuple[str, str, float]]]:
        """One hop along relations, either direction: id -> [(other id, relation, weight)]."""
        conn = self.reader()
        wanted = list(ids)
        out: dict[str, list[tuple[str, str, float]]] = {i: [] for i in wanted}
        marks = ",".join("?" * len(wanted))
        if not wanted:
            return out
        for src, dst, relation, weight in conn.execute(
            f"SELECT src, dst, relation, weight FROM relations WHERE src IN ({marks}) "
            f"OR dst IN ({marks})",
            [*wanted, *wanted],
        ):
            if src in out:
                out[src].append((dst, relation, weight))
            if dst in out:
                out[dst].append((src, relation, weight))
        return out

    def relations_of(self, event_id: str) -> list[tuple[str, str, str, float]]:
        """Every relation touching the event, which way it points said:
        [(relation, "out" | "in", other id, weight)], its own links first."""
        rows = self.reader().execute(
            "SELECT src, dst, relation, weight FROM relations WHERE src = ? OR dst = ? "
            "ORDER BY src != ?, relation, src, dst",
            (event_id, event_id, event_id),
        )
        return [(rel, "out" if src == event_id else "in", dst if src == event_id else src, w)
                for src, dst, rel, w in rows]  # fmt: skip

    def vectors(self, model: str) -> list[tuple[int, str, bytes]]:
        """(seq, id, vector) of every embeddable event that has one for ``model``."""
        return list(
            self.reader().execute(
                "SELECT e.seq, e.id, v.vec FROM events e "
                "JOIN vectors v ON v.id = e.id AND v.model = ? "
                "WHERE e.embeddable = 1 ORDER BY e.seq",
                (model,),
            )
        )

    def to_embed(self, model: str, after: int, limit: int) -> list[tuple[int, str, str]]:
        """(seq, id, text) of embeddable events with no vector for ``model``, in order."""
        rows = self.reader().execute(
            "SELECT e.seq, e.id, e.type, e.summary, e.body FROM events e "
            "LEFT JOIN vectors v ON v.id = e.id AND v.model = ? "
            "WHERE e.embeddable = 1 AND e.seq > ? AND v.id IS NULL ORDER BY e.seq LIMIT ?",
            (model, after, limit),
        )
        return [(seq, i, embed_text(kind, summary, body)) for seq, i, kind, summary, body in rows]

    def count_since(self, session_id: str, since: float) -> int:
        return int(
            self.reader()
            .execute(
                "SELECT count(*) FROM events WHERE session_id = ? AND recorded_at > ?",
                (session_id, since),
            )
            .fetchone()[0]
        )

    def last_recorded(self, kind: str) -> float:
        """When the latest event of type ``kind`` was recorded (0: never)."""
        row = (
            self.reader()
            .execute("SELECT max(recorded_at) FROM events WHERE type = ?", (kind,))
            .fetchone()
        )
        return float(row[0] or 0.0)

    def has_links(self, event_id: str, relation: str) -> bool:
        return (
            self.db.writer.execute(
                "SELECT 1 FROM relations WHERE src = ? AND relation = ? LIMIT 1",
                (event_id, relation),
            ).fetchone()
            is not None
        )

    def stats(self) -> dict[str, Any]:
        conn = self.reader()
        events, embeddable, newest = conn.execute(
            "SELECT count(*), coalesce(sum(embeddable), 0), max(recorded_at) FROM events"
        ).fetchone()
        problems = [
            {"file": f, "line": n, "error": e}
            for f, n, e in conn.execute(
                "SELECT file, line, error FROM problems ORDER BY file, line LIMIT 50"
            )
        ]
        total_problems = conn.execute("SELECT count(*) FROM problems").fetchone()[0]
        size = conn.execute("SELECT coalesce(sum(offset), 0) FROM files").fetchone()[0]
        (unscanned,) = conn.execute("SELECT count(*) FROM events WHERE flag IS NULL").fetchone()
        return {
            "events": events,
            "embeddable": embeddable,
            "newest": newest,
            "unparsed_lines": total_problems,
            "problems": problems,
            "bytes": size,
            "unscanned": unscanned,
        }

    def snapshots(self, days: int) -> list[dict[str, Any]]:
        rows = self.reader().execute(
            "SELECT day, body FROM health ORDER BY day DESC LIMIT ?", (days,)
        )
        return [{"day": day, **json.loads(body)} for day, body in rows][::-1]


def embed_text(kind: str, summary: str, body: str) -> str:
    """What an event's vector is made from: its type in words, its summary, its payload."""
    return f"{kind.replace('.', ' ').replace('_', ' ')}: {summary}\n{body}"[:2000]


class ReplacedFile(Exception):
    """A journal file is not the one that was indexed (replaced, or cut shorter)."""
