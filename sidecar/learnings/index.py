"""Each tier's learnings index: ``learnings.sqlite``, an index store like the notes' own.

One chunk per active entry (its text; the file's name as its heading), so the same
BM25, vectors and fusion rank it. Each file's entries' metadata is kept with the file
and mirrored in memory by path and line, so ranking never re-reads YAML. Everything
here is derived from ``learnings/*.md`` and rebuilt from it at will.
"""

from __future__ import annotations

import itertools
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.disk.tiers import Tier, decode_text
from sidecar.index import indexer
from sidecar.index.chunking import Chunk
from sidecar.index.store import FileState, IndexedFile
from sidecar.learnings import entries
from sidecar.learnings.standing import FOLDER
from sidecar.stores.sqlite import SQLiteStore

log = logging.getLogger(__name__)

ARCHIVE = "learnings/archive"
INDEX_FILENAME = "learnings.sqlite"
MAX_PROBLEMS_LISTED = 50
# The parser's version, kept with what it read from each file: what an older one stored
# (an alias bomb's problem expanded to 72 MB, a count of 400 digits) is read again.
PARSED_BY = 2


@dataclass(slots=True)
class Change:
    """What a learnings job reports to the index worker (``indexes.Change``)."""

    changed: bool
    index_error: Exception | None = None


def is_learnings(rel: str) -> bool:
    return rel == FOLDER or rel.startswith(f"{FOLDER}/")


def parse_file(rel: str, data: bytes, state: FileState, max_chars: int) -> IndexedFile:
    """An ``indexer.Parser``: a chunk for each active entry; archived files keep none."""
    found, problems = entries.parse(rel, decode_text(data))
    archived = rel.startswith(f"{ARCHIVE}/")
    slug = rel.rsplit("/", 1)[-1].removesuffix(".md").replace("-", " ").replace("_", " ")
    chunks = [
        Chunk(e.line, e.end_line, slug, e.text)
        for e in found
        if e.status == "active" and e.text.strip() and not archived
    ]
    metadata = {
        "parsed_by": PARSED_BY,
        "entries": [e.meta() for e in found],
        "problems": [{"line": p.line, "error": p.error} for p in problems],
    }
    return IndexedFile(rel, state, metadata, chunks)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What ranking and reinforcement read: swapped whole, never changed in place."""

    by_line: dict[str, dict[int, dict[str, Any]]]  # path -> opening line -> entry metadata
    by_id: dict[str, tuple[str, int]]  # entry id -> (path, line); active entries first
    problems: dict[str, list[dict[str, Any]]]  # path -> [{line, error}]
    shas: dict[str, str]


EMPTY = Snapshot({}, {}, {}, {})


class LearningsIndex:
    """One tier's learnings store and the in-memory mirror of its entries' metadata."""

    def __init__(self, tier: Tier) -> None:
        self.tier = tier
        self.store = SQLiteStore(tier.root / INDEX_FILENAME)
        self.snapshot = EMPTY
        self._refresh_lock = threading.Lock()
        # Files there but refused (hard links, over the size limit, unreadable), and why.
        self.skipped: indexer.Skipped = {}
        self.outdated: set[str] = set()  # files an older parser read

    @property
    def root(self) -> Path:
        return self.tier.root

    # -- on the index writer thread ------------------------------------------------------

    def sync(self, rel: str = "") -> int:
        """Bring the index in line with one file, or with the whole folder; the number of
        files whose entries changed."""
        if rel.endswith(".md") and rel != FOLDER:
            result = indexer.sync_file(self.store, self.root, rel, skipped=self.skipped,
                                       parse=parse_file)  # fmt: skip
        elif self.outdated:  # the whole folder, read again by this parser
            outdated = len(self.outdated)
            self.rebuild()
            return outdated
        else:
            result = indexer.sync_tree(self.store, self.root, FOLDER, skipped=self.skipped,
                                       parse=parse_file)  # fmt: skip
        self.refresh()
        return result.changed

    def index_written(self, rel: str, data: bytes, mtime_ns: Any) -> None:
        """A durable write's bytes, committed once the rename is done (``Notes.commit``)."""
        indexer.index_written(self.store, rel, data, mtime_ns, parse=parse_file)
        self.refresh()

    def rebuild(self) -> None:
        items = indexer.load_tree(self.root, skipped=self.skipped, sub=FOLDER, parse=parse_file)
        self.store.replace_all(items)
        self.refresh()

    def refresh(self) -> None:
        """Reload the metadata of files whose content changed since the last look."""
        with self._refresh_lock:
            old = self.snapshot
            states = self.store.file_states()
            shas = {p: s.sha256 for p, s in states.items()}
            changed = [p for p, sha in shas.items()
                       if old.shas.get(p) != sha or p in self.outdated]  # fmt: skip
            if not changed and len(shas) == len(old.shas):
                return
            loaded = self.store.file_metadata(changed)
            by_line = {p: v for p, v in old.by_line.items() if p in shas and p not in loaded}
            problems = {p: v for p, v in old.problems.items() if p in shas and p not in loaded}
            self.outdated &= set(shas)
            for path, meta in loaded.items():
                if meta.get("parsed_by") == PARSED_BY:
                    self.outdated.discard(path)
                else:
                    self.outdated.add(path)
                by_line[path] = {e["line"]: e for e in meta.get("entries", [])}
                if meta.get("problems"):
                    problems[path] = meta["problems"]
            by_id: dict[str, tuple[str, int]] = {}
            for path in sorted(by_line):
                for line, e in by_line[path].items():
                    held = by_id.get(e["id"])
                    if held is None or (
                        e["status"] == "active" and by_line[held[0]][held[1]]["status"] != "active"
                    ):
                        by_id[e["id"]] = (path, line)
            self.snapshot = Snapshot(by_line, by_id, problems, shas)

    def close(self) -> None:
        self.store.close()

    # -- anywhere ----------------------------------------------------------------------

    def entry(self, path: str, line: int) -> dict[str, Any] | None:
        return self.snapshot.by_line.get(path, {}).get(line)

    def status(self) -> dict[str, Any]:
        snap = self.snapshot
        counts = dict.fromkeys(entries.STATUSES, 0)
        for file_entries in snap.by_line.values():
            for e in file_entries.values():
                counts[e["status"]] = counts.get(e["status"], 0) + 1
        listed = (
            {"file": path, "line": p["line"], "error": p["error"]}
            for path in sorted(snap.problems)
            for p in snap.problems[path]
        )
        return {
            "files": len(snap.by_line),
            "entries": sum(counts.values()),  # every status, archived ones too
            "by_status": counts,
            # The first few, and how many: each entry can have one, and a file thousands.
            "problem_count": sum(len(found) for found in snap.problems.values()),
            "problems": list(itertools.islice(listed, MAX_PROBLEMS_LISTED)),
            "skipped": [{"file": f, "reason": r} for f, r in sorted(dict(self.skipped).items())],
        }
