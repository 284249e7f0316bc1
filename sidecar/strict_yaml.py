"""YAML front matter read as plain data: anchors, aliases and deep nesting are refused
before any cost.

An alias stands for an earlier node; ten aliases of ten aliases, seven levels deep, is a
few hundred bytes that anything walking the value (a field check, a JSON dump, an error
message) sees as ten million items. Nesting costs without one: libyaml's composer
recurses once a level (60,000 ``[`` kill the process with SIGSEGV) and its scanner slows
quadratically with flow depth. Front matter needs neither, so its parse events are read
first, a scan that stops at the first anchor, alias or level past ``MAX_DEPTH``, and
only plain data is built.
"""

from __future__ import annotations

from typing import Any

import yaml

# libyaml's loader is several times faster than the pure-Python one; indexing reads many.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_DEPTH = 32  # far beyond any field's value; far below what the composer's stack holds


class Refused(yaml.YAMLError):
    """Valid YAML, but not the plain data front matter is."""


def load(text: str) -> Any:
    """``yaml.safe_load`` of ``text``; ``Refused`` if it uses an anchor or an alias, or
    nests collections more than ``MAX_DEPTH`` deep."""
    depth = 0
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise Refused("anchors and aliases (& and *) are not allowed in front matter")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise Refused(f"values nested more than {MAX_DEPTH} deep are not allowed "
                              "in front matter")  # fmt: skip
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.load(text, Loader=LOADER)
