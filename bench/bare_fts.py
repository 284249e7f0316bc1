"""The yardstick: a plain SQLite FTS5 table driven directly through the stdlib ``sqlite3``.

Same tokenizer family as the sidecar (porter over unicode61), same journal
settings, none of the sidecar's layers (no chunk table join, no query planner,
no HTTP). What the sidecar costs on top of this is what the figures compare.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

PIECE_CHARS = 800


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def create(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(path UNINDEXED, body, tokenize='porter unicode61')"
    )


def insert_all(conn: sqlite3.Connection, rows: Iterable[tuple[str, str]]) -> None:
    """(path, body) rows, in one transaction."""
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO t(path, body) VALUES (?, ?)", rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def query(conn: sqlite3.Connection, match: str, limit: int = 10) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT path, body FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, limit)
    ).fetchall()


def split_pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """About ``size`` characters per piece, cut at the last newline before the limit if any."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = text.rfind("\n", start + size // 2, start + size)
        cut = cut + 1 if cut > 0 else start + size
        pieces.append(text[start:cut])
        start = cut
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def markdown_files(root: Path) -> list[str]:
    """Relative paths of every *.md below root (hidden entries skipped), sorted."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel_dir = os.path.relpath(folder, root)
        for name in files:
            if name.endswith(".md") and not name.startswith("."):
                out.append(name if rel_dir == "." else f"{rel_dir}/{name}")
    return sorted(out)


def file_pieces(root: Path, rels: list[str]) -> Iterator[tuple[str, str]]:
    for rel in rels:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        for piece in split_pieces(text):
            yield rel, piece


def index_tree(db_path: Path, root: Path) -> int:
    """The bare indexing loop: read, split, insert, one transaction. Returns the row count."""
    conn = connect(db_path)
    try:
        create(conn)
        insert_all(conn, file_pieces(root, markdown_files(root)))
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        conn.close()
