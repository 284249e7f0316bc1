"""The SQLite store's top-k path (``fts5_topk``): the rows and scores plain FTS5 gives,
on real FTS5 tables of random text with many ties."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.index.chunking import Chunk
from sidecar.index.store import FileState, IndexedFile
from sidecar.retrieval.query import or_of_terms
from sidecar.stores import fts5_topk
from sidecar.stores import sqlite as sqlite_store
from sidecar.stores.fts5 import or_operands
from sidecar.stores.sqlite import SQLiteStore

WEIGHTS = "2.0, 1.0, 0.25"
# Few words, some far more frequent than others: rows tie often, and rare words exist.
VOCAB = [f"w{i}" for i in range(24)]
FREQ = [1.0 / (i + 1) for i in range(len(VOCAB))]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(VOCAB, FREQ, k=words))


def _corpus(rng: random.Random, files: int) -> list[IndexedFile]:
    """Random chunks, some repeated word for word (exact ties), in all three columns."""
    out = []
    for f in range(files):
        chunks = []
        for line in range(1, rng.randint(2, 6)):
            heading = _text(rng, rng.randint(0, 2))
            body = _text(rng, rng.randint(1, 12))
            context = _text(rng, rng.randint(0, 8))
            chunks.append(Chunk(line, line, heading, body, context))
        out.append(IndexedFile(f"n{f}.md", FileState(1, 1, "0" * 64), {}, chunks))
    out += [IndexedFile(f"copy-{i.path}", i.state, {}, i.chunks) for i in out[:15]]
    return out


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    store = SQLiteStore(tmp_path_factory.mktemp("topk") / "index.sqlite")
    try:
        store.replace_all(_corpus(random.Random(5), 150))
        yield store.db.reader()
    finally:
        store.close()


def _plain(conn: sqlite3.Connection, match: str, limit: int) -> list[tuple[int, float]]:
    return conn.execute(
        f"SELECT rowid, bm25(chunks_fts, {WEIGHTS}) AS s FROM chunks_fts "
        "WHERE chunks_fts MATCH ? ORDER BY s, rowid LIMIT ?",
        (match, limit),
    ).fetchall()


def _queries(rng: random.Random, n: int) -> Iterator[str]:
    for _ in range(n):
        words = rng.sample(VOCAB, rng.randint(2, 7))
        if rng.random() < 0.3:
            words.append("absent")
        match = or_of_terms(words)
        if rng.random() < 0.2:  # a two-word phrase and a bare word among the operands
            match += f' OR "{words[0]} {words[1]}" OR {words[-1]}'
        yield match


def test_top_k_equals_plain_fts5_order_and_scores_on_random_corpora(
    conn: sqlite3.Connection,
) -> None:
    rng = random.Random(7)
    ties = 0
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    for match in _queries(rng, 60):
        for limit in (1, 3, 10, 40):
            answered = fts5_topk.top(conn, "chunks_fts", match, WEIGHTS, limit, min_rows=0)
            assert answered is not None
            canonical, ranked = answered
            assert sorted(or_operands(canonical) or []) == sorted(or_operands(match) or [])
            expected = _plain(conn, canonical, limit)
            assert ranked == expected, (match, limit)
            ties += len(expected) - len({s for _, s in expected})
    conn.set_trace_callback(None)
    assert ties > 50  # the corpus did exercise ties, broken by rowid
    # Both kinds of round ran: a phrase with later ones, and rows holding one phrase alone.
    assert any(" AND (" in s and " NOT (" in s for s in statements)
    assert any("+rowid IN" in s for s in statements)


def test_top_k_orders_phrases_rarest_first(conn: sqlite3.Connection) -> None:
    canonical, _ = fts5_topk.top(
        conn, "chunks_fts", '"w0" OR "w20" OR "absent"', WEIGHTS, 5, min_rows=0
    ) or ("", [])
    assert canonical == '"absent" OR "w20" OR "w0"'


def test_top_k_stops_before_scoring_every_phrase(conn: sqlite3.Connection) -> None:
    """The common words' rows are never all ranked: FTS5 is asked fewer rounds than there
    are phrases (each round one bm25 statement), yet the answer is plain FTS5's."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        match = or_of_terms(["w23", "w22", "w0", "w1", "w2"])
        answered = fts5_topk.top(conn, "chunks_fts", match, WEIGHTS, 3, min_rows=0)
    finally:
        conn.set_trace_callback(None)
    assert answered is not None
    rounds = [s for s in statements if "bm25" in s]
    assert 0 < len(rounds) < 5
    assert answered[1] == _plain(conn, answered[0], 3)


@pytest.mark.parametrize(
    "match",
    ['"a"', "a AND b", '"a" NOT "b"', "a*", "heading: a OR b", "NEAR(a b)", '"a" "b"', "a OR"],
)
def test_only_a_plain_or_of_phrases_takes_the_path(conn: sqlite3.Connection, match: str) -> None:
    assert fts5_topk.top(conn, "chunks_fts", match, WEIGHTS, 5, min_rows=0) is None


def test_a_small_table_is_ranked_the_plain_way(conn: sqlite3.Connection) -> None:
    assert fts5_topk.top(conn, "chunks_fts", '"w1" OR "w2"', WEIGHTS, 5) is None


def test_or_operands_keep_each_phrase_as_written() -> None:
    assert or_operands('"o\'brien" OR kiwi OR "say ""hi"""') == [
        '"o\'brien"',
        "kiwi",
        '"say ""hi"""',
    ]
    assert or_operands('"unterminated OR b') is None


def test_the_store_answers_through_the_path_as_plain_fts5_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite")
    try:
        store.replace_all(_corpus(random.Random(9), 60))
        match = or_of_terms(["w3", "w9", "w15", "w0"])
        plain = store.search(match, 8, 0.25)
        monkeypatch.setattr(fts5_topk, "MIN_ROWS", 0)
        statements: list[str] = []
        store.db.reader().set_trace_callback(statements.append)
        fast = store.search(match, 8, 0.25)
        store.db.reader().set_trace_callback(None)
    finally:
        store.close()
    assert any(" NOT (" in s for s in statements)  # the rounds ran
    assert [(h.path, h.start_line) for h in fast] == [(h.path, h.start_line) for h in plain]
    assert [h.score for h in fast] == pytest.approx([h.score for h in plain], rel=1e-12)


def test_phrase_counts_are_kept_until_a_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search counts each of its words once per snapshot: the next search reuses the
    counts, and a commit (which changes them) drops them."""
    monkeypatch.setattr(fts5_topk, "MIN_ROWS", 0)
    store = SQLiteStore(tmp_path / "index.sqlite")
    try:
        store.replace_all(_corpus(random.Random(3), 20))
        match = or_of_terms(["w2", "w7", "rare"])
        statements: list[str] = []
        conn = store.db.reader()
        conn.set_trace_callback(statements.append)
        store.search(match, 5, 0.25)
        first = sum("count(*)" in s for s in statements)
        statements.clear()
        store.search(match, 5, 0.25)
        again = sum("count(*)" in s for s in statements)
        extra = IndexedFile("new.md", FileState(1, 1, "0" * 64), {}, [Chunk(1, 1, "", "rare rare")])
        store.replace_file(extra)
        statements.clear()
        hits = store.search(match, 5, 0.25)
        after = sum("count(*)" in s for s in statements)
        conn.set_trace_callback(None)
    finally:
        store.close()
    assert (first, again, after) == (3, 0, 3)
    assert hits[0].path == "new.md"  # counted afresh: the new rows are ranked


def test_phrase_counts_of_an_index_that_never_commits_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only index is asked about ever new words: the counts kept for them start
    again past the bound instead of growing, and searches still rank as before."""
    monkeypatch.setattr(fts5_topk, "MIN_ROWS", 0)
    monkeypatch.setattr(sqlite_store, "MAX_PHRASE_COUNTS", 8)
    store = SQLiteStore(tmp_path / "index.sqlite")
    try:
        store.replace_all(_corpus(random.Random(4), 30))
        conn = store.db.reader()
        sizes = []
        for n in range(12):
            store.search(or_of_terms([f"w{n}", f"w{n + 1}", f"unseen{n}"]), 5, 0.25)
            sizes.append(len(store._counts(conn)))
        hits = store.search(or_of_terms(["w2", "w3"]), 5, 0.25)
        monkeypatch.setattr(fts5_topk, "MIN_ROWS", 10**9)
        plain = store.search(or_of_terms(["w2", "w3"]), 5, 0.25)
    finally:
        store.close()
    assert max(sizes) <= 8 + 3 and sizes[-1] < max(sizes)  # started again, never grew on
    assert [(h.path, h.start_line) for h in hits] == [(h.path, h.start_line) for h in plain]


def test_row_count_reads_fts5_s_own_record(conn: sqlite3.Connection) -> None:
    (chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    assert chunks > 127  # a varint of two bytes at least
    assert fts5_topk.row_count(conn, "chunks_fts") == chunks


def test_an_unreadable_row_count_ranks_the_plain_way(tmp_path: Path) -> None:
    """A record that does not decode costs the fast path, never the search."""
    store = SQLiteStore(tmp_path / "index.sqlite")
    try:
        store.replace_all(_corpus(random.Random(4), 10))
        with store.db.transaction() as writer:
            writer.execute("UPDATE chunks_fts_data SET block = x'8181' WHERE id = 1")
        conn = store.db.reader()
        assert fts5_topk.row_count(conn, "chunks_fts") is None
        match = or_of_terms(["w1", "w2"])
        assert fts5_topk.top(conn, "chunks_fts", match, WEIGHTS, 5, min_rows=0) is None
    finally:
        store.close()


@pytest.mark.parametrize("min_rows", [0, None])  # the top-k rounds, and the plain statement
def test_a_commit_after_ranking_never_pairs_a_score_with_another_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_rows: int | None
) -> None:
    """A chunk ranked and then replaced by a commit before its text is read: its id goes
    to the new chunk (one past the largest), which must not come back under the old
    chunk's score. The search reads its chunks from the snapshot it ranked."""
    if min_rows is not None:
        monkeypatch.setattr(fts5_topk, "MIN_ROWS", min_rows)
    store = SQLiteStore(tmp_path / "index.sqlite")
    state = FileState(1, 1, "0" * 64)
    try:
        store.replace_all(
            [
                IndexedFile("a.md", state, {}, [Chunk(1, 1, "", "kiwi mango")]),
                IndexedFile("b.md", state, {}, [Chunk(1, 1, "", "kiwi papaya")]),
            ]
        )
        read = store.hits

        def edited_meanwhile(ids: object) -> object:
            # The writer thread commits b.md's new text between ranking and reading.
            edit = IndexedFile("b.md", state, {}, [Chunk(1, 1, "", "walnut only")])
            writer = threading.Thread(target=store.replace_file, args=(edit,))
            writer.start()
            writer.join()
            return read(ids)  # type: ignore[arg-type]

        monkeypatch.setattr(store, "hits", edited_meanwhile)
        found = store.search(or_of_terms(["kiwi", "papaya"]), 5, 0.25)
    finally:
        store.close()
    assert found, "the snapshot ranked held both chunks"
    assert all("kiwi" in h.text for h in found), [h.text for h in found]


def test_an_or_of_many_phrases_is_ranked_the_plain_way(conn: sqlite3.Connection) -> None:
    """Each round reads every phrase's list (the later ones ORed, the earlier NOTed), so
    rounds cost about a plain ranking each and a long query (a pasted prompt) paid that
    many times over. Up to ``MAX_PHRASES`` the path runs; past it, plain FTS5 ranks."""
    words = [f"w{i}" for i in range(len(VOCAB))] + [f"absent{i}" for i in range(40)]
    short = or_of_terms(words[: fts5_topk.MAX_PHRASES])
    assert fts5_topk.top(conn, "chunks_fts", short, WEIGHTS, 5, min_rows=0) is not None
    for n in (fts5_topk.MAX_PHRASES + 1, len(words)):
        long = or_of_terms(words[:n])
        assert fts5_topk.top(conn, "chunks_fts", long, WEIGHTS, 5, min_rows=0) is None
