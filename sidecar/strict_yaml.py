"""YAML front matter read as plain data: anchors, aliases and deep nesting are refused
before any cost.

An alias stands for an earlier node; ten aliases of ten aliases, seven levels deep, is a
few hundred bytes that anything walking the value (a field check, a JSON dump, an error
message) sees as ten million items. Nesting costs without one: libyaml's composer
recurses once a level (60,000 ``[`` kill the process with SIGSEGV) and its scanner slows
quadratically with flow depth. Front matter needs neither, nor a base-60 number of
thousands of groups (built in quadratic time), so its parse events are read first, a
scan that stops at the first of these, and only plain data is built.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

# libyaml's loader is several times faster than the pure-Python one; indexing reads many.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_DEPTH = 32  # far beyond any field's value; far below what the composer's stack holds
# YAML 1.1 reads 1:59:59 as a base-60 integer, built digit by digit in quadratic time: a
# 16 MiB note of ``:59`` would take hours. A time of day needs three groups.
MAX_SEXAGESIMAL_GROUPS = 8
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+")
_INT = "tag:yaml.org,2002:int"


class Refused(yaml.YAMLError):
    """Valid YAML, but not the plain data front matter is."""


def load(text: str) -> Any:
    """``yaml.safe_load`` of ``text``; ``Refused`` if it uses an anchor or an alias, nests
    collections more than ``MAX_DEPTH`` deep or holds a base-60 number of many groups."""
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
        elif (
            isinstance(event, yaml.ScalarEvent)
            and (not event.style or event.tag == _INT)  # plain (None or "" by loader), or !!int
            and event.value.count(":") >= MAX_SEXAGESIMAL_GROUPS
            and _SEXAGESIMAL.fullmatch(event.value)
        ):
            raise Refused(f"a base-60 number of more than {MAX_SEXAGESIMAL_GROUPS} groups "
                          "(1:59:59:...) is not allowed in front matter; quote it")  # fmt: skip
    return yaml.load(text, Loader=LOADER)
