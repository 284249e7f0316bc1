"""The best BM25 rows of an FTS5 OR query without scoring every row it matches.

At a million chunks a question's common words match most of the table, and FTS5's
``bm25()`` on each of those rows (its positions and length, about a microsecond), not
finding them (twenty times less), is what a search costs. Yet an OR of phrases scores a
row as the sum of one part per phrase present, and a phrase's part is below its
IDF * (k1 + 1) whatever its counts (FTS5's k1 = 1.2). So, rarest phrase first, each round
ranks only the rows holding that phrase and none taken before it, and the search stops
once the k-th best row so far scores more than a row holding none of the phrases taken
could: the sum of the bounds of the phrases not taken.

A round asks FTS5 for ``p AND (later phrases) NOT (earlier phrases)``: FTS5 walks the
rows of the rare ``p`` and seeks in the others, and ``bm25()`` of that expression is the
sum of the same parts, over the whole table's statistics, added in the same order as for
the query with its phrases rarest first, which is the query this path answers: every
score is bit for bit the one plain FTS5 gives that query, and ties go by rowid in both.
(The order of a sum's terms moves its last bit at most: the phrases are reordered so
that the numbers are exactly FTS5's own.) Rows holding ``p`` alone are ranked by ``p``
alone, and only when ``p`` by itself could reach the k-th best.

Only a plain OR of a few phrases takes this path; anything else is ranked the plain way.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable

from sidecar.index.sqlite import snapshot
from sidecar.stores.fts5 import or_operands

K1 = 1.2  # FTS5's bm25 constant (b = 0.75 does not enter the bound)
# Over the bound by more than floating point could ever put a phrase's part: a row left
# unscored then scores strictly less than the k-th best, never the same.
SLACK = 1 + 1e-9
# Below this many rows the rounds save too little to matter (at 10k chunks of LoCoMo text
# they rank in 1.8 ms of CPU at the median against plain FTS5's 4.4; at 100k, 8.6 against
# 31.5; at 1M, 109 against 436).
MIN_ROWS = 5_000
# Each round reads every phrase's list (the later ones ORed in, the earlier NOTed out), so
# it costs about one plain ranking, and a long OR (a pasted prompt) paid that once a phrase.
# Synthetic Zipf text, 21k and 105k chunks, warm counts, CPU per search, rounds against
# plain: 8 phrases 5.5/8.0 and 21/47 ms, 16 about even, 32 61/23 and 223/89, 200 phrases
# 2.9 s/0.14 s. Benchmark questions hold at most 8 words.
MAX_PHRASES = 16
AVERAGES_ID = 1  # the FTS5 %_data record holding the row count and column totals


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (big-endian, 7 bits a byte, the ninth byte 8)."""
    value = 0
    for i, byte in enumerate(blob[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    raise ValueError("truncated varint")


def row_count(conn: sqlite3.Connection, table: str) -> int | None:
    """The rows FTS5 counts in its IDFs (its averages record), None if unreadable."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (AVERAGES_ID,)).fetchone()
    if row is None or not isinstance(row[0], bytes):
        return None
    try:
        return _varint(row[0])
    except ValueError:
        return None


def _bound(rows: int, hits: int) -> float:
    """The most one phrase matching ``hits`` of ``rows`` rows can add to a row's score."""
    if not hits:
        return 0.0
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return max(idf, 1e-6) * (K1 + 1.0) * SLACK  # FTS5 raises an IDF <= 0 to 1e-6


def top(
    conn: sqlite3.Connection,
    table: str,
    match: str,
    weights: str,
    limit: int,
    min_rows: int | None = None,
    counts: Callable[[], dict[str, int]] | None = None,
) -> tuple[str, list[tuple[int, float]]] | None:
    """The query as answered (its phrases rarest first) and the (rowid, bm25) of its
    ``limit`` best rows, best first, as ``ORDER BY bm25(...), rowid`` gives them; None
    where this path does not apply (not an OR of at most ``MAX_PHRASES`` phrases, fewer
    rows than ``min_rows``, ``MIN_ROWS`` by default) and the caller ranks the plain way.
    A bad expression raises
    as MATCH does. Every statement reads one snapshot: a commit between them would
    change the IDFs the bounds were computed with. ``counts``: asked once that snapshot is
    taken, how many rows each phrase matches as far as known for it (filled in here): a
    question's words recur from one search to the next, and counting a common one reads
    its whole list."""
    operands = or_operands(match)
    if operands is None or len(operands) > MAX_PHRASES or limit <= 0:
        return None
    with snapshot(conn):
        return _top(conn, table, operands, weights, limit, min_rows, counts)


def _top(
    conn: sqlite3.Connection,
    table: str,
    operands: list[str],
    weights: str,
    limit: int,
    min_rows: int | None,
    counts: Callable[[], dict[str, int]] | None,
) -> tuple[str, list[tuple[int, float]]] | None:
    rows = row_count(conn, table)
    if rows is None or rows < (MIN_ROWS if min_rows is None else min_rows):
        return None
    count = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
    known = {} if counts is None else counts()
    for p in operands:
        if p not in known:
            known[p] = conn.execute(count, (p,)).fetchone()[0]
    hits = [known[p] for p in operands]
    order = sorted(range(len(operands)), key=lambda i: (hits[i], i))
    phrases = [operands[i] for i in order]
    bounds = [_bound(rows, hits[i]) for i in order]
    rank = (
        f"SELECT rowid, bm25({table}, {weights}) AS score FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY score, rowid LIMIT ?"
    )
    alone = (
        f"SELECT rowid, bm25({table}, {weights}) AS score FROM {table} WHERE {table} MATCH ? "
        f"AND +rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?) "
        "ORDER BY score, rowid LIMIT ?"
    )
    live = [j for j, b in enumerate(bounds) if b]  # a phrase matching nothing adds nothing
    best: list[tuple[float, int]] = []

    def kth() -> float | None:
        return -best[limit - 1][0] if len(best) >= limit else None

    def add(sql: str, *args: object) -> None:
        nonlocal best
        found = conn.execute(sql, args).fetchall()
        best = sorted(best + [(score, rowid) for rowid, score in found])[:limit]

    for k, j in enumerate(live):
        floor = kth()
        if floor is not None and floor > math.fsum(bounds[i] for i in live[k:]):
            break  # no row holding none of the phrases taken reaches the k-th best
        earlier = [phrases[i] for i in live[:k]]
        later = [phrases[i] for i in live[k + 1 :]]
        if later:
            with_later = f"{phrases[j]} AND ({' OR '.join(later)})"
            if earlier:
                with_later += f" NOT ({' OR '.join(earlier)})"
            add(rank, with_later, limit)
        floor = kth()
        if floor is None or bounds[j] > floor:  # rows holding this phrase and no other
            others = earlier + later
            only = f"{phrases[j]} NOT ({' OR '.join(others)})" if others else phrases[j]
            add(alone, phrases[j], only, limit)
    return " OR ".join(phrases), [(rowid, score) for score, rowid in best]
