"""Chunk context: neighbouring lines are indexed with a chunk, never charged to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.index import chunking
from sidecar.index.chunking import chunk_markdown
from sidecar.index.indexer import parse_note
from sidecar.index.store import FileState, Hit
from sidecar.retrieval.query import plan
from sidecar.retrieval.ranking import search_store
from sidecar.stores.sqlite import SQLiteStore

# Three short paragraphs in one section, then another section: each paragraph is its
# own chunk at a 60-character cap.
NOTE = """# Trip
Where should the offsite be held this year?

Lisbon won the vote, by a wide margin.

Flights are booked for the ninth.
# Budget
Spend stays under ten thousand.
"""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "index.sqlite")
    try:
        yield s
    finally:
        s.close()


def index(store: SQLiteStore, text: str, max_chars: int = 60) -> None:
    state = FileState(len(text), 1, "0" * 64)
    store.replace_file(parse_note("trip.md", text.encode(), state, max_chars))


def search(store: SQLiteStore, question: str) -> list[Hit]:
    planned = plan(question)
    assert planned is not None
    return search_store(store, planned, 10)[0]


def test_context_is_the_neighbouring_text_of_the_section_only() -> None:
    chunks = chunk_markdown(NOTE, 60).chunks
    by_text = {c.text: c for c in chunks}
    vote = by_text["Lisbon won the vote, by a wide margin."]
    assert vote.context == (
        "Where should the offsite be held this year?\nFlights are booked for the ninth."
    )
    # The heading and the next section are not context: a heading starts another topic.
    flights = by_text["Flights are booked for the ninth."]
    assert "Budget" not in flights.context and "Spend" not in flights.context
    assert "# Trip" not in by_text["# Trip\nWhere should the offsite be held this year?"].context


def test_context_is_cut_to_whole_words_near_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunking, "CONTEXT_CHARS", 20)
    chunks = chunk_markdown(NOTE, 60).chunks
    vote = next(c for c in chunks if c.text.startswith("Lisbon"))
    # the end of the line before and the start of the line after, no broken word
    assert vote.context == "be held this year?\nFlights are booked"


def test_no_context_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunking, "CONTEXT_CHARS", 0)
    assert all(c.context == "" for c in chunk_markdown(NOTE, 60).chunks)


def test_a_chunk_is_found_by_its_neighbours_words_and_charged_for_its_own_lines(
    store: SQLiteStore,
) -> None:
    index(store, NOTE)
    hits = search(store, "which city hosts the offsite?")
    # "offsite" is only in the question's line: the answer's chunk is found through its
    # context, and points at its own lines only (line 4 and the blank line after it).
    assert hits[0].start_line == 1  # the question itself
    answer = next(h for h in hits if "Lisbon" in h.text)
    assert (answer.start_line, answer.end_line) == (4, 5)
    assert "offsite" not in answer.text


def test_a_chunks_own_words_outrank_the_same_words_in_context(store: SQLiteStore) -> None:
    index(store, NOTE)
    hits = search(store, "Lisbon")
    assert hits[0].text == "Lisbon won the vote, by a wide margin."
    assert len(hits) == 3  # its neighbours too, through their context, below it


def test_an_edit_next_to_a_chunk_reindexes_its_context(store: SQLiteStore) -> None:
    index(store, NOTE)
    assert not any("Lisbon" in h.text for h in search(store, "Porto"))
    index(store, NOTE.replace("Flights are booked", "Porto trains are booked"))
    # the vote's chunk did not change, but its context did
    assert any("Lisbon" in h.text for h in search(store, "Porto"))
