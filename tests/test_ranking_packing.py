"""What a hit points at: the lines below the headings it opens with, never fewer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.index import indexer
from sidecar.index.store import Hit, IndexStore
from sidecar.retrieval.modes import SPARSE
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import body_only, rank_tier
from sidecar.stores import open_store

LOG = """# 2023-05-08

## Session 1 (1:56 pm on 8 May, 2023)
Melanie: I painted that lake sunrise last year.
Caroline: It is lovely, the colours are so calm.

## Setup
```bash
# install the heron toolchain first
pip install heron
```
"""


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[tuple[IndexStore, list[str]]]:
    daily = tmp_path / "memory" / "daily"
    daily.mkdir(parents=True)
    (daily / "2023-05-08.md").write_text(LOG)
    for day in range(10, 16):  # other days, so the shared words are rare enough to weigh
        (daily / f"2023-06-{day}.md").write_text(f"## Talk {day}\nCaroline: Pottery {day}.\n")
    store = open_store(tmp_path / "index.sqlite", "agent")
    store.replace_all(indexer.load_tree(tmp_path / "memory", 400))
    try:
        yield store, LOG.split("\n")
    finally:
        store.close()


def top(store: IndexStore, question: str) -> tuple[Hit, dict[str, Any]]:
    """The best hit as ranked, and as a search answer shows it."""
    planned = plan(question)
    assert planned is not None
    results, _ = rank_tier(store, "agent", planned, 5, SPARSE)
    return results[0].hit, results[0].to_json([])


def test_a_hit_points_below_the_headings_that_found_it(
    memory: tuple[IndexStore, list[str]],
) -> None:
    store, lines = memory
    # "session" is only in the heading: the heading's words still find the chunk.
    hit, shown = top(store, "session 1 sunrise")
    assert shown["file"] == "daily/2023-05-08.md"
    assert shown["heading"] == "2023-05-08 > Session 1 (1:56 pm on 8 May, 2023)"
    assert shown["date"] == "2023-05-08"
    assert shown["start_line"] == 4  # the first turn, not the two heading lines above it
    assert lines[shown["start_line"] - 1].startswith("Melanie: I painted")
    # Every line of the text is still in the range it points at; the heading is not.
    pointed = "\n".join(lines[shown["start_line"] - 1 : shown["end_line"]]).strip()
    assert pointed == shown["snippet"] == body_only(hit).text
    assert "#" not in pointed
    # The ranked hit itself keeps the range it was indexed with (vectors, entries).
    assert (hit.start_line, hit.text.split("\n")[0]) == (1, "# 2023-05-08")


def test_code_under_a_heading_stays(memory: tuple[IndexStore, list[str]]) -> None:
    store, lines = memory
    _, shown = top(store, "heron toolchain install")
    assert shown["heading"] == "2023-05-08 > Setup"
    # The "## Setup" line goes; the fence and the comment inside it are text and stay.
    assert lines[shown["start_line"] - 1] == "```bash"
    assert shown["snippet"].startswith("```bash\n# install the heron toolchain first\npip")


def test_a_comment_line_that_opens_a_chunk_is_not_its_heading() -> None:
    # The middle of a long code block, cut into chunks: its first line looks like a
    # heading but names none of the hit's breadcrumb.
    code = Hit("notes.md", 12, 13, "Setup", "# install the toolchain first\npip install", 1.0)
    assert body_only(code) == code


def test_a_hit_that_is_only_headings_keeps_them() -> None:
    bare = Hit("notes.md", 1, 3, "Plans > Later", "# Plans\n\n## Later", 1.0)
    assert body_only(bare) == bare


def test_blank_lines_stripped_before_a_heading_leave_the_range_early_not_late() -> None:
    # The chunk's lines 1-5 are "", "# Plans", "", "Ship it.", "": its text is stripped, so
    # the hit cannot see the first blank line; it starts on a line before "Ship it.", never
    # after it.
    hit = Hit("notes.md", 1, 5, "Plans", "# Plans\n\nShip it.", 1.0)
    assert body_only(hit) == Hit("notes.md", 3, 5, "Plans", "Ship it.", 1.0)
