"""Compaction: one file's duplicate and near-duplicate entries merged, spent ones archived.

Per file, a plain function of its text (so ``--dry-run`` shows exactly what a run does):

- entries sharing an id are merged into the first: the highest importance and
  reinforcement count and the latest ``last_reinforced`` of them all;
- active entries whose word sets are more than ``NEAR_DUPLICATE`` alike (Jaccard) are
  merged into the most prominent of them, which adds up their reinforcement counts;
- merged-away, ``retired`` and ``compacted`` entries move to ``learnings/archive/YYYY.md``
  marked with why and when. Nothing is deleted outright.

The archive is appended first and the file rewritten after, so a crash in between leaves
an entry in both, never in neither. Entries go to the archive only if it does not hold
them yet (``add_to_archive``), so a rewrite that did not happen (the file changed after
it was planned, or a crash) never archives the same entry twice.

Entries whose front matter cannot be read are left exactly as they are.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from sidecar.learnings import entries
from sidecar.learnings.entries import Entry, jaccard, words
from sidecar.learnings.ranking import prominence

NEAR_DUPLICATE = 0.8


@dataclass(slots=True)
class Plan:
    """What compacting one file does, and the texts that do it."""

    file: str
    archive_file: str
    new_text: str
    archive_text: str  # to append to the archive; empty when nothing moves
    moved: list[str] = field(default_factory=list)  # its entries' blocks, one each
    merged: list[dict[str, Any]] = field(default_factory=list)  # {into, from, reason}
    archived: list[dict[str, Any]] = field(default_factory=list)  # {id, status, reason}

    @property
    def changes(self) -> bool:
        return bool(self.merged or self.archived)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "archive_file": self.archive_file,
            "merged": self.merged,
            "archived": self.archived,
        }


def near_duplicate_pairs(sets: list[frozenset[str]], threshold: float) -> list[tuple[int, int]]:
    """Pairs with Jaccard above ``threshold``, without comparing every pair.

    Prefix filtering: with words ordered rarest first, two sets that alike must share
    one of the first ``n - ceil(threshold * n) + 1`` words of each; only sets that do
    are compared.
    """
    freq = Counter(w for s in sets for w in s)
    postings: dict[str, list[int]] = {}
    pairs: set[tuple[int, int]] = set()
    for i, s in enumerate(sets):
        ordered = sorted(s, key=lambda w: (freq[w], w))
        prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]
        for w in prefix:
            for j in postings.get(w, ()):
                other = len(sets[j])
                if min(len(s), other) >= threshold * max(len(s), other):
                    pairs.add((j, i))
            postings.setdefault(w, []).append(i)
    return sorted(p for p in pairs if jaccard(sets[p[0]], sets[p[1]]) > threshold)


def _clusters(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def plan(rel: str, text: str, today: date) -> Plan:
    found, _ = entries.parse(rel, text)
    editable = [e for e in found if e.fields_ok]
    changes: dict[int, dict[str, Any]] = {}  # entry line -> field changes
    leaving: dict[int, dict[str, Any]] = {}  # entry line -> its changes in the archive
    out = Plan(rel, f"{rel.split('/')[0]}/archive/{today.year}.md", text, "")

    def merge(into: Entry, other: Entry, reason: str, add_counts: bool) -> None:
        now = {**_current(into), **changes.get(into.line, {})}
        was = {**_current(other), **changes.pop(other.line, {})}  # its own merges, if any
        count = was["reinforcement_count"]
        now["reinforcement_count"] = (
            now["reinforcement_count"] + count if add_counts
            else max(now["reinforcement_count"], count)
        )  # fmt: skip
        now["importance"] = max(now["importance"], was["importance"])
        dates = [d for d in (now["last_reinforced"], was["last_reinforced"]) if d]
        now["last_reinforced"] = max(dates) if dates else None
        changes[into.line] = {k: v for k, v in now.items() if v != getattr(into, k)}
        leaving[other.line] = {"status": "compacted", "compacted_into": into.id,
                               "archived": today.isoformat()}  # fmt: skip
        out.merged.append({"into": into.id, "from": other.id, "reason": reason})

    by_id: dict[str, list[Entry]] = {}
    for e in editable:  # the same id twice: one entry written twice
        by_id.setdefault(e.id, []).append(e)
    first: dict[str, Entry] = {}
    for entry_id, copies in by_id.items():
        keep = next((c for c in copies if c.status == "active"), copies[0])  # active wins
        first[entry_id] = keep
        for other in copies:
            if other is not keep:
                merge(keep, other, "same id", add_counts=False)
    active = [e for e in first.values() if e.status == "active"]
    sets = [words(e.text) for e in active]
    pairs = [
        (a, b) for a, b in near_duplicate_pairs(sets, NEAR_DUPLICATE)
        if _same_kind(active[a], active[b]) and _same_polarity(sets[a], sets[b])
    ]  # fmt: skip
    for group in _clusters(len(active), pairs):
        members = sorted((active[i] for i in group),
                         key=lambda e: (-prominence(e.meta(), today), e.line))  # fmt: skip
        for other in members[1:]:
            merge(members[0], other, "near duplicate", add_counts=True)
    by_line = {e.line: e for e in editable}
    for line in leaving:
        out.archived.append({"id": by_line[line].id, "status": "compacted", "reason": "merged"})
    for e in editable:
        if e.status != "active" and e.line not in leaving:
            leaving[e.line] = {"archived": today.isoformat()}
            out.archived.append({"id": e.id, "status": e.status, "reason": e.status})
    if not leaving and not changes:
        return out
    out.new_text, out.moved = _rewrite(text, found, changes, leaving)
    out.archive_text = "\n".join(out.moved)
    return out


def rebase(p: Plan, planned: str, current: str) -> str | None:
    """The rewrite of a file planned when it held ``planned`` and holding ``current`` now:
    entries appended since (a concurrent learn) are kept after it. None when the file was
    changed otherwise: that is left for the next compaction."""
    if current == planned:
        return p.new_text
    if planned.endswith("\n") and current.startswith(planned):
        return p.new_text + current[len(planned) :]
    return None


# Not what an entry is: where it is, and what reinforcement changes in place (a session
# that ends between the plan and the rewrite must not make the entry a new one).
_NOT_IDENTITY = ("line", "end_line", "editable", "reinforcement_count", "last_reinforced")


def _archived(e: Entry) -> tuple[Any, ...]:
    """What makes two archived copies the same entry: all it holds but ``_NOT_IDENTITY``."""
    meta = e.meta()
    return (*(meta[k] for k in sorted(meta) if k not in _NOT_IDENTITY), e.text)


def add_to_archive(current: bytes | None, moved: list[str]) -> bytes:
    """The archive with the moved entries it does not already hold appended."""
    text = entries.decode(current)
    held = {_archived(e) for e in entries.parse("archive", text)[0]}
    fresh: list[str] = []
    for block in moved:
        found = entries.parse("archive", block)[0]
        if not found or _archived(found[0]) not in held:
            fresh.append(block)
            held.update(_archived(e) for e in found)
    if not fresh:
        return entries.encode(text)
    addition = "\n".join(fresh)
    if text:
        addition = ("" if text.endswith("\n") else "\n") + "\n" + addition
    return entries.encode(text + addition)


_NEGATIONS = frozenset({"not", "never", "no", "don", "dont", "doesn", "isn", "without", "avoid"})


def _same_kind(a: Entry, b: Entry) -> bool:
    """Only lessons of one type and standing are merged: a standing directive is never
    folded into an observation that happens to share its words."""
    return a.type == b.type and a.institutional == b.institutional


def _same_polarity(a: frozenset[str], b: frozenset[str]) -> bool:
    """ "Do X" and "do not X" share almost every word and mean the opposite."""
    return (a & _NEGATIONS) == (b & _NEGATIONS)


def _current(e: Entry) -> dict[str, Any]:
    return {"reinforcement_count": e.reinforcement_count, "importance": e.importance,
            "last_reinforced": e.last_reinforced}  # fmt: skip


def _rewrite(
    text: str, found: list[Entry], changes: dict[int, dict[str, Any]],
    leaving: dict[int, dict[str, Any]],
) -> tuple[str, list[str]]:  # fmt: skip
    """The file without the leaving entries and with the merged fields; their blocks.
    One pass over the entries, each edited in its own slice of lines."""
    lines = text.split("\n")
    kept: list[str] = lines[: found[0].line - 1] if found else lines
    moved: list[str] = []
    for n, e in enumerate(found):
        end = found[n + 1].line - 1 if n + 1 < len(found) else len(lines)
        own = lines[e.line - 1 : end]  # the entry and the blank lines after it
        if e.line in leaving:
            block = lines[e.line - 1 : e.end_line]
            entries.edit_lines(block, 1, leaving[e.line])
            moved.append("\n".join(block) + "\n")
            continue
        if changes.get(e.line):
            entries.edit_lines(own, 1, changes[e.line])
        kept += own
    new = "\n".join(kept)
    if text.endswith("\n") and not new.endswith("\n"):
        new += "\n"
    return new, moved
