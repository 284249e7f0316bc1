"""The operator model's file: ``users/<slug>.md`` in the crew tier (``identity`` names
it), one ``- key: value`` line a field under a fixed heading, so people can read and
edit it and a merge can parse it back."""

from __future__ import annotations

import re

CAP_BYTES = 1536  # the rendered model, as the reference caps it
MAX_VALUE_CHARS = 200
MAX_FIELDS = 40
HEADING = "# How this operator likes to work"
_FIELD_LINE = re.compile(r"^- ([a-z][a-z0-9_]{0,39}): (.*)$")
FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def parse(text: str) -> dict[str, str]:
    """The fields of a model file; lines that are not ``- key: value`` are not fields."""
    return {m.group(1): m.group(2) for m in map(_FIELD_LINE.match, text.splitlines()) if m}


def merge(current: dict[str, str], update: dict[str, str]) -> dict[str, str]:
    """Fields the update is silent about are kept; those it names take its value."""
    return {**current, **update}


def render(fields: dict[str, str]) -> str:
    lines = [HEADING, ""] + [f"- {k}: {v}" for k, v in sorted(fields.items())]
    return "\n".join(lines) + "\n"
