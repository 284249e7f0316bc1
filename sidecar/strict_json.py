"""JSON as RFC 8259 has it, for what the daemon reads from clients and from its own files.

Python's ``json`` reads ``NaN`` and ``Infinity``, reads a number beyond a double's range
as infinity, and keeps integers of any size; whatever reads them back in another
language (a JavaScript client, a jq pipeline) fails on the first two and turns the last
into infinity. A request holding one is refused; a line already on disk keeps its record
with such a number read as null, so nothing written by an older version is lost.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

_INT_LIMIT = 2**1024  # the first integer a double cannot hold


def loads(raw: bytes | str) -> Any:
    """``json.loads`` that raises ``ValueError`` for NaN, Infinity and out-of-range numbers."""
    return json.loads(raw, parse_constant=_not_json, parse_float=_finite, parse_int=_int)


def loads_stored(raw: bytes | str) -> Any:
    """``json.loads`` for lines on disk: NaN, Infinity and out-of-range floats read as null."""
    return json.loads(raw, parse_constant=lambda _: None, parse_float=_finite_or_none)


def _not_json(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _finite_or_none(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _int(text: str) -> int:
    value = int(text)
    if abs(value) >= _INT_LIMIT:
        raise ValueError(f"the number {text[:40]}... is out of range")
    return value
