"""The PostgreSQL store's connections: a small pool, the schema migrated once, and
failing fast while the server is out of reach.

The store never fails to open: an unreachable server makes every call raise
``StoreUnavailable``, which the daemon shows as a degraded tier and heals once the
server answers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from sidecar.stores.pg_schema import SchemaTooNew, migrate

FAIL_FAST_S = 1.0  # after a failed connection, calls fail at once for this long

Conn = psycopg.Connection[tuple[Any, ...]]


class StoreUnavailable(RuntimeError):
    """The PostgreSQL server cannot be reached (or its schema cannot be used)."""


def describe(exc: BaseException) -> str:
    """An error's first line, for a reason shown in health and logs."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class Connections:
    """A pool of autocommit connections for one namespace's store. Connecting and
    migrating happen once, on the first call that works; ``read_only`` never migrates
    (a crew member reading the lead's namespace)."""

    def __init__(
        self,
        url: str,
        namespace: str,
        connect_timeout: float,
        max_connections: int,
        use_pgvector: bool,
        read_only: bool,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.ready = False
        self.pgvector = False  # the extension is there, and wanted
        self._use_pgvector = use_pgvector
        self._read_only = read_only
        self.last_error: str | None = None
        self._failed_at: float | None = None  # when the last attempt to connect failed
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(connect_timeout))},
            check=ConnectionPool.check_connection,
            timeout=connect_timeout,
            open=False,
            name=f"sidecar-{namespace}",
        )
        self.pool.open(wait=False)

    def ensure(self) -> None:
        """Connect and migrate, once; until that works, every call says why it cannot."""
        if self.ready:
            return
        self._fail_fast()
        try:
            with self.pool.connection() as conn:
                if self._read_only:
                    conn.execute("SELECT 1")
                else:
                    self.pgvector = migrate(conn) and self._use_pgvector
        except SchemaTooNew as exc:
            self.last_error = str(exc)
            raise StoreUnavailable(str(exc)) from exc
        except (psycopg.Error, PoolTimeout) as exc:
            self._failed(exc)
            raise StoreUnavailable(f"PostgreSQL unreachable: {self.last_error}") from exc
        self.ready = True
        self.last_error = None
        self._failed_at = None

    def _fail_fast(self) -> None:
        """Right after a failed attempt, fail at once instead of waiting out the pool's
        timeout again: a server that is down makes every call wait ``connect_timeout``
        otherwise, start-up included, before the tier can even say it is degraded."""
        failed_at = self._failed_at  # read once: another thread may clear it meanwhile
        if failed_at is not None and time.monotonic() - failed_at < FAIL_FAST_S:
            raise StoreUnavailable(f"PostgreSQL unreachable: {self.last_error}")

    def _failed(self, exc: BaseException) -> None:
        self.last_error = describe(exc)
        self._failed_at = time.monotonic()

    @contextmanager
    def conn(self) -> Iterator[Conn]:
        """A pooled connection; a failure to get one is StoreUnavailable."""
        self.ensure()
        self._fail_fast()
        try:
            cm = self.pool.connection()
            conn = cm.__enter__()
        except (psycopg.OperationalError, PoolTimeout) as exc:
            self._failed(exc)
            raise StoreUnavailable(f"PostgreSQL unreachable: {self.last_error}") from exc
        self._failed_at = None
        try:
            yield conn
        except BaseException as exc:
            cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        cm.__exit__(None, None, None)

    def probe(self) -> AbstractContextManager[Conn]:
        """A connection for a health probe: it waits two seconds at most, and tries even
        while calls fail fast (the probe is what finds the server back)."""
        return self.pool.connection(timeout=min(2.0, self.connect_timeout))

    def rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn() as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        self.pool.close()
