"""YAML front matter read as plain data: anchors and aliases are refused before any cost.

An alias stands for an earlier node; ten aliases of ten aliases, seven levels deep, is a
few hundred bytes that anything walking the value (a field check, a JSON dump, an error
message) sees as ten million items. Front matter never needs them, so a block holding an
anchor or an alias is refused from its parse events, a linear scan, before it is built.
"""

from __future__ import annotations

from typing import Any

import yaml

# libyaml's loader is several times faster than the pure-Python one; indexing reads many.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Refused(yaml.YAMLError):
    """Valid YAML, but not the plain data front matter is."""


def load(text: str) -> Any:
    """``yaml.safe_load`` of ``text``; ``Refused`` if it uses an anchor or an alias."""
    if "&" in text or "*" in text:  # neither can appear without one of these
        for event in yaml.parse(text, Loader=LOADER):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise Refused("anchors and aliases (& and *) are not allowed in front matter")
    return yaml.load(text, Loader=LOADER)
