"""Front matter: the YAML block a markdown note may open with, read as metadata.

Most front matter is flat ``key: value`` lines, read here without YAML (whose Python
constructor costs more than chunking the whole note); anything else goes to YAML.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import yaml

from sidecar import strict_yaml

_FRONT_MATTER_SCAN = 200  # lines; a front matter block longer than this is body text
# The common front matter, flat ``key: value`` lines, read without YAML (see
# ``_flat_front_matter``): ASCII only, and only what YAML's resolvers read one way.
_FLAT_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): (.+)")
_FLAT_TEXT = re.compile(r"[A-Za-z](?:[A-Za-z0-9 _.'()/-]*[A-Za-z0-9_.'()/-])?")
_FLAT_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_FLAT_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_FLAT_INT = re.compile(r"0|[1-9][0-9]*")
# Words YAML 1.1 reads as booleans or null, whatever their case here: left to YAML.
_FLAT_RESERVED = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})


def parse_front_matter(lines: list[str]) -> tuple[int, dict[str, Any]]:
    """Return (number of front matter lines, metadata). Invalid YAML is kept as no metadata
    but its lines are still excluded from the body, since they are clearly not prose."""
    if not lines or lines[0].strip() != "---":
        return 0, {}
    for i in range(1, min(len(lines), _FRONT_MATTER_SCAN)):
        if lines[i].strip() in ("---", "..."):
            flat = _flat_front_matter(lines, 1, i)
            if flat is not None:
                return i + 1, flat
            try:
                data = strict_yaml.load("\n".join(lines[1:i]))  # no anchors, no aliases
            except (yaml.YAMLError, ValueError, RecursionError):
                data = None  # e.g. "date: 2026-13-45" fails in the timestamp constructor
            return i + 1, data if isinstance(data, dict) else {}
    return 0, {}


def _flat_value(text: str) -> Any:
    """``text`` as YAML reads a plain scalar or flow list, for the forms where that is
    certain; ``_FLAT_RESERVED`` (never its value) when it is not."""
    if _FLAT_TEXT.fullmatch(text):
        return _FLAT_RESERVED if text.lower() in _FLAT_RESERVED else text
    if _FLAT_INT.fullmatch(text):
        return int(text)
    m = _FLAT_DATE.fullmatch(text)
    if m:
        try:
            return datetime.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:  # YAML fails on it too; let it decide what that means
            return _FLAT_RESERVED
    if text[:1] == "[" and text[-1:] == "]":
        items = text[1:-1].split(", ") if len(text) > 2 else []
        for item in items:
            if not _FLAT_WORD.fullmatch(item) or item.lower() in _FLAT_RESERVED:
                return _FLAT_RESERVED
        return items
    return _FLAT_RESERVED


def _flat_front_matter(lines: list[str], lo: int, hi: int) -> dict[str, Any] | None:
    """lines[lo:hi] read as YAML would if every one is a flat ``key: value`` line of the
    forms ``_flat_value`` knows (a title, a date, a list of tags); None for anything
    else, which YAML reads. YAML's Python constructor costs more than chunking the
    whole note, and most front matter is this simple."""
    data: dict[str, Any] = {}
    for i in range(lo, hi):
        m = _FLAT_LINE.fullmatch(lines[i])
        if m is None:
            return None
        key = m[1]
        if key in data or key.lower() in _FLAT_RESERVED:
            return None
        value = _flat_value(m[2])
        if value is _FLAT_RESERVED:
            return None
        data[key] = value
    return data
