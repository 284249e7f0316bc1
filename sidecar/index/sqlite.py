"""What every SQLite index of the daemon shares: one file, its connections and pragmas,
its schema version checked on opening, one writer and a reader per thread.

Every such index (the notes' and learnings' stores, the journal's) is derived from files
on disk, so nothing here is ever migrated: a file of another schema version, or one
SQLite cannot read, is deleted and created afresh, and its owner refills it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

log = logging.getLogger(__name__)

# The tokenizer of every FTS5 table: the words a query matches are the same in each index.
TOKENIZER = "porter unicode61 remove_diacritics 2"

# FTS5 reports a bad MATCH expression with many different messages; these are the
# operational failures that are *not* the query's fault.
_RUNTIME_FAILURES = (
    "locked",
    "busy",
    "disk",
    "i/o",
    "no such table",
    "readonly",
    "memory",
    "interrupt",
)


def is_query_error(exc: sqlite3.OperationalError) -> bool:
    """Whether a failed MATCH was the expression's fault rather than the database's."""
    return not any(m in str(exc).lower() for m in _RUNTIME_FAILURES)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, its lock taken at the start, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Several reads of one committed state (a read transaction), or the caller's own
    transaction if one is open."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")  # a read: nothing to keep or undo


# A function SQL may call: (name, number of arguments, the Python function). One formula
# for Python and SQL alike, rather than a copy of it written in SQL.
SqlFunction = tuple[str, int, Callable[..., object]]


def connect(path: Path, functions: Collection[SqlFunction] = ()) -> sqlite3.Connection:
    """A connection in WAL mode: readers keep the last committed snapshot while the
    writer works. Only ``synchronous = NORMAL``: the files the index is derived from
    are what is durable."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    for name, args, fn in functions:
        conn.create_function(name, args, fn, deterministic=True)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


class Database:
    """One index file: a writer connection behind a lock, one read-only connection per
    reader thread.

    Opening checks ``PRAGMA user_version``: at ``version`` the file is kept once
    ``probe`` (a query reading its tables) answers; at one of ``keep`` (versions whose
    tables are this one's) it is kept for its owner to re-read; anything else, or a file
    SQLite cannot read, is deleted and ``schema`` run on a new one. ``found`` says
    which: the version the file had, or None if the tables were just created.
    """

    def __init__(
        self,
        path: Path,
        schema: str,
        version: int,
        probe: str,
        keep: Collection[int] = (),
        functions: Collection[SqlFunction] = (),
        what: str = "index",
        source: str = "markdown",
    ) -> None:
        self.path = path
        self.schema = schema
        self.functions = functions
        self.write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._generation = 0  # bumped by reset: readers of an older one reconnect
        self.found: int | None = None
        self.writer = self._open(version, probe, keep, f"{what} %s, rebuilding it from {source}")

    def connect(self) -> sqlite3.Connection:
        return connect(self.path, self.functions)

    def _open(
        self, version: int, probe: str, keep: Collection[int], message: str
    ) -> sqlite3.Connection:
        try:
            conn = self.connect()
            found = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if found == version:
                conn.execute(probe)
                self.found = found
                return conn
            if found in keep:
                self.found = found
                return conn
            conn.close()
            if tables:
                log.warning(
                    message % "schema changed",
                    extra={"index": str(self.path), "found": found, "want": version},
                )
        except sqlite3.DatabaseError as exc:
            log.warning(
                message % "unreadable",
                extra={"index": str(self.path), "error": str(exc)},
            )
        self.delete_files()
        return self.create()

    def create(self) -> sqlite3.Connection:
        """A connection to a new file holding the schema's empty tables."""
        conn = self.connect()
        conn.executescript(self.schema)
        return conn

    def delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def reader(self) -> sqlite3.Connection:
        """This thread's read-only connection, to the file the writer has now."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.generation != self._generation:
            # The index was reset since: this thread's connection is to the old file, and
            # only this thread may close it (another thread could be mid-query on its own).
            self._local.conn = None
            with self._readers_lock:
                if conn in self._readers:
                    self._readers.remove(conn)
            with suppress(sqlite3.Error):
                conn.close()
            conn = None
        if conn is None:
            conn = self.connect()
            conn.execute("PRAGMA query_only = ON")
            self._local.conn, self._local.generation = conn, self._generation
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @property
    def local(self) -> threading.local:
        """Per-thread state that goes with this thread's reader (a cache of its answers)."""
        return self._local

    @property
    def generation(self) -> int:
        return self._generation

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the writer, with the writer to itself."""
        with self.write_lock, immediate(self.writer) as conn:
            yield conn

    def reset(self, reopened: Callable[[], None]) -> None:
        """Delete the file and start an empty one in its place. ``reopened`` runs once the
        new file is there, before any reader may reconnect to it."""
        with self.write_lock:
            with suppress(sqlite3.Error):
                self.writer.close()
            self.delete_files()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = self.create()
            self.found = None
            reopened()
            with self._readers_lock:  # only now: a reader reconnecting gets the new file
                self._generation += 1

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                with suppress(sqlite3.Error):
                    conn.close()
            self._readers.clear()
        with self.write_lock:
            self.writer.close()
