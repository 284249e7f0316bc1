"""The SQLite store's tables, and how FTS5 ranks and merges them (as ``pg_schema`` is
the PostgreSQL store's).

Nothing is migrated: a file of another ``SCHEMA_VERSION`` is deleted and built again
from the markdown (``sidecar.index.sqlite.Database``).
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress

from sidecar.index.sqlite import TOKENIZER, immediate

# 14: relative dates in more everyday forms ("this past Friday", "a couple of days
# back", "in a few weeks", "the other day"); 13: day words ("20230503") for a section's
# date and each day a chunk names; 12: a section's month and written dates in canonical
# form in context; 11: relative dates in chunk context; 10: headings join a chunk past the
# cap; 9: chunk context; 8: no heading-only chunks; 7: chunk hashes, vectors; 6:
# append-stable cuts
SCHEMA_VERSION = 14
# BM25 column weights (heading, body): a term in the breadcrumb says more about
# a chunk than the same term somewhere in its prose.
HEADING_WEIGHT = 2.0
BODY_WEIGHT = 1.0
# A chunk's context (its neighbours' text, ``Chunk.context``) counts for less than its
# own words: it finds the chunk, it does not make it about that. Cross-validated on
# LoCoMo (README, "Validated on conversations a choice was not made on").
CONTEXT_WEIGHT = 0.5
FTS_HASH_BYTES = 32 * 1024 * 1024
# FTS5's default: how many segments of a level are merged in the background as writes go.
# A build turns it off (see ``add_files``) and the optimize after it turns it back on.
AUTOMERGE = 4
# How many segments a level may reach before FTS5 merges them at once, in the transaction
# that adds the last: FTS5's default, and what a build raises it to (see ``add_files``).
CRISISMERGE = 16
BUILD_CRISISMERGE = 64

SCHEMA = f"""
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    metadata TEXT NOT NULL,
    indexed_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading TEXT NOT NULL,
    body TEXT NOT NULL,
    context TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX chunks_by_path ON chunks(path);
-- Vectors are keyed by content, not by chunk: unchanged text is never embedded twice,
-- whatever happens to the chunk rows around it. One blob per text: float32 rows,
-- the whole chunk first, then each of its lines.
CREATE TABLE vectors (
    model_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model_id, hash)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading, body, context, content='chunks', content_rowid='id', tokenize='{TOKENIZER}'
);
-- Terms pending in memory before FTS5 writes them out as a segment (default 1 MB): a build
-- batch tokenizes tens of MB, and each small segment is merged again later. Edits commit
-- long before this fills. Where segments fall never changes what a query ranks.
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('hashsize', {FTS_HASH_BYTES});
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
PRAGMA user_version = {SCHEMA_VERSION};
"""
PROBE = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'x'"  # answers if FTS5 reads


def resume_merging(conn: sqlite3.Connection) -> None:
    """Merging left paused (a build cut short, or the optimize after it never reached):
    turn it back on, or every edit from now on adds a segment to search. A build going
    on pauses it again at its next batch. Best effort: an index another process is
    writing, or a read-only one, is opened as it is."""
    config = dict(conn.execute("SELECT k, v FROM chunks_fts_config"))
    usual = (AUTOMERGE, CRISISMERGE)
    if (config.get("automerge", AUTOMERGE), config.get("crisismerge", CRISISMERGE)) != usual:
        with suppress(sqlite3.OperationalError), immediate(conn):
            merge_as_usual(conn)


def merge_as_usual(conn: sqlite3.Connection) -> None:
    """FTS5's merging as it is outside a build."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', ?)", (AUTOMERGE,))
    conn.execute(
        "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('crisismerge', ?)", (CRISISMERGE,)
    )
