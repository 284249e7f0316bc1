"""Hostile text against the readers of statements: long runs of near-matches must be read in
time that grows with the text, and odd figures or marks read as values, never an error."""

from __future__ import annotations

from sidecar.journal.change import values


def test_a_long_snake_case_word_with_a_mark_is_read_without_backtracking() -> None:
    # "a_a_..._a+": the identifier pattern could split each "_a" two ways, 2^n tries
    # before failing on the "+"; read in one pass it is no identifier, and no name.
    assert values("a_" * 2000 + "+") == {"name": frozenset()}
    assert values("x " + "cfg_" * 500 + "v+ y") == {"name": frozenset()}
    # what it reads as identifiers is unchanged
    for word in ("db_main", "a__b", "api.internal", "cdn.example/assets", "eu-west-central"):
        assert values(f"Moved to {word} now.")["identifier"] == {word}
    for word in ("a_", "db.", "two-week"):
        assert "identifier" not in values(f"Moved to {word} now")
