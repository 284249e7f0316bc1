"""``facts/FACTS.md``: the active facts for people to read, regenerated whole.

It lives in ``facts/``, which is not indexed as notes, so the facts never come back a
second time as a note under ``[RELEVANT MEMORY]``. Earlier versions wrote it at the tier
root; such a file is moved only when it is byte for byte this rendering of the facts the
log holds (each change rewrote it), so a person's own ``FACTS.md`` is never touched.
"""

from __future__ import annotations

import logging
import os

from sidecar.disk import durable
from sidecar.disk.tiers import read_confined
from sidecar.facts import log as facts_log
from sidecar.facts.index import Fact, FactsIndex
from sidecar.journal.events import iso

log = logging.getLogger(__name__)

OLD_PATH = "FACTS.md"  # where versions before facts/FACTS.md wrote it
HEADER = ["# Facts", "", "Distilled from the journal; regenerated from facts/log.jsonl.",
          "Do not edit: an operator invalidates a wrong fact with "
          "`sidecar facts invalidate ID`.", ""]  # fmt: skip
_MAX_OLD_BYTES = 4 << 20


def render(facts: list[Fact]) -> bytes:
    facts = sorted(facts, key=lambda f: (f.category, f.valid_at))
    lines = list(HEADER)
    for category in facts_log.CATEGORIES:
        mine = [f for f in facts if f.category == category]
        if mine:
            lines += [f"## {category}", ""]
            lines += [f"- {f.fact} (sources: {len(f.sources)}; since {iso(f.valid_at)[:10]}; "
                      f"id {f.id})" for f in mine]  # fmt: skip
            lines.append("")
    return "\n".join(lines).encode()


def write(index: FactsIndex) -> None:
    durable.write_file(index.root, facts_log.FACTS_MD, lambda _: render(index.active()))


def move_old(index: FactsIndex) -> None:
    """Replace a root ``FACTS.md`` this daemon wrote by ``facts/FACTS.md``. Blocking."""
    got = read_confined(index.root, OLD_PATH, _MAX_OLD_BYTES)
    if got is None:
        return
    if got[0] != render(index.active()):  # every change rewrote it: the log's state, exactly
        log.info("a root FACTS.md that is not the facts summary is left as a note",
                 extra={"root": str(index.root)})  # fmt: skip
        return
    write(index)
    dir_fd = os.open(index.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.unlink(OLD_PATH, dir_fd=dir_fd)
        durable.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    log.info("facts summary moved to facts/FACTS.md", extra={"root": str(index.root)})
