"""Top-k search on the PostgreSQL store (``pg_topk``) gives exactly the exhaustive BM25
answer: on random corpora, after every kind of write, as the average length drifts
away from the one impacts were computed against, and after a migration from the
schema before impacts existed."""

from __future__ import annotations

import logging
import random
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sidecar.index.chunking import Chunk
from sidecar.index.store import FileState, IndexedFile, text_key
from sidecar.stores import pg_topk
from sidecar.stores.pg_pack import decode
from sidecar.stores.pg_schema import BLOCK, LATEST, MIGRATIONS, postings_function
from sidecar.stores.pg_search import SEARCH_WORDS, norm, search_sql
from sidecar.stores.pg_topk import _sum as sum_
from sidecar.stores.postgres import DEFAULT_WEIGHTS, PostgresStore
from tests.pg_server import namespace

# A Zipf-like vocabulary: a few words in most chunks, many in few (plenty of ties).
WORDS = [f"w{n}x" for n in range(60)]
ZIPF = [1 / (n + 1) for n in range(len(WORDS))]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, ZIPF, k=n))


def note(rng: random.Random, i: int, long: bool = False) -> IndexedFile:
    """One chunk per file, named in insertion (so id) order."""
    scale = 8 if long else 1
    chunk = Chunk(1, 1, text(rng, rng.randint(0, 3)), text(rng, scale * rng.randint(1, 30)),
                  text(rng, rng.randint(0, 10)))  # fmt: skip
    return IndexedFile(f"n{i:05d}.md", FileState(1, 1, "0" * 64), {}, [chunk])


def queries(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.choices(WORDS, k=rng.randint(1, 6)) + (
            ["absentword"] if rng.random() < 0.2 else []
        )
        out.append(" OR ".join(f'"{w}"' for w in words))
    return out


def exhaustive(
    url: str, ns: str, match: str, k: int, context: float | None = None
) -> list[tuple[str, float]]:
    """Every match scored by the exhaustive query, then the first ``k`` by score (to 9
    digits: the two paths sum in different orders) and id (one chunk per path)."""
    query = search_sql(match, ns, 10**6, context)
    assert query is not None
    sql, params = query
    assert sql == SEARCH_WORDS
    with psycopg.connect(url) as conn:
        rows = conn.execute(sql, params).fetchall()
        ids = dict(conn.execute("SELECT path, id FROM chunks WHERE namespace = %s", (ns,)))
    ranked = sorted(
        ((r[0], float(r[5])) for r in rows), key=lambda r: (-float(f"{r[1]:.9g}"), ids[r[0]])
    )
    return ranked[:k]


def agree(store: PostgresStore, url: str, match: str, k: int, context: float | None = None) -> None:
    got = [(h.path, h.score) for h in store.search(match, k, context_weight=context)]
    want = exhaustive(url, store.namespace, match, k, context)
    assert [p for p, _ in got] == [p for p, _ in want], (match, got, want)
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9), match


def took_top_k(url: str, ns: str, match: str, context: float | None = None) -> bool:
    query = search_sql(match, ns, 10, context)
    assert query is not None
    with psycopg.connect(url, autocommit=True) as conn:
        return pg_topk.search(conn, ns, query[1], DEFAULT_WEIGHTS, 10) is not None


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url, namespace("topk"))
    try:
        yield s
    finally:
        s.close()


def stats(url: str, ns: str) -> tuple[float | None, float]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT impact_avgdl, tokens::float8 / chunks FROM namespace_stats "
            "WHERE namespace = %s",
            (ns,),
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def live_postings(url: str, ns: str) -> dict[str, int]:
    """Each term's postings in the blocks, the dead chunks' left out."""
    with psycopg.connect(url) as conn:
        return dict(conn.execute(
            "SELECT b.lexeme, count(*) FROM blocks AS b, sidecar_postings(b.postings) AS u "
            "WHERE b.namespace = %(ns)s AND NOT EXISTS (SELECT FROM dead AS d "
            "WHERE d.namespace = %(ns)s AND d.chunk_id = u.chunk_id) GROUP BY b.lexeme",
            {"ns": ns},
        ).fetchall())  # fmt: skip


def terms_agree(url: str, ns: str) -> None:
    """The document frequencies the writes keep are the live postings' counts, and every
    chunk's postings and length are those of its tsvector."""
    with psycopg.connect(url) as conn:
        kept = dict(
            conn.execute(
                "SELECT lexeme, df FROM terms WHERE namespace = %s AND df > 0", (ns,)
            ).fetchall()
        )
        assert conn.execute("SELECT count(*) FROM terms WHERE df < 0").fetchone() == (0,)
        # a chunk's length is every position of its tsvector
        assert conn.execute(
            "SELECT count(*) FROM chunks WHERE namespace = %s AND doc_len <> "
            "(SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(tsv))",
            (ns,),
        ).fetchone() == (0,)
        from_chunks = dict(conn.execute(
            "SELECT u.lexeme, count(*) FROM chunks AS c, unnest(c.tsv) AS u "
            "WHERE c.namespace = %s GROUP BY 1", (ns,)
        ).fetchall())  # fmt: skip
    assert kept == live_postings(url, ns) == from_chunks


def blocks_of(url: str, ns: str) -> tuple[int, int, int]:
    """(blocks, blocks short of a full one, dead chunks) in the namespace."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE n < %s), "
            "(SELECT count(*) FROM dead WHERE namespace = %s) FROM blocks WHERE namespace = %s",
            (BLOCK, ns, ns),
        ).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize("rounds", ["whole", "probing", "walking"])
def test_top_k_equals_exhaustive_bm25_on_random_corpora(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch, rounds: str
) -> None:
    probed = []
    monkeypatch.setattr(pg_topk, "_sum", lambda parts: probed.append(1) or sum_(parts))
    if rounds == "whole":  # every term's first read is all its blocks, whatever its IDF
        monkeypatch.setattr(pg_topk, "MIN_BATCH", pg_topk.FIRST_BATCH)
    else:  # many short rounds: walks and probes stop part way through
        monkeypatch.setattr(pg_topk, "FIRST_BATCH", 2)
        monkeypatch.setattr(pg_topk, "MIN_BATCH", 1)
        monkeypatch.setattr(pg_topk, "PROBE_BATCH", 1)
        # probing every open candidate at once, or leaving most to the walk
        monkeypatch.setattr(pg_topk, "WALK_BEFORE_PROBING", 10**9 if rounds == "probing" else 8)
    rng = random.Random(34)
    store.replace_all(note(rng, i) for i in range(400))  # a bulk build: COPY
    assert all(took_top_k(pg_url, store.namespace, q) for q in queries(rng, 5))
    for q in queries(rng, 40):
        agree(store, pg_url, q, rng.choice([1, 3, 10, 25]))
    # other context weights than the impacts' (sparse search's 0.25; and above it, where
    # the bounds are scaled up)
    assert took_top_k(pg_url, store.namespace, '"w1x" OR "w2x"', 0.25)
    for q in queries(rng, 20):
        agree(store, pg_url, q, rng.choice([1, 10]), rng.choice([0.0, 0.25, 0.9, 3.0]))
    terms_agree(pg_url, store.namespace)
    # each way ran: no probe when every block is read in one round, some when the walk
    # settles most candidates, many more when every open candidate is probed
    n = len(probed)
    assert {"whole": n == 0, "walking": 0 < n <= 100, "probing": n > 100}[rounds], n


def test_writes_keep_top_k_exact_as_the_average_length_drifts(
    store: PostgresStore, pg_url: str
) -> None:
    rng = random.Random(35)
    for i in range(60):  # one file at a time: the arrays path
        store.replace_file(note(rng, i))
    a0, _ = stats(pg_url, store.namespace)
    checks = queries(rng, 15)
    # Updates (changed chunks rewritten), deletions, and long chunks that drag the
    # average length far above the one impacts were computed against.
    for i in rng.sample(range(60), 20):
        store.replace_file(note(rng, i))
    store.remove_files([f"n{i:05d}.md" for i in rng.sample(range(60), 15)])
    assert blocks_of(pg_url, store.namespace)[2] > 0  # tombstones, the blocks kept
    store.add_files(note(rng, i, long=True) for i in range(60, 300))
    drifted, avgdl = stats(pg_url, store.namespace)
    assert drifted == a0 and avgdl > 1.5 * a0  # not yet recomputed: the bound carries it
    for q in checks:
        agree(store, pg_url, q, rng.choice([1, 5, 10]))
    terms_agree(pg_url, store.namespace)
    store.optimize()  # the maintenance pass recomputes impacts past the drift limit
    fresh, avgdl = stats(pg_url, store.namespace)
    assert fresh == pytest.approx(avgdl)
    # and packs the blocks: at most one short block per term, no dead chunk left
    _, small, dead = blocks_of(pg_url, store.namespace)
    assert dead == 0 and small <= len(live_postings(pg_url, store.namespace))
    terms_agree(pg_url, store.namespace)
    for q in checks:
        agree(store, pg_url, q, 10)
    store.reset()
    assert store.search(checks[0], 10) == []
    store.replace_file(note(rng, 1000))  # an emptied namespace takes the new average
    assert stats(pg_url, store.namespace)[0] != fresh
    agree(store, pg_url, '"w0x" OR "w1x"', 1)


def test_queries_top_k_cannot_answer_are_answered_exhaustively(
    store: PostgresStore, pg_url: str
) -> None:
    rng = random.Random(36)
    store.replace_all(note(rng, i) for i in range(50))
    assert not took_top_k(pg_url, store.namespace, "w1x*")  # impacts are per lexeme
    agree(store, pg_url, "w1x* OR w2x", 5)
    for match in ['"w1x w2x"', "heading: w3x", "w1x AND w2x"]:  # filtered: never top-k
        query = search_sql(match, store.namespace, 5, None)
        assert query is not None and "tsq" in query[1]
        assert store.search(match, 5)
    # weight on a column the impacts leave out: no bound from them
    query = search_sql('"w1x" OR "w2x"', store.namespace, 5, 0.9)
    assert query is not None
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert pg_topk.search(conn, store.namespace, query[1], (2.0, 1.0, 0.0), 5) is None
    # An impact average that is no length (a hand edit): answered exhaustively until
    # the maintenance pass recomputes impacts.
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "UPDATE namespace_stats SET impact_avgdl = 0 WHERE namespace = %s", (store.namespace,)
        )
    assert not took_top_k(pg_url, store.namespace, '"w1x"')
    agree(store, pg_url, '"w1x" OR "w2x"', 5)
    store.optimize()
    assert took_top_k(pg_url, store.namespace, '"w1x"')
    agree(store, pg_url, '"w1x" OR "w2x"', 5)


def old_insert(conn: psycopg.Connection[Any], ns: str, rng: random.Random, n: int) -> None:
    """Chunks and postings as the schema before impacts (version 5) wrote them."""
    for i in range(n):
        c = note(rng, i).chunks[0]
        conn.execute(
            """
            WITH ins AS (
                INSERT INTO chunks (namespace, path, start_line, end_line, heading, body,
                                    context, hash, tsv, doc_len)
                SELECT %(ns)s, %(path)s, 1, 1, %(h)s, %(b)s, %(c)s, %(hash)s, v.tsv,
                       (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v.tsv) u)
                FROM (SELECT setweight(to_tsvector('sidecar_text', %(h)s), 'A')
                             || setweight(to_tsvector('sidecar_text', %(b)s), 'B')
                             || setweight(to_tsvector('sidecar_text', %(c)s), 'C') AS tsv) v
                RETURNING id, tsv, doc_len
            )
            INSERT INTO postings (namespace, lexeme, chunk_id, tf_heading, tf_body, tf_context,
                                  doc_len)
            SELECT %(ns)s, u.lexeme, ins.id, cardinality(array_positions(u.weights, 'A')),
                   cardinality(array_positions(u.weights, 'B')),
                   cardinality(array_positions(u.weights, 'C')), ins.doc_len
            FROM ins, LATERAL unnest(ins.tsv) AS u
            """,
            {"ns": ns, "path": f"n{i:05d}.md", "h": norm(c.heading), "b": norm(c.text),
             "c": norm(c.context), "hash": text_key(c.text)},
        )  # fmt: skip
        conn.execute(
            "INSERT INTO files VALUES (%s, %s, 1, 1, %s, '{}', 0)", (ns, f"n{i:05d}.md", "0" * 64)
        )


@pytest.mark.parametrize("since", [5, 6])
def test_migrating_packs_the_postings_in_blocks(
    pg_url: str, since: int, caplog: pytest.LogCaptureFixture
) -> None:
    """From before impacts (5) and from one row per posting (6, after deletions the
    triggers of that schema counted): the blocks hold exactly the live postings, packed,
    and top-k answers as the exhaustive query does. Each migration is logged as it starts,
    saying when it rewrites a table and everything waits for it."""
    name = f"premigration_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = urllib.parse.urlsplit(pg_url)._replace(path=f"/{name}").geturl()
    rng = random.Random(37)
    try:
        with psycopg.connect(url) as conn:
            conn.execute(
                "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for version, title, sql in MIGRATIONS[:since]:
                if version == 6:
                    old_insert(conn, "old", rng, 300)
                conn.execute(sql.encode())
                conn.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (version, title))
            if since == 5:
                old_insert(conn, "old", rng, 300)
            else:  # a deletion as schema 6 made it: postings first, counted down by trigger
                gone = rng.sample(range(1, 301), 40)
                conn.execute("DELETE FROM postings WHERE chunk_id = ANY(%s)", (gone,))
                conn.execute("DELETE FROM chunks WHERE id = ANY(%s)", (gone,))
        assert LATEST == 9
        before = stats(url, "old")[0] if since == 6 else None
        with caplog.at_level(logging.INFO, logger="sidecar.stores.pg_schema"):
            store = PostgresStore(url, "old")  # migrates
        said = [r for r in caplog.records if r.name == "sidecar.stores.pg_schema"]
        later = [v for v, _, _ in MIGRATIONS if v > since]
        assert [r.version for r in said] == later  # type: ignore[attr-defined]
        assert "rewrites" in said[-1].getMessage() and "wait" in said[-1].getMessage()
        try:
            a0, avgdl = stats(url, "old")
            # impacts computed by 6 are kept (the average since drifted by the deletions)
            assert a0 == pytest.approx(avgdl if before is None else before)
            terms_agree(url, "old")
            blocks, small, dead = blocks_of(url, "old")
            assert dead == 0 and small <= len(live_postings(url, "old")) < blocks
            with psycopg.connect(url) as conn:
                assert conn.execute("SELECT to_regclass('postings')").fetchone() == (None,)
            assert took_top_k(url, "old", '"w0x"')
            for q in queries(rng, 15):
                agree(store, url, q, rng.choice([1, 5, 10]))
            store.replace_file(note(rng, 500))  # and writes after it keep them
            for q in queries(rng, 5):
                agree(store, url, q, 10)
        finally:
            store.close()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_blocks_a_search_could_not_read_are_refused(store: PostgresStore, pg_url: str) -> None:
    """A block whose bytes are not its n postings, or whose bound is no number (a hand
    edit, another program's row), is refused by the table: searches never meet one."""
    rng = random.Random(38)
    store.replace_all(note(rng, i) for i in range(30))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for edit in (
            "postings = postings || int8send(999999::bigint)",
            "postings = substring(postings FROM 19)",
            "n = n + 1",
            "bound = 'NaN'",
            "bound = -1",
        ):
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute(
                    f"UPDATE blocks SET {edit} WHERE namespace = %s AND lexeme = 'w0x'",
                    (store.namespace,),
                )
    agree(store, pg_url, '"w0x" OR "w3x"', 5)


def test_a_common_term_is_read_only_as_far_as_it_can_change_the_answer(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the k-th best floor is above what a common word's unread blocks can add, its
    walk stops (a rarer word's goes on as far as it can change the answer), and the
    answer is still the exhaustive one."""
    rng = random.Random(39)

    def chunk(i: int) -> IndexedFile:
        words = text(rng, rng.randint(3, 12)).split()
        words += ["commonx"] if rng.random() < 0.4 else []
        words += ["rarex"] if i % 150 == 0 else []
        words += ["midx"] if rng.random() < 0.1 else []
        body = " ".join(rng.sample(words, len(words)))
        return IndexedFile(f"n{i:05d}.md", FileState(1, 1, "0" * 64), {},
                           [Chunk(1, 1, "", body, "")])  # fmt: skip

    store.replace_all(chunk(i) for i in range(3000))
    read: Counter[int] = Counter()
    add = pg_topk._Read.add

    def counted(self: Any, term: int, *arrays: bytes) -> None:
        read[term] += 1
        add(self, term, *arrays)

    monkeypatch.setattr(pg_topk._Read, "add", counted)
    monkeypatch.setattr(pg_topk, "FIRST_BATCH", 2)  # short rounds: a walk could go on
    monkeypatch.setattr(pg_topk, "MIN_BATCH", 1)
    with psycopg.connect(pg_url) as conn:
        blocks = dict(conn.execute(
            "SELECT lexeme, count(*) FROM blocks WHERE namespace = %s GROUP BY lexeme",
            (store.namespace,),
        ).fetchall())  # fmt: skip
    assert blocks["commonx"] >= 8
    for other in ("rarex", "midx"):  # lexemes in order: commonx, then the other
        read.clear()
        agree(store, pg_url, f'"commonx" OR "{other}"', 5)
        assert 0 < read[0] <= blocks["commonx"] // 2, (other, read, blocks)
        assert read[1] <= blocks[other]


def test_top_k_equals_exhaustive_at_the_edges(store: PostgresStore, pg_url: str) -> None:
    """One chunk; words none holds; k above every match; deleted chunks still in blocks."""
    store.replace_all([IndexedFile("one.md", FileState(1, 1, "0" * 64), {},
                                   [Chunk(1, 1, "", "w1x w1x w2x", "")])])  # fmt: skip
    for match in (
        '"w1x"',
        '"w1x" OR "absentword"',
        '"absentword"',
        '"w2x" OR "w1x"',
        '"w1x" OR "w1x"',
        '"the" OR "w2x"',
        '"the"',
    ):
        assert took_top_k(pg_url, store.namespace, match)
        agree(store, pg_url, match, 50)
    rng = random.Random(7)
    store.replace_all(note(rng, i) for i in range(60))
    store.remove_files([f"n{i:05d}.md" for i in range(0, 60, 3)])
    assert blocks_of(pg_url, store.namespace)[2] > 0  # dead chunks left in the blocks
    for match in ('"w40x"', '"w55x" OR "w58x"', '"w0x" OR "w1x" OR "absentword"', '"absentword"'):
        assert took_top_k(pg_url, store.namespace, match)
        agree(store, pg_url, match, 1000)


def test_postings_read_alike_in_numpy_and_in_sql_before_and_since_postgresql_18(
    store: PostgresStore, pg_url: str
) -> None:
    """A block's bytes give the same postings to numpy (a top-k walk), to the
    ``sidecar_postings`` this server got, and to the one a server before PostgreSQL 18
    gets (no bytea-to-integer cast): large ids, lengths past 16 bits, counts at int2's top."""
    rng = random.Random(41)
    store.replace_all(note(rng, i) for i in range(40))
    odd = [(2**40 + 5, 32767, 0, 1, 70000), (2**63 - 1, 0, 32767, 2, 2**31 - 1)]
    hex_form = postings_function(cast=False).replace(
        "CREATE FUNCTION sidecar_postings", "CREATE FUNCTION pg_temp.hex_postings"
    )
    literal = " || ".join(
        f"int8send({i}::int8) || int2send({h}::int2) || int2send({b}::int2) || "
        f"int2send({c}::int2) || int4send({d}::int4)"
        for i, h, b, c, d in odd
    )
    with psycopg.connect(pg_url) as conn:
        conn.execute(hex_form)
        blocks = [r[0] for r in conn.execute(
            "SELECT postings FROM blocks WHERE namespace = %s ORDER BY lexeme, bound, id",
            (store.namespace,),
        ).fetchall()] + [conn.execute(f"SELECT {literal}").fetchone()[0]]  # fmt: skip
        in_sql = {}
        for name in ("sidecar_postings", "pg_temp.hex_postings"):
            in_sql[name] = [
                tuple(row)
                for block in blocks
                for row in conn.execute(f"SELECT * FROM {name}(%s)", (block,)).fetchall()
            ]
    in_numpy = [tuple(p) for p in decode(blocks).tolist()]
    assert len(in_numpy) > len(blocks) + 2  # the store's blocks, more than one posting each
    assert in_numpy[-2:] == odd
    assert in_sql["sidecar_postings"] == in_sql["pg_temp.hex_postings"] == in_numpy
