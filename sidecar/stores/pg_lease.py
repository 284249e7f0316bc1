"""Which of the sidecars sharing a PostgreSQL namespace writes it: the writer lease.

With ``single_writer``, only the sidecar holding a session advisory lock on the
namespace writes; the lock lives (and dies) with a dedicated connection, so a writer
that dies loses it, and a standby trying every second takes over within seconds.
"""

from __future__ import annotations

import logging
import threading
from contextlib import suppress

import psycopg

from sidecar.stores.pg_connect import Conn, StoreUnavailable, describe

log = logging.getLogger(__name__)


class NotWriter(RuntimeError):
    """Another sidecar holds the namespace's writer lease; this one is its standby.

    Not damage: the index is fine and searches read it. The standby tries the lease
    every second (``take_lease``) and takes it once its holder is gone."""


_MARK_SERVED = (
    "INSERT INTO meta (namespace, key, value) VALUES (%s, 'lead_since', now()::text) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value"
)
# (a lead ever served the namespace, this server is a read replica, a lead holds it now);
# a bigint advisory key shows in pg_locks as two halves, with objsubid 1.
_LEAD_STATE = """
    SELECT EXISTS (SELECT 1 FROM meta WHERE namespace = %(ns)s AND key = 'lead_since'),
           pg_is_in_recovery(),
           EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                   AND objsubid = 1 AND database = (SELECT oid FROM pg_database
                                                    WHERE datname = current_database())
                   AND ((classid::bigint << 32) | objid::bigint)
                       = hashtextextended(%(ns)s, 1))
"""


class WriterLease:
    """This sidecar's claim on a namespace's writer lease."""

    def __init__(self, url: str, namespace: str, connect_timeout: float) -> None:
        self.url = url
        self.namespace = namespace
        self.connect_timeout = connect_timeout
        self._conn: Conn | None = None  # holds the lock while it lives
        self._spare: Conn | None = None  # a standby's connection, to try the lock again
        self._taken = False  # the lease was taken since ``take`` last said so
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        return self._conn is not None

    def hold(self) -> None:
        """Check this sidecar still holds the namespace's writer lease, or take it now;
        NotWriter while another sidecar holds it."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute("SELECT 1")
                    return
                except psycopg.Error:  # the connection, and with it the lock, is gone
                    self._drop()
            # A standby keeps its connection between attempts: trying every second must
            # not cost the server a new backend process each time.
            conn, self._spare = self._spare, None
            try:
                if conn is None or conn.closed:
                    timeout = max(1, round(self.connect_timeout))
                    conn = psycopg.connect(self.url, autocommit=True, connect_timeout=timeout)
                (held,) = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 1))", (self.namespace,)
                ).fetchone()  # type: ignore[misc]
            except psycopg.Error as exc:
                if conn is not None:
                    conn.close()
                raise StoreUnavailable(f"PostgreSQL unreachable: {describe(exc)}") from exc
            if not held:
                self._spare = conn
                raise NotWriter(
                    f"another sidecar writes namespace {self.namespace!r}; this one is its "
                    "standby and takes over when that one stops"
                )
            self._conn = conn
            self._taken = True
            # Members read this row (replicas too, where pg_locks shows no primary's lock):
            # a namespace no lead ever served is a --namespace typo, not an empty memory.
            with suppress(psycopg.Error):  # tables not created yet: the next write says so
                conn.execute(_MARK_SERVED, (self.namespace,))
            log.warning("writer lease taken", extra={"namespace": self.namespace})

    def try_hold(self) -> None:
        """Take the lease if it is free; a standby stays one quietly."""
        with suppress(NotWriter, StoreUnavailable):
            self.hold()

    def take(self) -> bool:
        """Try the lease, if this sidecar is a standby: True once after it took it."""
        if not self.held:
            self.try_hold()
        with self._lock:  # taken here, or by a write or health probe since last asked
            taken, self._taken = self._taken, False
        return taken

    def _drop(self) -> None:
        for conn in (self._conn, self._spare):
            if conn is not None:
                with suppress(psycopg.Error):
                    conn.close()
        self._conn = self._spare = None

    def close(self) -> None:
        """Give the lease back before closing: a closed connection's backend exits (and
        frees the lock) some time after the client has gone, and until then members read
        that a lead holds the namespace and no standby can take it."""
        with self._lock:
            if self._conn is not None:
                with suppress(psycopg.Error):
                    self._conn.execute("SELECT pg_advisory_unlock_all()")
            self._drop()


def lead_absent(conn: Conn, namespace: str) -> str | None:
    """What a member reading ``namespace`` should know about its lead: none ever served
    it (the member's --namespace is not the lead's), or none holds its writer lease now
    (a session advisory lock ``pg_locks`` shows; not on a read replica, which sees no
    lock of the primary's)."""
    row = conn.execute(_LEAD_STATE, {"ns": namespace}).fetchone()
    served, replica, held = row if row else (False, False, False)
    if not served:
        return (
            f"no lead has ever served namespace {namespace!r}: this member's "
            "--namespace is not the lead's, or the lead has not started yet; crew "
            "searches find nothing"
        )
    if not held and not replica:
        return (
            f"no lead holds namespace {namespace!r}: every lead of the crew is down; "
            "crew searches show what was indexed last"
        )
    return None
