"""Block postings packed by the sidecar: impacts, blocks, and their binary COPY form.

What ``pg_schema.pack_sql`` does in SQL, in numpy: each term's postings by impact
(``impact_sql``'s formula, in the same float8 operations, so the order and the bounds
are the same to the bit), ``BLOCK`` to a row, each row bounded by its highest impact as
a float4. Sorting and packing in PostgreSQL was over half of a bulk build's time; here it
is a sort of the batch's postings. The rows go to PostgreSQL in ``COPY``'s binary form,
which it stores without parsing a number.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sidecar.stores.pg_schema import BLOCK, K1, B
from sidecar.stores.pg_schema import POSTING as POSTING_BYTES
from sidecar.stores.sqlite_schema import BODY_WEIGHT, CONTEXT_WEIGHT, HEADING_WEIGHT

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)
# The columns a block row is copied with, in the order ``encode`` writes them.
COPY_BLOCKS = "COPY blocks (namespace, lexeme, bound, n, postings) FROM STDIN (FORMAT BINARY)"
# One posting in a block's ``postings`` (``pg_schema.POSTING`` bytes, big-endian).
POSTING = np.dtype([("id", ">i8"), ("th", ">i2"), ("tb", ">i2"), ("tc", ">i2"), ("dl", ">i4")])
assert POSTING.itemsize == POSTING_BYTES


def radix_order(*keys: tuple[np.ndarray, int]) -> np.ndarray:
    """The stable order that sorts by ``keys`` (most significant first), each given as
    non-negative integers below a bound: sorted 16 bits at a time, least significant
    first, by numpy's radix sort (several times faster than a comparison sort)."""
    order: np.ndarray | None = None
    for values, bound in reversed(keys):
        for shift in range(0, max(1, int(bound - 1).bit_length()), 16):
            digit = ((values if order is None else values[order]) >> shift).astype(np.uint16)
            step = np.argsort(digit, kind="stable")
            order = step if order is None else order[step]
    assert order is not None
    return order


def impacts(tf: np.ndarray, doc_len: np.ndarray, a0: float) -> np.ndarray:
    """``impact_sql`` for postings with counts ``tf`` (3, n) and chunk lengths."""
    f = HEADING_WEIGHT * tf[0] + BODY_WEIGHT * tf[1]
    f = f + CONTEXT_WEIGHT * tf[2]
    norm = K1 * ((1 - B) + B * (doc_len / max(a0, 1e-9)))
    return f * (K1 + 1) / (f + norm)


@dataclass(slots=True)
class Postings:
    """Postings of several terms: parallel arrays, ``term`` an index into ``names``."""

    names: list[bytes]  # each term's lexeme (UTF-8)
    term: np.ndarray
    chunk_id: np.ndarray  # int64
    tf: np.ndarray  # (3, n): heading, body, context
    doc_len: np.ndarray

    def __len__(self) -> int:
        return len(self.term)

    def take(self, which: np.ndarray) -> Postings:
        return Postings(self.names, self.term[which], self.chunk_id[which],
                        self.tf[:, which], self.doc_len[which])  # fmt: skip


@dataclass(slots=True)
class Blocks:
    """Postings cut into blocks: sorted by term (in byte order), impact downwards, id;
    block ``j`` is ``postings[start[j]:start[j + 1]]``."""

    postings: Postings
    start: np.ndarray  # block starts, then the end
    bound: np.ndarray  # float32 per block

    def df(self) -> tuple[list[str], list[int]]:
        """Each term (in byte order) with its postings: its document frequency here."""
        term = self.postings.term
        if not len(term):
            return [], []
        first = np.flatnonzero(np.append(True, term[1:] != term[:-1]))
        counts = np.diff(np.append(first, len(term)))
        names = self.postings.names
        return [names[t].decode() for t in term[first].tolist()], counts.tolist()


def pack(postings: Postings, a0: float) -> Blocks:
    """Each term's postings by impact against ``a0``, ``BLOCK`` to a block."""
    present = np.flatnonzero(np.bincount(postings.term, minlength=len(postings.names)))
    ordered = sorted(present.tolist(), key=postings.names.__getitem__)
    rank = np.zeros(len(postings.names), np.int64)
    rank[ordered] = np.arange(len(ordered))
    impact = impacts(postings.tf, postings.doc_len, a0)
    ids = postings.chunk_id
    if len(ids) > 1 and not (ids[1:] >= ids[:-1]).all():  # a stable sort keeps them rising
        order = np.argsort(ids, kind="stable")
        postings, impact = postings.take(order), impact[order]
    order = np.argsort(-impact, kind="stable")
    order = order[radix_order((rank[postings.term[order]], len(ordered)))]
    sorted_ = postings.take(order)
    impact = impact[order]
    term = sorted_.term
    n = len(term)
    run = np.ones(n, bool)
    run[1:] = term[1:] != term[:-1]
    run_start = np.flatnonzero(run)
    within = np.arange(n) - np.repeat(run_start, np.diff(np.append(run_start, n)))
    start = np.flatnonzero(within % BLOCK == 0)
    return Blocks(sorted_, np.append(start, n), impact[start].astype(np.float32))


def encode(namespace: str, blocks: Blocks) -> bytes:
    """The blocks as ``COPY_BLOCKS`` data, header and trailer included."""
    p = blocks.postings
    packed = np.empty(len(p), POSTING)
    packed["id"], packed["dl"] = p.chunk_id, p.doc_len
    packed["th"], packed["tb"], packed["tc"] = p.tf
    data = packed.tobytes()
    ns = namespace.encode()
    head = struct.pack(">hi", 5, len(ns)) + ns
    starts = blocks.start.tolist()
    terms = p.term[blocks.start[:-1]].tolist()
    names = [struct.pack(">i", len(s)) + s for s in p.names]
    rows = [COPY_HEADER]
    size = POSTING.itemsize
    for j, bound in enumerate(blocks.bound.tolist()):
        s, e = starts[j], starts[j + 1]
        n = e - s
        row = (head, names[terms[j]], struct.pack(">ifiii", 4, bound, 4, n, n * size))
        rows.append(b"".join((*row, data[s * size : e * size])))
    rows.append(COPY_TRAILER)
    return b"".join(rows)


def decode(postings: Sequence[bytes]) -> np.ndarray:
    """Blocks' ``postings`` laid end to end, as ``POSTING`` records."""
    return np.frombuffer(b"".join(postings), POSTING)
