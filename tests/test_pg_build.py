"""Bulk writes on the PostgreSQL store (``pg_bulk``): chunks read into lexemes and
postings packed by the sidecar, sent by COPY. What they write must be exactly what the
statement PostgreSQL reads and packs itself writes (tsvectors, lengths, blocks, term
statistics), for any text; and a build killed part way leaves whole batches or the old
index, never a half of one."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sidecar.index.chunking import Chunk
from sidecar.index.store import FileState, IndexedFile
from sidecar.stores import pg_write
from sidecar.stores.pg_lexemes import MAX_POSITION, Lexicon, read, words
from sidecar.stores.pg_pack import decode
from sidecar.stores.pg_schema import TS_CONFIG
from sidecar.stores.pg_search import norm
from sidecar.stores.postgres import PostgresStore
from tests.pg_server import namespace
from tests.test_pg_topk import agree, note, queries, terms_agree

# Text PostgreSQL's parser and dictionaries might read differently from plain words:
# diacritics, other scripts, compatibility forms, a final sigma, numbers and words the
# parser types apart, words past the stemmer's and the tsvector's length limits.
ODD = [
    "naïve café résumé Ünïcödé", "ΟΔΟΣ ΣΑΣ οδός", "日本語のテキスト 中文 한국어",
    "ﬁne ﬀ Ⅻ ⑫ x² ½ ™", "İstanbul straße ǅemal", "مرحبا بالعالم ٣٤", "emoji 🎉 party 🚀",
    "1e10 1e10x 0x1f 123abc abc123 007", "1.5 v2.0.1 user@example.com https://x.org/a_b c:\\dir",
    "don't it's rock'n'roll — well-known", "a" * 1200, "b" * 2100, "café" * 300,
]  # fmt: skip


def chunk(heading: str, body: str, context: str = "", line: int = 1) -> Chunk:
    return Chunk(line, line, heading, body, context)


def odd_files(rng: random.Random, n: int) -> list[IndexedFile]:
    """Files of chunks mixing ordinary words and the odd text above."""
    vocab = [f"w{k}x" for k in range(40)] + ODD
    out = []
    for i in range(n):
        chunks = [
            chunk(" ".join(rng.choices(vocab, k=rng.randint(0, 3))),
                  " ".join(rng.choices(vocab, k=rng.randint(1, 25))),
                  " ".join(rng.choices(vocab, k=rng.randint(0, 12))), line)
            for line in range(1, rng.randint(1, 4) + 1)
        ]  # fmt: skip
        out.append(IndexedFile(f"odd/{i:04d}.md", FileState(1, 1, "0" * 64), {}, chunks))
    return out


def bad_rows() -> list[IndexedFile]:
    """A chunk of punctuation only (no lexeme), one word past 256 positions, a chunk past
    the last position PostgreSQL records, a word past its length limit."""
    state = FileState(1, 1, "0" * 64)
    huge = " ".join(f"h{k % 997}" for k in range(MAX_POSITION + 500))
    return [
        IndexedFile("bad/punct.md", state, {}, [chunk("", "!!! ... --- ???", "(( ))")]),
        IndexedFile("bad/repeat.md", state, {}, [chunk("again", "again " * 300, "again")]),
        IndexedFile("bad/huge.md", state, {}, [chunk("huge", huge, "tail")]),
        IndexedFile("bad/long.md", state, {}, [chunk("", "x" * 3000 + " short", "")]),
        IndexedFile("bad/empty.md", state, {}, [chunk("heading only", "", "")]),
    ]


def index_of(url: str, ns: str) -> dict[str, Any]:
    """Everything a namespace's index holds, with chunks named by (path, line) instead of
    ids (which differ between namespaces)."""
    with psycopg.connect(url) as conn:
        chunks = conn.execute(
            "SELECT id, path, start_line, heading, body, context, hash, tsvectorsend(tsv), "
            "doc_len FROM chunks WHERE namespace = %s",
            (ns,),
        ).fetchall()
        name = {r[0]: (r[1], r[2]) for r in chunks}
        blocks = conn.execute(
            "SELECT lexeme, bound, n, postings FROM blocks WHERE namespace = %s", (ns,)
        ).fetchall()
        terms = conn.execute(
            "SELECT lexeme, df FROM terms WHERE namespace = %s AND df > 0", (ns,)
        ).fetchall()
        stats = conn.execute(
            "SELECT chunks, tokens, impact_avgdl FROM namespace_stats WHERE namespace = %s",
            (ns,),
        ).fetchone()
    packed = sorted(
        (lexeme, bound, n, sorted((name[i], h, b, c, d) for i, h, b, c, d in decode([p]).tolist()))
        for lexeme, bound, n, p in blocks
    )  # a block's postings in any order: a search reads whole blocks
    return {
        "chunks": sorted(r[1:] for r in chunks),
        "blocks": packed,
        "terms": sorted(terms),
        "stats": stats,
    }


@pytest.fixture
def stores(pg_url: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """Two namespaces: one written by statements PostgreSQL reads and packs, one by
    the sidecar's COPY."""
    pair = PostgresStore(pg_url, namespace("stmt")), PostgresStore(pg_url, namespace("copy"))
    try:
        yield pair
    finally:
        for s in pair:
            s.close()


def build_both(
    stores: tuple[PostgresStore, PostgresStore],
    monkeypatch: pytest.MonkeyPatch,
    batches: list[list[IndexedFile]],
) -> None:
    stmt, copy = stores
    for batch in batches:
        monkeypatch.setattr(pg_write, "COPY_FROM", 10**9)
        stmt.add_files(batch)
        monkeypatch.setattr(pg_write, "COPY_FROM", 1)
        copy.add_files(batch)


def test_words_are_normalised_as_norm_does() -> None:
    rng = random.Random(1)
    alphabet = [chr(c) for c in range(128)] + list("ΣσςİıßẞǅﬁⅫ½²™\u0301\u00a0\u2003\u2044\x85日本")
    texts = ODD + ["".join(rng.choices(alphabet, k=rng.randint(0, 40))) for _ in range(3000)]
    for text in texts:
        assert words(text).split() == norm(text).encode().split(), repr(text)


def test_tsvectors_read_by_the_sidecar_are_postgresqls(pg_url: str) -> None:
    rng = random.Random(2)
    files = odd_files(rng, 60) + bad_rows()
    columns = [(c.heading, c.text, c.context) for f in files for c in f.chunks]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        PostgresStore(pg_url, namespace()).close()  # the schema (its text configuration)
        lexicon = Lexicon()
        got = read(conn, lexicon, columns)
        again = read(conn, lexicon, columns[::-1])  # every word known by now
        want = conn.execute(
            f"SELECT tsvectorsend(setweight(to_tsvector('{TS_CONFIG}', h), 'A') || "
            f"setweight(to_tsvector('{TS_CONFIG}', b), 'B') || "
            f"setweight(to_tsvector('{TS_CONFIG}', c), 'C')) "
            "FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS t(h, b, c, k) "
            "ORDER BY k",
            ([norm(c[0]) for c in columns], [norm(c[1]) for c in columns],
             [norm(c[2]) for c in columns]),
        ).fetchall()  # fmt: skip
    assert got.tsv == [bytes(w) for (w,) in want]
    assert again.tsv == got.tsv[::-1]


def test_a_bulk_write_equals_the_statement_path(
    stores: tuple[PostgresStore, PostgresStore], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    files = [note(rng, i) for i in range(300)] + odd_files(rng, 80) + bad_rows()
    build_both(stores, monkeypatch, [files])
    stmt, copy = stores
    assert index_of(pg_url, copy.namespace) == index_of(pg_url, stmt.namespace)
    terms_agree(pg_url, copy.namespace)
    words_only = [*queries(rng, 25), '"café" OR "οδος" OR "again"', "h5 OR tail"]
    for q in words_only:
        agree(copy, pg_url, q, rng.choice([1, 5, 10]))
    for q in [*words_only, '"w1x w2x"', "heading: again", "w3x NOT w4x"]:
        a = [(h.path, h.start_line, h.score) for h in copy.search(q, 10)]
        b = [(h.path, h.start_line, h.score) for h in stmt.search(q, 10)]
        assert a == b, q


def test_batches_and_their_merge_equal_the_statement_path(
    stores: tuple[PostgresStore, PostgresStore], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(4)
    files = [note(rng, i, long=i % 7 == 0) for i in range(600)]
    build_both(stores, monkeypatch, [files[k : k + 150] for k in range(0, 600, 150)])
    stmt, copy = stores
    copy.remove_files([f.path for f in files[::9]])  # tombstones for the merge to drop
    stmt.remove_files([f.path for f in files[::9]])
    for s in stores:
        s.optimize()
    assert index_of(pg_url, copy.namespace) == index_of(pg_url, stmt.namespace)
    with psycopg.connect(pg_url) as conn:  # at most one short block per term, none dead
        assert conn.execute(
            "SELECT count(*) FROM (SELECT lexeme FROM blocks WHERE namespace = %s AND n < 128 "
            "GROUP BY lexeme HAVING count(*) > 1) AS s",
            (copy.namespace,),
        ).fetchone() == (0,)
    terms_agree(pg_url, copy.namespace)
    for q in queries(rng, 20):
        agree(copy, pg_url, q, rng.choice([1, 10]))


# A child process that writes through the store and stops, mid-transaction, where the
# test kills it: after the chunks' COPY, before the blocks' (``pg_pack.encode``).
CHILD = textwrap.dedent("""
    import random, sys
    from sidecar.stores import pg_build, pg_bulk
    from sidecar.stores.postgres import PostgresStore
    from tests.test_pg_topk import note

    url, ns, how = sys.argv[1:]
    store = PostgresStore(url, ns)
    rng = random.Random(5)
    files = [note(rng, i) for i in range(900)]
    encode = pg_bulk.encode
    calls = []

    def stalled(*args):
        calls.append(1)
        if len(calls) == 3:  # the third batch: two are committed (or written, in a rebuild)
            print("stalled", flush=True)
            sys.stdin.readline()  # until killed
        return encode(*args)

    pg_bulk.encode = stalled
    pg_build.BATCH = 300  # a rebuild's batch: three of them
    if how == "build":
        for k in range(0, 900, 300):
            store.add_files(files[k : k + 300])
    else:
        store.replace_all(files)
""")


def _killed_midway(url: str, ns: str, how: str) -> None:
    """Run ``CHILD`` (``how``: "build" or "rebuild") and SIGKILL it where it stalls."""
    repo = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, ns, how], cwd=repo, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "stalled\n"
    finally:
        child.kill()
        child.wait()


def test_a_build_killed_midway_keeps_whole_batches(pg_url: str) -> None:
    ns = namespace("killed")
    _killed_midway(pg_url, ns, "build")
    store = PostgresStore(pg_url, ns)
    try:
        assert len(store.file_states()) == 600  # two batches of the three
        terms_agree(pg_url, ns)
        rng = random.Random(6)
        for q in queries(rng, 10):
            agree(store, pg_url, q, 10)
        # the build goes on where it stopped, to the same index as one never killed
        rng5 = random.Random(5)  # the child's files
        files = [note(rng5, i) for i in range(900)]
        assert store.add_files(files) == 300
        whole = PostgresStore(pg_url, namespace("whole"))
        try:
            for k in range(0, 900, 300):
                whole.add_files(files[k : k + 300])
            one, two = index_of(pg_url, ns), index_of(pg_url, whole.namespace)
            assert one["terms"] == two["terms"] and one["chunks"] == two["chunks"]
            for q in queries(rng, 10):
                assert [h.path for h in store.search(q, 10)] == [
                    h.path for h in whole.search(q, 10)
                ]
        finally:
            whole.close()
    finally:
        store.close()


def test_a_rebuild_killed_midway_leaves_the_old_index(pg_url: str) -> None:
    ns = namespace("rebuilt")
    store = PostgresStore(pg_url, ns)
    try:
        old = odd_files(random.Random(7), 40)
        store.replace_all(old)
        before = index_of(pg_url, ns)
        _killed_midway(pg_url, ns, "rebuild")
        assert index_of(pg_url, ns) == before  # the old index, whole, still serving
        assert {h.path for h in store.search('"w1x" OR "w2x"', 100)} <= {f.path for f in old}
        terms_agree(pg_url, ns)
    finally:
        store.close()
