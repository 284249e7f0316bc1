"""Every learning of a tier, in an order, without a query: what the inspector lists to
answer "which lesson is reinforced most" without guessing its words.

Order and metadata come from the index's in-memory mirror; the text of the entries
listed is read from their files (the source of truth: retired and compacted entries
have no chunk in the index to read it from)."""

from __future__ import annotations

from datetime import date
from typing import Any

from sidecar.disk.tiers import decode_text
from sidecar.learnings import entries
from sidecar.learnings.index import LearningsIndex
from sidecar.learnings.ranking import (
    ANY_STATUS,
    RECENT,
    REINFORCED,
    SCOPE_FACTORS,
    decay,
    prominence,
)
from sidecar.safety import scan_remembered


def sort_key(order: str) -> Any:
    """Best first for ``order``; ties by prominence, then by id (a stable page)."""
    if order == REINFORCED:
        return lambda e: (-e["reinforcement_count"], -e["prominence"], e["id"])
    if order == RECENT:
        return lambda e: (_neg_day(e["last_reinforced"] or e["created"]), -e["prominence"], e["id"])
    return lambda e: (-e["prominence"], -e["reinforcement_count"], e["id"])


def _neg_day(iso: str | None) -> int:
    """Newest first: a missing date sorts last."""
    return -date.fromisoformat(iso).toordinal() if iso else 0


def list_tier(
    index: LearningsIndex,
    tier: str,
    order: str,
    limit: int,
    status: str,
    kind: str | None,
    today: date,
) -> tuple[list[dict[str, Any]], int]:
    """(the first ``limit`` entries of the tier in ``order``, with their text; how many
    matched). Runs on an executor thread: it reads the listed entries' files."""
    matched: list[dict[str, Any]] = []
    for path, by_line in index.snapshot.by_line.items():
        for meta in by_line.values():
            if status != ANY_STATUS and meta["status"] != status:
                continue
            if kind and meta["type"] != kind:
                continue
            matched.append(_row(tier, path, meta, today))
    matched.sort(key=sort_key(order))
    picked = matched[:limit]
    texts: dict[tuple[str, int], str] = {}
    for path in {e["file"] for e in picked}:
        try:
            found, _ = entries.parse(path, decode_text((index.root / path).read_bytes()))
        except OSError:  # gone since it was indexed: the next sync drops it
            continue
        texts |= {(path, e.line): e.text for e in found}
    for e in picked:
        e["text"] = texts.get((e["file"], e["line"]), "")
        finding = scan_remembered(e["text"])
        if finding is not None:  # said, as a search hit says it; the MCP tool withholds it
            e["flagged"] = {"category": finding.category, "pattern": finding.pattern}
    return picked, len(matched)


def _row(tier: str, path: str, meta: dict[str, Any], today: date) -> dict[str, Any]:
    """An entry as listed: its metadata and the parts of its prominence."""
    return {
        "id": meta["id"], "tier": tier, "file": path, "line": meta["line"],
        "type": meta["type"], "domain": meta["domain"], "status": meta["status"],
        "importance": meta["importance"], "reinforcement_count": meta["reinforcement_count"],
        "last_reinforced": meta["last_reinforced"], "created": meta["created"],
        "institutional": meta["institutional"], "decay": round(decay(meta, today), 6),
        "prominence": round(prominence(meta, today), 6), "scope_factor": SCOPE_FACTORS[tier],
    }  # fmt: skip
