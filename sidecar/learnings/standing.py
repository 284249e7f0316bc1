"""Institutional directives: the learnings every memory block loads without a search.

Kept apart from the capability so that a block built without the daemon (``sidecar
context --offline``, a harness hook with the daemon down) reads them the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.disk.tiers import decode_text, read_confined, walk_markdown
from sidecar.learnings import entries

FOLDER = "learnings"  # in each tier's root
# As the index reads them (the index's own cap; a test holds the two equal): this module
# stays light, for a block built without the daemon.
MAX_FILE_BYTES = 16 * 1024 * 1024


def standing(path: str, meta: dict[str, Any]) -> bool:
    """An institutional directive still in force."""
    archived = path.startswith(f"{FOLDER}/archive/")
    return (
        bool(meta["institutional"])
        and meta["type"] == "directive"
        and (meta["status"] == "active" and not archived)
    )


def read_standing(root: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """The institutional directives in a tier's learnings files, read without an index;
    what was wrong with their blocks goes to ``problems`` (``file:line: why``) if given."""
    out: list[dict[str, Any]] = []
    for rel, _ in sorted(walk_markdown(root, FOLDER)):
        got = read_confined(root, rel, MAX_FILE_BYTES)
        if got is None:
            continue
        found, wrong = entries.parse(rel, decode_text(got[0]))
        if problems is not None:
            problems += [f"{rel}:{p.line}: {p.error}" for p in wrong]
        out += [{**e.meta(), "file": rel} for e in found if standing(rel, e.meta())]
    return out
