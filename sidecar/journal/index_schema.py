"""The tables of the journal's index (``journal.sqlite``), and the columns a fold fills.

Nothing is migrated: the index is derived from the day files, so a file of another
schema version is built again from them (``sidecar.index.sqlite.Database``).
"""

from __future__ import annotations

from sidecar.index.sqlite import TOKENIZER

# 7: ``updates``: which earlier event a later one probably updates (``links``), found
#    when the later is folded; the FTS5 vocabulary read to weigh and find shared words
# 6: the operator's key (``operator``) of each event, indexed for per-operator reads
# 5: ``trimmed``: the original payload's size of an event retention cut to an excerpt;
#    events by file, which retention reads a day at a time
# 4: times past 9999 UTC and values that do not fit their field read as defaults
# 3: payload text one value a line (the scanner reads each as a clause of its own)
# 2: the scanner's verdict per event
SCHEMA_VERSION = 7
REREAD_FROM = (2, 3, 4, 5, 6)  # versions whose tables are this one's but for ``UPGRADE``
# What versions 5 and 6 added, by the column each brings, added to an older index that
# lacks it, so its health history stays.
UPGRADE = {
    "trimmed": (
        "ALTER TABLE events ADD COLUMN trimmed INTEGER",
        "CREATE INDEX IF NOT EXISTS events_by_file ON events(file, line)",
        "CREATE INDEX IF NOT EXISTS events_by_type ON events(type, recorded_at)",
    ),
    "operator": (
        "ALTER TABLE events ADD COLUMN operator TEXT",
        "CREATE INDEX IF NOT EXISTS events_by_operator ON events(operator, recorded_at) "
        "WHERE operator IS NOT NULL",
    ),
}

# Version 7's tables, created in an older index that is read again (``REREAD_FROM``).
UPDATES = """
CREATE TABLE IF NOT EXISTS updates (
    newer TEXT NOT NULL, older TEXT NOT NULL, words REAL NOT NULL, PRIMARY KEY (older, newer)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS updates_by_newer ON updates(newer);
CREATE VIRTUAL TABLE IF NOT EXISTS events_vocab USING fts5vocab(events_fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS events_where USING fts5vocab(events_fts, 'instance');
"""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    ts REAL NOT NULL,
    recorded_at REAL NOT NULL,
    type TEXT NOT NULL,
    severity TEXT NOT NULL,
    summary TEXT NOT NULL,
    payload TEXT NOT NULL,
    body TEXT NOT NULL,
    session_id TEXT NOT NULL,
    source TEXT,
    agent_id TEXT,
    operator TEXT,  -- the operator's non-reversible key (their model file's name)
    base REAL NOT NULL,
    floor REAL NOT NULL,
    priority TEXT,
    valid_until REAL,
    supersedes TEXT,
    superseded_by TEXT,
    embeddable INTEGER NOT NULL,
    refs INTEGER NOT NULL DEFAULT 0,
    last_ref REAL,
    file TEXT NOT NULL,
    line INTEGER NOT NULL,
    trimmed INTEGER,  -- NULL: the whole payload; else its bytes before retention (-1 unknown)
    flag TEXT  -- the injection scanner's verdict: NULL not yet read, '' clean, else JSON
);
CREATE INDEX IF NOT EXISTS events_by_ts ON events(ts, id);
CREATE INDEX IF NOT EXISTS events_by_session ON events(session_id, recorded_at);
CREATE INDEX IF NOT EXISTS events_by_operator ON events(operator, recorded_at)
    WHERE operator IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_file ON events(file, line);
CREATE INDEX IF NOT EXISTS events_by_type ON events(type, recorded_at);
CREATE INDEX IF NOT EXISTS events_by_supersedes ON events(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_to_embed ON events(embeddable) WHERE embeddable = 1;
CREATE INDEX IF NOT EXISTS events_to_scan ON events(seq) WHERE flag IS NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(
    summary, body, content='events', content_rowid='seq', tokenize='{TOKENIZER}'
);
CREATE TABLE IF NOT EXISTS relations (
    src TEXT NOT NULL, dst TEXT NOT NULL, relation TEXT NOT NULL, weight REAL NOT NULL,
    PRIMARY KEY (src, dst, relation)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relations_by_dst ON relations(dst);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, offset INTEGER NOT NULL, lines INTEGER NOT NULL, inode INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS problems (
    file TEXT NOT NULL, line INTEGER NOT NULL, error TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    id TEXT NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (id, model)
) WITHOUT ROWID;
{UPDATES.strip()}
CREATE TABLE IF NOT EXISTS health (day TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID;
PRAGMA user_version = {SCHEMA_VERSION};
"""
# What a rebuild drops.
DERIVED = ("events", "events_fts", "relations", "files", "problems", "updates")
PROBE = "SELECT count(*) FROM events_fts WHERE events_fts MATCH 'x'"  # answers if FTS5 reads

# The columns of ``events`` a line fills (``fold.event_row`` gives a value for each); the
# rest (seq, superseded_by, refs, last_ref, flag) change as later records are folded.
INSERTED = (
    "id", "ts", "recorded_at", "type", "severity", "summary", "payload", "body", "session_id",
    "source", "agent_id", "operator", "base", "floor", "priority", "valid_until", "supersedes",
    "embeddable", "file", "line", "trimmed",
)  # fmt: skip
# Positional: sqlite3 binds a tuple at C speed, a name costs a lookup per value per row.
INSERT_EVENT = (
    f"INSERT OR IGNORE INTO events ({', '.join(INSERTED)}) "
    f"VALUES ({', '.join('?' * len(INSERTED))})"
)
