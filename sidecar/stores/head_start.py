"""A cold build's head start: a tier's notes parsed while the daemon is still loading.

Loading the daemon (the HTTP stack, MCP, every capability) keeps one core busy for most
of a second while the others idle. A tier whose index is missing, empty or holds an
unfinished build is built as soon as the daemon is up, and parsing its notes is most of
that build's work: ``sidecar serve`` calls ``head_start`` first, and the build takes
over what the parser workers have done by then (``ParsePool.parse``). Only a tier's own
SQLite file is looked at; a tier in PostgreSQL gets no head start.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from sidecar.disk.tiers import walk_markdown
from sidecar.index.build import BUILDING, POOL_MIN_FILES
from sidecar.index.parse_pool import AHEAD_FILES, ParsePool
from sidecar.stores.sqlite_schema import SCHEMA_VERSION


def head_start(tiers: Iterable[tuple[Path, Path]], max_chars: int) -> ParsePool | None:
    """Parser workers parsing the first notes of every tier (its folder, its SQLite file)
    that faces a cold build big enough to use them, for the daemon to take over; None if
    none does."""
    pool: ParsePool | None = None
    for root, index in tiers:
        held = indexed_paths(index)
        if held is None:
            continue
        # The files the build will list first as new (``indexer.plan_tree``): walk order,
        # less those the index holds. A folder it cannot read is the daemon's to report.
        new = (rel for rel, _ in walk_markdown(root) if rel not in held)
        try:
            rels = list(itertools.islice(new, AHEAD_FILES))
        except OSError:
            continue
        if len(rels) >= POOL_MIN_FILES:
            pool = pool or ParsePool()
            pool.ahead(root, rels, max_chars)
    return pool


def indexed_paths(index: Path) -> set[str] | None:
    """The files a cold build of the index at ``index`` will not parse (those an
    unfinished build committed), or None if no cold build is coming: the index is there,
    of this schema, holds files and no unfinished build. An index that is missing or
    unreadable is rebuilt from nothing. Read-only: the daemon opens it for real later."""
    if not index.exists():
        return set()
    try:
        conn = sqlite3.connect(f"{index.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return set()
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return set()
        if conn.execute("SELECT 1 FROM meta WHERE key = ?", (BUILDING,)).fetchone():
            return {path for (path,) in conn.execute("SELECT path FROM files")}
        if conn.execute("SELECT 1 FROM files LIMIT 1").fetchone():
            return None
        return set()
    except sqlite3.Error:
        return set()
    finally:
        conn.close()
