"""Chunks read into PostgreSQL's lexemes by the sidecar, for bulk writes.

``to_tsvector`` was the largest part of what a bulk build cost PostgreSQL: about 0.2 ms of
CPU for a chunk of 1,000 characters, nearly all of it in the default parser, so a
million chunks were over three minutes of one core before anything was stored, twice
what the sidecar takes to do the same here. For the text the store indexes
it computes something simple: ``pg_search.norm`` has already cut the text into words
(runs of letters and digits, lower case, no diacritics) joined by single spaces, and
the parser reads such a word alone as it reads it within the text, since none of its
token types spans a space. So each distinct word is asked of PostgreSQL once
(``to_tsvector`` of the word alone: its lexemes and the positions it takes, the way
``pg_topk`` reads a query's words), remembered, and a chunk's tsvector is assembled
here from its words with the positions and weights that ``setweight(to_tsvector(h),
'A') || setweight(to_tsvector(b), 'B') || setweight(to_tsvector(c), 'C')`` gives, in
its binary form. A chunk where PostgreSQL would cap (a lexeme with more than 256
positions, a position past 16,383) is left to ``to_tsvector`` itself.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sidecar.stores.pg_connect import Conn
from sidecar.stores.pg_pack import radix_order
from sidecar.stores.pg_schema import TS_CONFIG
from sidecar.stores.pg_search import norm

MAX_POSITIONS = 256  # positions PostgreSQL keeps of one lexeme in a tsvector
MAX_POSITION = 16383  # the highest position it records
WEIGHTS = (3, 2, 1)  # A, B, C in a position's top two bits: heading, body, context
FORGET_AFTER = 2_000_000  # words remembered at most; past this the lexicon starts over
SLICE = 2048  # chunks whose words are looked up at once

# ASCII text is normalised by one byte translation (what ``norm`` does to it: lower
# case, anything but a letter or digit a space); see ``words`` for other text.
_KEEP = b"abcdefghijklmnopqrstuvwxyz0123456789"
_TABLE = bytes(
    c if c >= 0x80 or bytes([c]) in _KEEP else c + 32 if 65 <= c <= 90 else 32 for c in range(256)
)
_COLUMN, _CHUNK = b" \x01 ", b" \x02 "  # separators no word can be
LEARN = f"""
SELECT t.i, l.lexeme, l.positions
FROM unnest(%s::text[]) WITH ORDINALITY AS t(word, i)
CROSS JOIN LATERAL unnest(to_tsvector('{TS_CONFIG}', t.word)) AS l
"""
# What the SQL path stores, for the chunks PostgreSQL caps.
CAPPED = f"""
SELECT tsvectorsend(setweight(to_tsvector('{TS_CONFIG}', t.h), 'A')
                    || setweight(to_tsvector('{TS_CONFIG}', t.b), 'B')
                    || setweight(to_tsvector('{TS_CONFIG}', t.c), 'C'))
FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS t(h, b, c, k) ORDER BY t.k
"""


def words(text: str) -> bytes:
    """``norm(text)`` as UTF-8. ASCII goes through a byte translation; other text is cut
    at whitespace first (which ``norm`` treats the same anywhere: it lowers case, and so
    reads a final sigma, only within a word), and only the pieces beyond ASCII are
    normalised by ``norm`` itself."""
    if text.isascii():
        return text.encode().translate(_TABLE)
    return b" ".join(
        piece.encode().translate(_TABLE) if piece.isascii() else norm(piece).encode()
        for piece in text.split()
    )


class _Words(dict[bytes, int]):
    """Word -> id; a word not met before gets the next id and waits to be learned."""

    def __init__(self) -> None:
        super().__init__({_COLUMN.strip(): 0, _CHUNK.strip(): 1})
        self.fresh: list[bytes] = []

    def __missing__(self, word: bytes) -> int:
        i = self[word] = len(self)
        self.fresh.append(word)
        return i


class Lexicon:
    """What ``to_tsvector`` makes of each word met so far: the positions it takes
    (``span``) and its lexemes at positions relative to its first (``expansion``)."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Start over, every word unknown (a vocabulary past ``FORGET_AFTER`` words)."""
        self.words = _Words()
        self.lexemes: list[bytes] = []
        self.lexeme_ids: dict[bytes, int] = {}
        self._span: list[int] = [0, 0]
        self._exp_start: list[int] = [0, 0]
        self._exp_len: list[int] = [0, 0]
        self._exp_lexeme: list[int] = []
        self._exp_rel: list[int] = []
        self._arrays: tuple[np.ndarray, ...] | None = None

    def lexeme_id(self, lexeme: bytes) -> int:
        i = self.lexeme_ids.get(lexeme)
        if i is None:
            i = self.lexeme_ids[lexeme] = len(self.lexemes)
            self.lexemes.append(lexeme)
        return i

    def ids(self, text: bytes) -> np.ndarray:
        """The word ids of space-separated words (separators included)."""
        split = text.split()
        return np.fromiter(map(self.words.__getitem__, split), np.int32, len(split))

    def learn(self, conn: Conn) -> None:
        """Ask PostgreSQL for the lexemes of the words met since the last call."""
        fresh = self.words.fresh
        if not fresh:
            return
        found: list[list[tuple[int, int]]] = [[] for _ in fresh]
        rows = conn.execute(LEARN, ([w.decode() for w in fresh],)).fetchall()
        for i, lexeme, positions in rows:
            lid = self.lexeme_id(lexeme.encode())
            found[i - 1].extend((lid, p - 1) for p in positions)
        for exp in found:
            exp.sort(key=lambda e: (e[0], e[1]))  # a lexeme's positions rising
            self._span.append(1 + max((rel for _, rel in exp), default=-1))
            self._exp_start.append(len(self._exp_lexeme))
            self._exp_len.append(len(exp))
            self._exp_lexeme.extend(lid for lid, _ in exp)
            self._exp_rel.extend(rel for _, rel in exp)
        self.words.fresh = []
        self._arrays = None

    def arrays(self) -> tuple[np.ndarray, ...]:
        if self._arrays is None:
            self._arrays = tuple(
                np.array(a, np.int32)
                for a in (self._span, self._exp_start, self._exp_len, self._exp_lexeme,
                          self._exp_rel)
            )  # fmt: skip
        return self._arrays


@dataclass(slots=True)
class Read:
    """A batch of chunks read: each chunk's tsvector (binary) and length, and its
    postings (one per chunk and lexeme, with the lexeme's count in each column)."""

    tsv: list[bytes]
    doc_len: np.ndarray  # int32, per chunk
    chunk: np.ndarray  # per posting: the chunk's index in the batch
    lexeme: np.ndarray  # per posting: an id in the lexicon
    tf: np.ndarray  # (3, postings) int16: heading, body, context
    words: int  # words in all the chunks (``norm``'s), lexemes or not


def _segments(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments of these lengths laid end to end: each element's segment and its
    offset within it."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.cumsum(lengths) - lengths
    return owner, np.arange(int(lengths.sum())) - starts[owner]


def read(conn: Conn, lexicon: Lexicon, columns: Sequence[tuple[str, str, str]]) -> Read:
    """Read chunks given as (heading, body, context) text."""
    n = len(columns)
    if len(lexicon.words) > FORGET_AFTER:
        lexicon.forget()
    parts = []
    for at in range(0, n, SLICE):  # a slice at a time: a word is an object while split
        pieces: list[bytes] = []
        for heading, body, context in columns[at : at + SLICE]:
            pieces += (words(heading), _COLUMN, words(body), _COLUMN, words(context), _CHUNK)
        parts.append(lexicon.ids(b"".join(pieces)))
    ids = np.concatenate(parts)
    lexicon.learn(conn)
    span, exp_start, exp_len, exp_lexeme, exp_rel = lexicon.arrays()
    end = ids == 1
    chunk_of = np.cumsum(end, dtype=np.int32) - end
    column_of = np.cumsum(ids == 0, dtype=np.int32) - 2 * chunk_of  # two separators a chunk
    word = ids >= 2
    wid, chunk, col = ids[word], chunk_of[word], column_of[word]
    # positions: each word takes its span, counted from 1 in each chunk across columns
    sp = span[wid]
    taken = np.bincount(chunk, weights=sp, minlength=n).astype(np.int32)
    first = np.cumsum(sp, dtype=np.int32) - sp - (np.cumsum(taken) - taken)[chunk] + 1
    e = exp_start[wid]
    many = exp_len[wid]
    if not (many == 1).all():  # a word with no lexeme, or several: rare
        src, k = _segments(many)
        e = e[src] + k
        first, chunk, col = first[src], chunk[src], col[src]
    lex, pos = exp_lexeme[e], first + exp_rel[e]
    # each chunk's lexemes in byte order (a tsvector's), positions rising within each
    present = np.flatnonzero(np.bincount(lex, minlength=len(lexicon.lexemes)))
    ordered = sorted(present.tolist(), key=lexicon.lexemes.__getitem__)
    rank = np.zeros(len(lexicon.lexemes), np.int32)
    rank[ordered] = np.arange(len(ordered))
    local = rank[lex]
    order = radix_order((chunk, n), (local, len(ordered)))
    local, lex, pos, chunk, col = local[order], lex[order], pos[order], chunk[order], col[order]
    new = np.ones(len(lex), bool)
    new[1:] = (local[1:] != local[:-1]) | (chunk[1:] != chunk[:-1])
    entry = np.cumsum(new, dtype=np.int32) - 1
    e_lex, e_chunk = lex[new], chunk[new]
    tf = np.bincount(entry * 3 + col, minlength=3 * len(e_lex)).reshape(-1, 3).T
    npos = tf.sum(axis=0)
    capped = np.zeros(n, bool)
    capped[taken > MAX_POSITION] = True
    capped[e_chunk[npos > MAX_POSITIONS]] = True
    names = [lexicon.lexemes[i] for i in ordered]
    values = (np.array(WEIGHTS, np.int32)[col] << 14) | pos
    tsv = _tsvectors(names, n, local[new], e_chunk, npos, entry, values)
    doc_len = np.bincount(chunk, minlength=n).astype(np.int32)
    keep = ~capped[e_chunk]
    # narrow types for the sort and gathers ahead: counts are at most 256 (capped above)
    got = Read(tsv, doc_len, e_chunk[keep], e_lex[keep], tf[:, keep].astype(np.int16),
               int(word.sum()))  # fmt: skip
    if capped.any():
        _by_postgresql(conn, lexicon, columns, np.flatnonzero(capped), got)
    return got


def _tsvectors(
    names: list[bytes],
    n: int,
    local: np.ndarray,
    e_chunk: np.ndarray,
    npos: np.ndarray,
    entry: np.ndarray,
    values: np.ndarray,
) -> list[bytes]:
    """Each chunk's tsvector in ``tsvectorsend`` form: the number of lexemes, then each
    lexeme, NUL-terminated, with its count of positions and the positions (weight in the
    top two bits), all big-endian. Entries come in order (``local``: an index into the
    ``names`` in byte order), each position's ``values`` in order, with its ``entry``.

    The output is laid end to end from three sources in one gather: the names, each
    entry's count followed by its positions, and each chunk's count of entries."""
    e = len(local)
    pool = b"\0".join(names) + b"\0"
    name_len = np.array([len(s) + 1 for s in names], np.int32)
    name_at = np.cumsum(name_len) - name_len
    starts = np.cumsum(npos) - npos
    counted = np.empty(e + len(values), np.uint16)  # per entry: count, then positions
    counted[starts + np.arange(e)] = npos
    counted[np.arange(len(values)) + entry + 1] = values
    counts = np.bincount(e_chunk, minlength=n)
    source = b"".join((pool, counted.astype(">u2").tobytes(), counts.astype(">u4").tobytes()))
    # the segments in output order: a chunk's count, then each entry's name and positions
    where = np.arange(n) + 2 * (np.cumsum(counts) - counts)
    named = 2 * np.arange(e) + e_chunk + 1
    seg_at = np.empty(n + 2 * e, np.int64)
    seg_len = np.empty(n + 2 * e, np.int64)
    seg_at[where] = len(pool) + 2 * len(counted) + 4 * np.arange(n)
    seg_len[where] = 4
    seg_at[named] = name_at[local]
    seg_len[named] = name_len[local]
    seg_at[named + 1] = len(pool) + 2 * (starts + np.arange(e))
    seg_len[named + 1] = 2 * (npos + 1)
    out_at = np.cumsum(seg_len) - seg_len
    total = int(seg_len.sum())
    # each output byte's source: one on from the last, but where a segment starts
    step = np.ones(total, np.int32)
    step[0] = seg_at[0]
    step[out_at[1:]] = seg_at[1:] - seg_at[:-1] - seg_len[:-1] + 1
    data = np.frombuffer(source, np.uint8)[np.cumsum(step, dtype=np.int32)].tobytes()
    bounds = np.append(out_at[where], total).tolist()
    return [data[bounds[i] : bounds[i + 1]] for i in range(n)]


def _by_postgresql(
    conn: Conn,
    lexicon: Lexicon,
    columns: Sequence[tuple[str, str, str]],
    which: np.ndarray,
    got: Read,
) -> None:
    """The capped chunks' tsvectors from ``to_tsvector``, and their postings read back."""
    picked = [columns[i] for i in which.tolist()]
    heads, bodies, contexts = ([norm(c[j]) for c in picked] for j in range(3))
    rows = conn.execute(CAPPED, (heads, bodies, contexts)).fetchall()
    chunks, lexemes, tfs = [], [], []
    for i, (data,) in zip(which.tolist(), rows, strict=True):
        got.tsv[i] = bytes(data)
        total = 0
        for lexeme, positions in _entries(bytes(data)):
            tf = [sum(1 for p in positions if p >> 14 == w) for w in WEIGHTS]
            chunks.append(i)
            lexemes.append(lexicon.lexeme_id(lexeme))
            tfs.append(tf)
            total += len(positions)
        got.doc_len[i] = total
    if chunks:
        got.chunk = np.concatenate([got.chunk, np.array(chunks, got.chunk.dtype)])
        got.lexeme = np.concatenate([got.lexeme, np.array(lexemes, got.lexeme.dtype)])
        got.tf = np.concatenate([got.tf, np.array(tfs, np.int16).T], axis=1)


def _entries(data: bytes) -> list[tuple[bytes, list[int]]]:
    """A binary tsvector's lexemes with their positions (weight bits included)."""
    (count,) = struct.unpack_from(">i", data)
    at, out = 4, []
    for _ in range(count):
        end = data.index(b"\0", at)
        lexeme = data[at:end]
        (npos,) = struct.unpack_from(">H", data, end + 1)
        out.append((lexeme, list(struct.unpack_from(f">{npos}H", data, end + 3))))
        at = end + 3 + 2 * npos
    return out
