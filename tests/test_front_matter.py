"""The flat front matter fast path reads exactly what YAML reads, or leaves it to YAML."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar import strict_yaml
from sidecar.index.front_matter import _flat_front_matter, parse_front_matter

KEYS = ["title", "date", "tags", "on", "No", "y", "_x", "Key_2", "null", "a-b", "1st", "é"]
TRICKY = [
    "yes", "No", "TRUE", "off", "null", "Null", "~", "y", "n", "0", "007", "12", "1_000",
    "3.5", ".inf", ".nan", "1e3", "0x1f", "2026-01-31", "2026-13-45", "2026-02-30", "2026-1-2",
    "1:30", "[]", "[a, b]", "[a,b]", "[ a ]", "[yes, b]", "[a, 1]", "a: b", "a #c", "'q'",
    '"q"', "a  b", "a ", " a", "&x", "*x", "!tag", "- a", "=", "<<", "It's", "x (y) / z.",
    "é", "\t", "a\r", "{a: 1}", "|", ">", "%x", "@x", "`x`",
]  # fmt: skip
ALPHABET = "aZ09 _-.,:#'\"()[]{}/!?&*|>%@`~=\té"


def yaml_reads(lines: list[str]) -> Any:
    try:
        data = strict_yaml.load("\n".join(lines))
    except (yaml.YAMLError, ValueError, RecursionError):
        data = None
    return data if isinstance(data, dict) else {}


values = st.one_of(
    st.sampled_from(TRICKY),
    st.text(ALPHABET, max_size=12),
    st.lists(
        st.sampled_from(["a", "db", "x-y", "no", "On", "a b", "1", "_z", "é"]), max_size=4
    ).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.dates().map(lambda d: d.isoformat()),
)
line = st.one_of(
    st.tuples(st.sampled_from(KEYS), values).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(["", "# note", "  nested: 1", "key:", "- item", "title:  two spaces"]),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(line, max_size=5))
def test_flat_front_matter_is_yaml_or_declines(lines: list[str]) -> None:
    flat = _flat_front_matter(lines, 0, len(lines))
    if flat is not None:
        assert repr(flat) == repr(yaml_reads(lines))
    # and the whole front matter parse is what YAML alone gives
    block = ["---", *lines, "---", "body"]
    assert repr(parse_front_matter(block)) == repr((len(lines) + 2, yaml_reads(lines)))


def test_flat_front_matter_takes_the_common_form() -> None:
    lines = ["title: Plan Review (v2)", "date: 2026-03-01", "tags: [db, billing-q1]", "count: 3"]
    flat = _flat_front_matter(lines, 0, len(lines))
    assert flat is not None
    assert repr(flat) == repr(yaml_reads(lines))


def test_flat_front_matter_declines_what_yaml_reads_otherwise() -> None:
    for text in ("on: 1", "a: yes", "a: 007", "a: 2026-13-45", "a: [no]", "a: x #c", "a: b\na: c"):
        assert _flat_front_matter(text.split("\n"), 0, text.count("\n") + 1) is None
