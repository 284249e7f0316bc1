"""A batch of chunks written by COPY: read, packed and encoded by the sidecar.

PostgreSQL receives finished rows in ``COPY``'s binary form: the chunks with their
tsvectors (``pg_lexemes``), then the blocks of their postings (``pg_pack``), and adds
the terms' document frequencies. It parses no text and sorts no posting. The chunks'
COPY is sent by a thread of psycopg's while the sidecar packs the blocks, so the
database stores one while the sidecar computes the other, on both cores.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
from psycopg.copy import QueuedLibpqWriter

from sidecar.index.chunking import Chunk
from sidecar.index.store import text_key
from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_lexemes import Lexicon, read
from sidecar.stores.pg_pack import COPY_BLOCKS, COPY_HEADER, COPY_TRAILER, Postings, encode, pack

COPY_CHUNKS = (
    "COPY chunks (namespace, id, path, start_line, end_line, heading, body, context, hash, "
    "tsv, doc_len) FROM STDIN (FORMAT BINARY)"
)
IDS = "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, %s)"
TERMS = """
INSERT INTO terms AS t (namespace, lexeme, df)
SELECT %s, u.lexeme, u.df FROM unnest(%s::text[], %s::bigint[]) AS u(lexeme, df)
ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df
"""
_FIELDS = struct.pack(">h", 11)


def _text(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">i", len(data)) + data


def impact_avgdl(conn: Conn, namespace: str, guess: float) -> float:
    """The namespace's impact average; set to ``guess`` (these chunks' mean count of
    words) if it has none yet, so that blocks written later agree with these."""
    (a0,) = conn.execute(
        "INSERT INTO namespace_stats AS s (namespace, chunks, tokens, impact_avgdl) "
        "VALUES (%s, 0, 0, %s) ON CONFLICT (namespace) DO UPDATE "
        "SET impact_avgdl = coalesce(s.impact_avgdl, excluded.impact_avgdl) "
        "RETURNING impact_avgdl",
        (namespace, max(1.0, guess)),
    ).fetchone()  # type: ignore[misc]
    return float(a0)


def insert(
    conn: Conn, namespace: str, lexicon: Lexicon, files: Sequence[tuple[str, Sequence[Chunk]]]
) -> None:
    """Insert the chunks of several files (in their order), with their postings."""
    chunks = [(path, c) for path, cs in files for c in cs]
    got = read(conn, lexicon, [(c.heading, c.text, c.context) for _, c in chunks])
    ids = np.sort(np.array(conn.execute(IDS, (len(chunks),)).fetchall(), np.int64)[:, 0])
    a0 = impact_avgdl(conn, namespace, got.words / len(chunks))  # as the statement path
    ns = _text(namespace)
    rows = [COPY_HEADER]
    for (path, c), cid, tsv, length in zip(
        chunks, ids.tolist(), got.tsv, got.doc_len.tolist(), strict=True
    ):
        rows.append(b"".join((
            _FIELDS, ns, struct.pack(">iq", 8, cid), _text(path),
            struct.pack(">iiii", 4, c.start_line, 4, c.end_line), _text(c.heading),
            _text(c.text), _text(c.context), _text(text_key(c.text)),
            struct.pack(">i", len(tsv)), tsv, struct.pack(">ii", 4, length),
        )))  # fmt: skip
    rows.append(COPY_TRAILER)
    with conn.cursor() as cur:
        with cur.copy(COPY_CHUNKS, writer=QueuedLibpqWriter(cur)) as copy:
            copy.write(b"".join(rows))
            del rows
            postings = Postings(lexicon.lexemes, got.lexeme, ids[got.chunk], got.tf,
                                got.doc_len[got.chunk])  # fmt: skip
            blocks = pack(postings, a0)
            data = encode(namespace, blocks)
        with cur.copy(COPY_BLOCKS) as copy:
            copy.write(data)
    names, counts = blocks.df()
    conn.execute(TERMS, (namespace, names, counts))
