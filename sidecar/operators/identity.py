"""Who an operator model belongs to, as a file name no one can read back.

The slug names the model's file (``users/<slug>.md``) and the operator in the audit log,
so it must neither collide nor confirm a guess: it is an HMAC of the identity, encoded
unambiguously as a JSON pair, under a secret generated once per deployment and kept in
the crew tier as a hidden file (mode 0600; hidden files are never indexed, listed or
served). Deployments older than the secret named models ``sha256(user NUL workspace)``
cut to 16 hex digits; those files are still found, and moved to the new name by the
lead's next update, so months of history are not lost.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
from pathlib import Path

from sidecar.disk.durable import fsync
from sidecar.disk.tiers import read_confined
from sidecar.errors import ApiError

log = logging.getLogger(__name__)

SECRET_FILE = ".operator-secret"
SLUG_HEX = 32  # 128 bits: no two identities meet by chance
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")  # and lone surrogates
_SECRETS: dict[Path, bytes] = {}  # read once per crew folder: it never changes
_WARNED: set[Path] = set()


def check_id(name: str, value: str) -> None:
    """400 for an identifier with control characters: no real user or workspace id has
    them, and a NUL once let two identities share one file."""
    if _CONTROL.search(value):
        raise ApiError(
            400, f"bad_{name}", f"'{name}' must not contain control characters (NUL, newline, "
            "escape, ...) or lone surrogates; send the id as your identity provider issues it",
        )  # fmt: skip


def secret(crew_dir: Path, create: bool = False) -> bytes | None:
    """The deployment's secret, or None while there is none. With ``create`` (the lead,
    which writes the crew tier) it is made if missing, and OSError says why there can be
    none. Blocking: run it on a thread."""
    if crew_dir in _SECRETS:
        return _SECRETS[crew_dir]
    try:
        key = _read_key(crew_dir)
        if key is None and create:
            _create(crew_dir)
            key = _read_key(crew_dir)
            if key is None:
                raise OSError(f"{SECRET_FILE} is not a regular file with a secret in it")
    except OSError as exc:
        if create:
            raise
        if crew_dir not in _WARNED:  # a member that may not read it: say so, once
            _WARNED.add(crew_dir)
            where = {"file": str(crew_dir / SECRET_FILE), "error": str(exc)}
            log.warning("operator secret unreadable: models are found only by their old names",
                        extra=where)  # fmt: skip
        return None
    if key is not None:
        _SECRETS[crew_dir] = key
    return key


def _read_key(crew_dir: Path) -> bytes | None:
    got = read_confined(crew_dir, SECRET_FILE, 4096)
    return (got[0].strip() or None) if got else None


def _create(crew_dir: Path) -> None:
    """Write a new secret beside the target and link it into place, so a reader never sees
    half of one and a secret already there (another process's) is never replaced."""
    tmp = crew_dir / f"{SECRET_FILE}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secrets.token_hex(32).encode() + b"\n")
        fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, crew_dir / SECRET_FILE, follow_symlinks=False)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    dir_fd = os.open(crew_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsync(dir_fd)
    finally:
        os.close(dir_fd)


def slug(key: bytes, user_id: str, workspace_id: str) -> str:
    who = json.dumps([user_id, workspace_id]).encode()
    return hmac.new(key, who, hashlib.sha256).hexdigest()[:SLUG_HEX]


def legacy_slug(user_id: str, workspace_id: str) -> str:
    """The name models had before the secret (ambiguous only for ids with a NUL, which
    are refused now)."""
    return hashlib.sha256(f"{user_id}\x00{workspace_id}".encode()).hexdigest()[:16]


def path(name: str) -> str:
    return f"users/{name}.md"


def model_paths(crew_dir: Path, user_id: str, workspace_id: str, create: bool = False
                ) -> list[str]:  # fmt: skip
    """The model's file, then the name it had before the secret. Blocking."""
    key = secret(crew_dir, create)
    names = [slug(key, user_id, workspace_id)] if key else []
    return [path(name) for name in [*names, legacy_slug(user_id, workspace_id)]]
