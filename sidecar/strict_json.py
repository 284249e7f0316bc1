"""JSON as RFC 8259 has it, for what the daemon reads from clients and from its own files.

Python's ``json`` reads ``NaN`` and ``Infinity``, and reads a number beyond a double's
range as infinity; whatever reads them back in another language (a JavaScript client, a
jq pipeline) fails on them, so they are refused where they come in.
"""

from __future__ import annotations

import json
import math
from typing import Any


def loads(raw: bytes | str) -> Any:
    """``json.loads`` that raises ``ValueError`` for NaN, Infinity and out-of-range numbers."""
    return json.loads(raw, parse_constant=_not_json, parse_float=_finite)


def _not_json(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value
