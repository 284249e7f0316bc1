"""What only the SQLite store does, on real database files; what every store does is in
``test_store_contract.py``, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sidecar.index.chunking import Chunk
from sidecar.index.store import FileState, Hit, IndexedFile, IndexStore, StoreStats
from sidecar.retrieval import query
from sidecar.retrieval.modes import SPARSE, SPARSE_CONTEXT_WEIGHT
from sidecar.retrieval.ranking import rank_tier
from sidecar.stores import sqlite as sqlite_store
from sidecar.stores.sqlite import SQLiteStore
from sidecar.stores.sqlite_schema import SCHEMA_VERSION


def item(
    path: str,
    *sections: tuple[str, str],
    size: int = 100,
    mtime_ns: int = 1,
    sha: str = "0" * 64,
    metadata: dict[str, object] | None = None,
) -> IndexedFile:
    """A file whose chunks are (heading, text) pairs, one line each."""
    chunks = [Chunk(i, i, h, t) for i, (h, t) in enumerate(sections, start=1)]
    return IndexedFile(path, FileState(size, mtime_ns, sha), metadata or {}, chunks)


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "index.sqlite"


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(db_path)
    try:
        yield s
    finally:
        s.close()


def fill(store: SQLiteStore) -> None:
    store.replace_file(item("a.md", ("Alpha", "kiwi kiwi kiwi mango"), ("Alpha > Two", "plain")))
    store.replace_file(item("b.md", ("Beta", "kiwi apple pear plum grape melon lime")))
    store.replace_file(item("c.md", ("Gamma", "nothing relevant here")))


# -- search --------------------------------------------------------------------


def test_replace_file_then_search_finds_it(store: SQLiteStore) -> None:
    store.replace_file(
        IndexedFile(
            "daily/2026-11-21.md",
            FileState(60, 5, "ab" * 32),
            {"title": "day"},
            [
                Chunk(1, 3, "2026-11-21", "# 2026-11-21\nintro"),
                Chunk(4, 5, "2026-11-21 > Database", "### Database\nWe moved billing to Postgres."),
            ],
        )
    )
    for i in range(3):
        store.replace_file(item(f"filler{i}.md", ("Other", "unrelated words only")))
    hits = store.search('"billing"', 10)
    assert len(hits) == 1
    (hit,) = hits
    assert hit.path == "daily/2026-11-21.md"
    assert (hit.start_line, hit.end_line) == (4, 5)
    assert hit.heading == "2026-11-21 > Database"
    assert hit.text == "### Database\nWe moved billing to Postgres."
    assert hit.score > 0


def test_search_with_no_match_is_empty(store: SQLiteStore) -> None:
    fill(store)
    assert store.search('"zeppelin"', 10) == []


def rows(store: SQLiteStore, path: str) -> dict[int, tuple[int, int, str, str]]:
    """id -> (start_line, end_line, heading, body) of every chunk row of one file."""
    got = store.db.reader().execute(
        "SELECT id, start_line, end_line, heading, body FROM chunks WHERE path = ?", (path,)
    )
    return {i: (s, e, h, b) for i, s, e, h, b in got}


def assert_fts_consistent(store: SQLiteStore) -> None:
    """FTS5 checks its index against the chunks table (raises if they disagree)."""
    with store.db.transaction() as conn:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def lines_item(path: str, *chunks: tuple[int, int, str]) -> IndexedFile:
    return IndexedFile(
        path, FileState(1, 1, "0" * 64), {}, [Chunk(a, b, "Log", t) for a, b, t in chunks]
    )


def test_replace_file_keeps_the_rows_of_unchanged_chunks(store: SQLiteStore) -> None:
    store.replace_file(lines_item("d.md", (1, 2, "alpha one"), (3, 4, "bravo two")))
    before = rows(store, "d.md")
    store.replace_file(
        lines_item("d.md", (1, 2, "alpha one"), (3, 5, "bravo two\ncharlie"), (6, 6, "delta"))
    )
    after = rows(store, "d.md")
    kept = [i for i, r in before.items() if r[2:] == ("Log", "alpha one")]
    assert len(kept) == 1 and after[kept[0]] == before[kept[0]]
    assert sorted(r[:2] for r in after.values()) == [(1, 2), (3, 5), (6, 6)]
    assert paths(store.search('"charlie"', 10)) == ["d.md"]
    assert paths(store.search('"delta"', 10)) == ["d.md"]
    assert_fts_consistent(store)


def test_replace_file_only_moves_chunks_whose_text_shifted_down(store: SQLiteStore) -> None:
    store.replace_file(lines_item("d.md", (1, 1, "alpha one"), (2, 3, "bravo two")))
    before = rows(store, "d.md")
    # Two lines inserted at the top: both old chunks keep their text, on new lines.
    store.replace_file(
        lines_item("d.md", (1, 2, "echo new"), (3, 3, "alpha one"), (4, 5, "bravo two"))
    )
    after = rows(store, "d.md")
    assert set(before) < set(after)  # the old rows (and their FTS entries) survive
    assert {after[i][3]: after[i][:2] for i in before} == {"alpha one": (3, 3), "bravo two": (4, 5)}
    hits = store.search('"bravo"', 10)
    assert [(h.start_line, h.end_line) for h in hits] == [(4, 5)]
    assert paths(store.search('"echo"', 10)) == ["d.md"]
    assert_fts_consistent(store)


def test_replace_file_keeps_identical_chunks_apart(store: SQLiteStore) -> None:
    # The pieces of one over-long line can be identical: each is a row of its own.
    store.replace_file(lines_item("d.md", (1, 1, "xxxx"), (1, 1, "xxxx"), (2, 2, "yankee")))
    assert len(rows(store, "d.md")) == 3
    store.replace_file(lines_item("d.md", (1, 1, "xxxx"), (1, 1, "xxxx"), (1, 1, "xxxx")))
    assert sorted(rows(store, "d.md").values()) == [(1, 1, "Log", "xxxx")] * 3
    assert store.stats().total_chunks == 3
    assert store.search('"yankee"', 10) == []
    assert_fts_consistent(store)


def test_replace_all_with_nothing_empties_the_index(store: SQLiteStore) -> None:
    fill(store)
    store.replace_all([])
    assert store.file_states() == {}
    assert store.search('"kiwi"', 10) == []


def test_explicit_fts5_syntax_works(store: SQLiteStore) -> None:
    fill(store)
    assert paths(store.search('"kiwi mango"', 10)) == ["a.md"]
    assert paths(store.search("kiwi NOT mango", 10)) == ["b.md"]
    assert paths(store.search("mang*", 10)) == ["a.md"]
    assert paths(store.search("heading: gamma", 10)) == ["c.md"]
    assert paths(store.search("body: gamma", 10)) == []


def test_porter_stemming(store: SQLiteStore) -> None:
    store.replace_file(item("a.md", ("Dog", "the dog runs every morning")))
    store.replace_file(item("b.md", ("Tests", "we run the tests nightly")))
    store.replace_file(item("c.md", ("Other", "nothing about that")))
    assert sorted(paths(store.search('"running"', 10))) == ["a.md", "b.md"]
    assert sorted(paths(store.search('"runs"', 10))) == ["a.md", "b.md"]


def test_diacritics_are_removed(store: SQLiteStore) -> None:
    store.replace_file(item("a.md", ("Café", "Meet at the café near the résumé office")))
    store.replace_file(item("b.md", ("Other", "tea house")))
    assert paths(store.search('"cafe"', 10)) == ["a.md"]
    assert paths(store.search('"resume"', 10)) == ["a.md"]
    assert paths(store.search('"CAFÉ"', 10)) == ["a.md"]


# -- bookkeeping ---------------------------------------------------------------


def test_stats(store: SQLiteStore) -> None:
    assert store.stats() == StoreStats(0, 0, 0, None)
    before = time.time()
    store.replace_file(item("a.md", ("A", "one"), ("A", "two"), size=10))
    store.replace_file(item("b.md", ("B", "three"), size=32))
    after = time.time()
    stats = store.stats()
    assert (stats.total_files, stats.total_chunks, stats.total_bytes) == (2, 3, 42)
    assert stats.indexed_at is not None
    assert before - 1 <= stats.indexed_at <= after + 1


def test_stats_are_counted_again_after_every_commit_by_any_connection(
    store: SQLiteStore, db_path: Path
) -> None:
    """Stats are cached per reader between commits; a commit by this store, a reset, or
    another process's connection shows in the next call."""
    store.replace_file(item("a.md", ("A", "one"), size=10))
    assert store.stats().total_files == 1
    assert store.stats().total_files == 1  # cached: nothing committed since
    store.add_files([item("b.md", ("B", "two"), size=5)])
    assert (store.stats().total_files, store.stats().total_chunks) == (2, 2)
    other = SQLiteStore(db_path)
    try:
        other.remove_files(["a.md"])
    finally:
        other.close()
    assert (store.stats().total_files, store.stats().total_bytes) == (1, 5)
    store.reset()
    assert store.stats() == StoreStats(0, 0, 0, None)


def test_file_states_and_touch(store: SQLiteStore) -> None:
    store.replace_file(item("a.md", ("A", "one"), size=3, mtime_ns=10, sha="a" * 64))
    store.replace_file(item("b.md", ("B", "two"), size=4, mtime_ns=20, sha="b" * 64))
    assert store.file_states() == {
        "a.md": FileState(3, 10, "a" * 64),
        "b.md": FileState(4, 20, "b" * 64),
    }
    store.touch_file("a.md", FileState(5, 99, "ignored"))
    assert store.file_state("a.md") == FileState(5, 99, "a" * 64)
    assert store.file_state("nope.md") is None
    assert paths(store.search('"one"', 10)) == ["a.md"]


def test_reopened_store_keeps_its_data(db_path: Path) -> None:
    s = SQLiteStore(db_path)
    fill(s)
    s.close()
    s = SQLiteStore(db_path)
    try:
        assert sorted(s.file_states()) == ["a.md", "b.md", "c.md"]
        assert paths(s.search('"mango"', 10)) == ["a.md"]
        assert s.stats().total_chunks == 4
    finally:
        s.close()


def assert_rebuilt_empty_and_usable(db_path: Path) -> None:
    s = SQLiteStore(db_path)
    try:
        assert s.stats() == StoreStats(0, 0, 0, None)
        assert s.file_states() == {}
        assert s.search('"mango"', 10) == []
        s.replace_file(item("new.md", ("New", "mango again")))
        assert paths(s.search('"mango"', 10)) == ["new.md"]
    finally:
        s.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION - 1, SCHEMA_VERSION + 1])
def test_wrong_schema_version_is_rebuilt_empty(db_path: Path, version: int) -> None:
    s = SQLiteStore(db_path)
    fill(s)
    s.close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    assert_rebuilt_empty_and_usable(db_path)


def test_garbage_file_is_rebuilt_empty(db_path: Path) -> None:
    s = SQLiteStore(db_path)
    fill(s)
    s.close()
    db_path.write_bytes(b"this is not a database\x00\xff" * 500)
    assert_rebuilt_empty_and_usable(db_path)


def test_file_with_valid_header_but_garbage_pages_is_rebuilt(db_path: Path) -> None:
    s = SQLiteStore(db_path)
    fill(s)
    s.close()
    data = db_path.read_bytes()
    db_path.write_bytes(data[:100] + bytes(range(256)) * ((len(data) - 100) // 256 + 1))
    assert_rebuilt_empty_and_usable(db_path)


def test_foreign_sqlite_database_is_rebuilt(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.execute("INSERT INTO unrelated VALUES (1)")
    conn.commit()
    conn.close()
    assert_rebuilt_empty_and_usable(db_path)


def test_a_health_check_keeps_sqlites_locks_against_another_process(db_path: Path) -> None:
    """``problem`` runs on every /healthz. Had it opened and closed the index file, the
    daemon would lose its POSIX locks on it, and the next process to close a connection
    (an offline ``sidecar status -p``) would take itself for the last user, checkpoint
    and delete the WAL the daemon is still writing."""
    s = SQLiteStore(db_path)
    try:
        fill(s)
        wal = db_path.with_name(db_path.name + "-wal")
        assert wal.exists()
        assert s.problem() is None
        other = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM files').fetchone(); c.close()"
        )
        subprocess.run([sys.executable, "-c", other, str(db_path)], check=True, timeout=60)
        assert wal.exists(), "another process's close took the daemon's WAL"
        s.replace_file(item("later.md", ("Later", "written after the check")))
        assert s.problem() is None
        conn = sqlite3.connect(db_path)  # what another process now reads
        try:
            assert ("later.md",) in conn.execute("SELECT path FROM files").fetchall()
        finally:
            conn.close()
    finally:
        s.close()
    assert s.problem() is None  # a health probe racing shutdown finds nothing to report


# -- a rebuild in batches ----------------------------------------------------------


def many(n: int) -> Iterator[IndexedFile]:
    for i in range(n):
        yield item(f"n{i}.md", ("Note", f"word{i} shared"), ("Note > More", f"second{i} line"))


def test_a_rebuild_of_many_batches_indexes_every_chunk_once(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch's rows are tokenized on a thread of their own while the next batch is
    read: every chunk ends up in the FTS5 index once, whichever batch it came in."""
    monkeypatch.setattr(sqlite_store, "_BULK_FILES", 3)
    fill(store)
    store.replace_all(many(11))  # four batches, the last one short
    assert store.stats().total_files == 11 and store.stats().total_chunks == 22
    assert len(store.search("shared", 50)) == 11
    for i in (0, 2, 3, 10):
        assert paths(store.search(f"word{i}", 5)) == [f"n{i}.md"]
        assert paths(store.search(f"second{i}", 5)) == [f"n{i}.md"]
    assert store.search('"kiwi"', 10) == []
    conn = store.db.writer  # FTS5 checks its index against the chunk rows it was fed
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    fts_rows = conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
    assert fts_rows == 22


def test_a_rebuild_failing_after_batches_were_handed_over_keeps_the_old_index(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "_BULK_FILES", 2)
    fill(store)

    def broken() -> Iterator[IndexedFile]:
        yield from many(5)  # two batches handed to the tokenizer, a third being read
        raise RuntimeError("disk went away")

    with pytest.raises(RuntimeError, match="disk went away"):
        store.replace_all(broken())
    assert sorted(store.file_states()) == ["a.md", "b.md", "c.md"]
    assert store.search("shared", 10) == []
    assert len(store.search('"kiwi"', 10)) == 2
    store.replace_all(many(4))  # the writer is free again, and the next rebuild whole
    assert store.stats().total_files == 4


def test_a_tokenizing_failure_fails_the_rebuild_and_keeps_the_old_index(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "_BULK_FILES", 2)
    fill(store)
    tokenize = SQLiteStore._tokenize
    calls: list[int] = []

    def failing(conn: sqlite3.Connection, last: int) -> None:
        calls.append(last)
        if len(calls) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        tokenize(conn, last)

    monkeypatch.setattr(SQLiteStore, "_tokenize", staticmethod(failing))
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.replace_all(many(7))
    assert len(calls) == 2  # no batch is handed over after a failed one
    assert sorted(store.file_states()) == ["a.md", "b.md", "c.md"]
    assert len(store.search('"kiwi"', 10)) == 2


# -- snapshot isolation ----------------------------------------------------------


def test_readers_see_the_old_index_while_replace_all_runs(store: SQLiteStore) -> None:
    fill(store)
    seen: dict[str, object] = {}

    with ThreadPoolExecutor(max_workers=1) as warm:
        # This thread already has its reader connection before the rebuild starts.
        assert paths(warm.submit(store.search, '"mango"', 10).result()) == ["a.md"]

        def during() -> None:
            seen["warm_old"] = paths(warm.submit(store.search, '"mango"', 10).result())
            seen["warm_new"] = paths(warm.submit(store.search, '"zebra"', 10).result())
            seen["warm_stats"] = warm.submit(store.stats).result().total_files

            def fresh() -> None:  # a thread that opens its reader mid-transaction
                seen["fresh_old"] = paths(store.search('"mango"', 10))
                seen["fresh_new"] = paths(store.search('"zebra"', 10))

            t = threading.Thread(target=fresh)
            t.start()
            t.join()

        def items() -> Iterator[IndexedFile]:
            yield item("new1.md", ("New", "zebra one"))
            during()
            yield item("new2.md", ("New", "zebra two"))

        store.replace_all(items())
        assert seen == {
            "warm_old": ["a.md"],
            "warm_new": [],
            "warm_stats": 3,
            "fresh_old": ["a.md"],
            "fresh_new": [],
        }
        # Once committed, the same reader sees the new index.
        assert warm.submit(store.search, '"mango"', 10).result() == []
        assert sorted(paths(warm.submit(store.search, '"zebra"', 10).result())) == [
            "new1.md",
            "new2.md",
        ]


def own_and_near(store: IndexStore) -> None:
    """``wombat`` in one chunk's own text, and in another's context only; six fillers."""
    state = FileState(1, 1, "0" * 64)
    store.replace_file(IndexedFile("own.md", state, {}, [Chunk(1, 1, "N", "wombat here", "")]))
    store.replace_file(
        IndexedFile("near.md", state, {}, [Chunk(1, 1, "N", "other words", "wombat near")])
    )
    for i in range(6):
        store.replace_file(item(f"f{i}.md", ("N", f"filler {i}")))


def test_sparse_ranking_weighs_neighbouring_text_less_than_hybrid_s_pool(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite")
    own_and_near(store)
    planned = query.plan("wombat")
    assert planned is not None
    results, _ = rank_tier(store, "agent", planned, 10, SPARSE)
    expected = store.search(planned.match, 10, SPARSE_CONTEXT_WEIGHT)
    assert [r.score for r in results] == [h.score for h in expected]
    assert results[1].score < store.search(planned.match, 10)[1].score  # the pool's weight
    store.close()
