"""Where a fact becomes durable: ``facts/log.jsonl``, the append-only source of truth.

One JSON object a line, never edited:

    {"kind": "fact", "id", "category", "fact", "keywords", "source_episode_ids",
     "valid_at", "created_at", "job"}
    {"kind": "reinforce", "id", "episode_ids", "at", "job"}
    {"kind": "invalidate", "id", "at", "reason", "replaced_by"?, "job"?}
    {"kind": "consolidated", "episode_ids", "at", "job", "model", "prompt_tokens",
     "answer_tokens"}

Every record of one consolidation job, its "consolidated" marker included, is one
append (one ``write``, one ``fsync``): a crash leaves all of the job or none of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl

LOG = "facts/log.jsonl"
FACTS_MD = "facts/FACTS.md"
# The reference's eight: what a fact is about decides how it is shown and searched.
CATEGORIES = (
    "identity", "preference", "interest", "personality",
    "relationship", "experience", "goal", "guideline",
)  # fmt: skip
KINDS = ("fact", "reinforce", "invalidate", "consolidated")


def epoch(text: str) -> float:
    """An ISO 8601 time the sidecar wrote (``Z`` or an offset) as Unix time."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def encode(records: list[dict[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
    )


def append(root: Path, records: list[dict[str, Any]]) -> int:
    """All ``records`` durably, as one write; the log's new size."""
    (root / "facts").mkdir(exist_ok=True)
    return jsonl.append(root, LOG, encode(records))


def read(root: Path, offset: int = 0) -> Iterator[jsonl.Line]:
    """The log's whole lines from byte ``offset``; nothing if there is no log yet."""
    try:
        yield from jsonl.read_lines(root, LOG, offset)
    except FileNotFoundError:
        return
