"""Index store implementations behind ``sidecar.index.store.IndexStore``, and the one
place that chooses between them.

A location is a ``postgresql://`` URL (the tier lives in a shared PostgreSQL
database, under a namespace) or a path to the tier's SQLite file. Nothing else in
the daemon branches on the kind of store: it passes ``open_store`` to the
indexes and asks ``describe`` what to show.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sidecar.index.store import IndexStore
from sidecar.stores.sqlite import SQLiteStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


_KEYWORD_DSN = re.compile(r"^\s*[a-z_]+\s*=")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def validate(location: str) -> None:
    """Refuse, before starting, a location that is neither a PostgreSQL URL nor a path,
    and a URL whose user or password would be misread: libpq would then take part of
    the password for the host, and it would show wherever the location is shown.
    The messages never repeat the URL."""
    if _KEYWORD_DSN.match(location):
        raise ValueError(
            "a store is a postgresql:// URL or a path, not a key=value connection "
            "string: write it as postgresql://user:password@host/db"
        )
    if location and "://" in location and not is_postgres(location):
        raise ValueError(
            f"a store is a postgresql:// URL or a path, not {location.split('://')[0]}://"
        )
    if not is_postgres(location):
        return
    import psycopg  # only a PostgreSQL location needs it

    try:
        parts = psycopg.conninfo.conninfo_to_dict(location)
    except psycopg.ProgrammingError:
        parts = None
    # An unencoded "/", "?", "#" or "@" in the password cuts the URL short: libpq then
    # reads a piece of the password as the port, or the rest of it into the host.
    port, host = str((parts or {}).get("port", "")), str((parts or {}).get("host", ""))
    misread = any(not p.isdigit() for p in port.split(",") if p) or "@" in host
    if parts is None or misread or _BAD_ESCAPE.search(location):
        raise ValueError(
            "the store URL is not one libpq reads as meant; a user or password holding "
            "/ ? # @ or % must be percent-encoded, for example with python3 -c "
            "'import urllib.parse, sys; print(urllib.parse.quote(sys.argv[1], safe=\"\"))' PASSWORD"
        )


def open_store(
    location: str | Path,
    namespace: str,
    default: Path | None = None,
    single_writer: bool = False,
    **options: Any,
) -> IndexStore:
    """The store at ``location``: PostgreSQL (under ``namespace``) or a SQLite file;
    an empty location (or ``sqlite``) is the ``default`` file. ``single_writer``: of
    the sidecars sharing the namespace, only one writes, the others stand by (a SQLite
    file is one sidecar's anyway)."""
    if is_postgres(location):
        from sidecar.stores.postgres import PostgresStore  # psycopg only when asked for

        return PostgresStore(str(location), namespace, single_writer=single_writer, **options)
    path = sqlite_file(location, default)
    if path is None:
        raise ValueError("no SQLite file to open: give a path or a postgresql:// URL")
    return SQLiteStore(path)


def sqlite_file(location: str | Path, default: Path | None) -> Path | None:
    """The SQLite file ``location`` names: ``default`` for an empty location or ``sqlite``;
    None for PostgreSQL."""
    if is_postgres(location):
        return None
    return default if location in ("", "sqlite") else Path(location)


def describe(store: IndexStore) -> dict[str, Any]:
    """The kind of store, where it is and how it keeps vectors: for the health endpoint."""
    info = getattr(store, "info", None)
    if callable(info):
        return dict(info())
    if isinstance(store, SQLiteStore):
        return {"kind": "sqlite", "location": str(store.path), "vectors": "blob"}
    return {"kind": type(store).__name__}
