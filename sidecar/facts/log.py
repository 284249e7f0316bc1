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
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl
from sidecar.errors import ApiError

LOG = "facts/log.jsonl"
FACTS_MD = "facts/FACTS.md"
# The reference's eight: what a fact is about decides how it is shown and searched.
CATEGORIES = (
    "identity", "preference", "interest", "personality",
    "relationship", "experience", "goal", "guideline",
)  # fmt: skip
# What one fact may hold, in the LLM's answer and as read from the log: a 20 KB keyword
# once made one answer 8 MB of log. The whole answer is bounded too.
MAX_FACT_CHARS = 500
MAX_KEYWORDS = 12
MAX_KEYWORD_CHARS = MAX_ID_CHARS = 64  # a keyword; a fact's, an episode's or a job's id
MAX_REASON_CHARS = 600  # an operator's reason (500) with its "operator: " prefix
MAX_ANSWER_FACTS = 40
MAX_ANSWER_BYTES = 32 * 1024  # as compact JSON: a real job writes a few KB
MAX_SOURCES_SHOWN = 20  # an answer lists a fact's latest sources; ``sources`` counts them all


class FactsFull(ApiError):
    """Appending would take the log over its cap: nothing is written."""

    def __init__(self, cap: int) -> None:
        super().__init__(
            422,
            "facts_full",
            f"{LOG} would pass its cap of {cap:,} bytes; nothing was written and the "
            "episodes wait. Move the log aside (FACTS.md and the facts are rebuilt from "
            "what stays) or raise --cap-facts-log-bytes",
        )


def encode(records: list[dict[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
    )


def append(root: Path, records: list[dict[str, Any]], cap: int) -> int:
    """All ``records`` durably, as one write, if the log stays within ``cap`` bytes; the
    log's new size. Only the facts thread appends, so the size read is the size written to."""
    (root / "facts").mkdir(exist_ok=True)
    data = encode(records)
    try:
        size = os.lstat(root / LOG).st_size
    except FileNotFoundError:
        size = 0
    if size + len(data) > cap:
        raise FactsFull(cap)
    return jsonl.append(root, LOG, data)


def read(root: Path, offset: int = 0, first_line: int = 1) -> Iterator[jsonl.Line]:
    """The log's whole lines from byte ``offset`` (line ``first_line``); nothing if there
    is no log yet."""
    try:
        yield from jsonl.read_lines(root, LOG, offset, first_line)
    except FileNotFoundError:
        return
