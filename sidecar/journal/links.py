"""Which earlier event a later one probably updates, found when the later is indexed.

A statement that replaces an earlier one often does not repeat its subject ("Heads up,
that's moved to Tuesday the 17th"; "Priya has left; ask Tomasz"), so a question worded
like the earlier statement never reaches the later one, and the query-time rule
(``retrieval.updates``) cannot order what recall did not find. Two events are compared
with each other, not with a question, when the later of them is folded into the index:
what they share is weighed by how rare each shared word is in the journal (a name, a
place, an id; a conversation's speaker names, in every line, weigh nothing), as the
cosine of their IDF-weighted word sets. Pairs above ``CANDIDATE`` are kept in the
derived table ``updates`` (rebuilt from the files like the rest of the index); recall
decides from them (``recall.follow_updates``), with the texts in hand to see whether the
later *reports a change* (``change.reports_change``).

The rarity of a word is read when the pair's later event is folded, so a rebuild (which
reads every file in day order, in batches) can weigh a word a little differently from
the live index that met the events in another order; a pair near ``CANDIDATE`` may then
be kept by one and not the other. Recall's bar sits well above it.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Literal

from sidecar.index.sqlite import TOKENIZER

CANDIDATE = 0.12  # the weighted word cosine a pair needs to be kept at all
RARE_SHARE = 0.05  # a word in more than this share of the events does not find partners
RARE_MIN = 3  # ...unless it is in no more than this many (a small journal)
RARE_MAX = 50  # ...and never in more than this many (a large one)
PARTNERS = 40  # events compared with a new one at most, rarest shared words first
# A journal smaller than this weighs its words as if it were this large: in a handful of
# events any word two of them share looks common, and its weight would swing with each event.
SMALL = 100
_CACHE = 8192
_IDS = 500  # ids per IN (...) list, well under SQLite's variable limit

_tokenizers = threading.local()
_stemmed: OrderedDict[str, frozenset[str]] = OrderedDict()
_lock = threading.Lock()


def stems(texts: Sequence[str]) -> list[frozenset[str]]:
    """Each text's words as the index's tokenizer stems them (an in-memory FTS5 table of
    the thread's own), so a shared word here is one BM25 would match; recent texts are
    remembered, since an event is compared again with each later partner."""
    out: list[frozenset[str] | None] = []
    with _lock:
        for t in texts:
            out.append(_stemmed.get(t))
    new = list(dict.fromkeys(t for t, s in zip(texts, out, strict=True) if s is None))
    if new:
        conn = getattr(_tokenizers, "conn", None)
        if conn is None:
            conn = sqlite3.connect(":memory:")
            conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{TOKENIZER}')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
            _tokenizers.conn = conn
        conn.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", list(enumerate(new)))
        found: dict[int, set[str]] = {i: set() for i in range(len(new))}
        for term, doc in conn.execute("SELECT term, doc FROM v"):
            found[doc].add(term)
        conn.execute("DELETE FROM t")
        made = {t: frozenset(found[i]) for i, t in enumerate(new)}
        with _lock:
            for t, s in made.items():
                _stemmed[t] = s
            while len(_stemmed) > _CACHE:
                _stemmed.popitem(last=False)
        out = [s if s is not None else made[t] for t, s in zip(texts, out, strict=True)]
    return [s for s in out if s is not None]


def weighted_cosine(
    a: frozenset[str], b: frozenset[str], idf: dict[str, float], norm_a: float | None = None
) -> float:
    """Cosine of two word sets, each word weighing the root of its IDF: the shared words'
    IDF over the geometric mean of each set's, so one shared name in two long statements
    still counts. ``norm_a``: ``a``'s IDF sum, when the caller compares it many times."""
    both = a & b
    if not both:
        return 0.0
    shared = sum(idf.get(t, 0.0) for t in both)
    na = norm_a if norm_a is not None else sum(idf.get(t, 0.0) for t in a)
    nb = sum(idf.get(t, 0.0) for t in b)
    return shared / math.sqrt(na * nb) if shared > 0 and na > 0 and nb > 0 else 0.0


def link_new(conn: sqlite3.Connection, first_seq: int) -> int:
    """Compare every event from ``first_seq`` on (just folded, embeddable) with the events
    sharing its rare words, and keep the pairs above ``CANDIDATE`` (later, earlier). Runs
    in the fold's transaction, so the table is never behind the events. Returns pairs kept."""
    new = conn.execute(
        "SELECT seq, id, ts, summary, body FROM events WHERE seq >= ? AND embeddable = 1",
        (first_seq,),
    ).fetchall()
    if not new:
        return 0
    (total,) = conn.execute("SELECT count(*) FROM events").fetchone()
    rare = min(RARE_MAX, max(RARE_MIN, RARE_SHARE * total))
    new_stems = stems([f"{s}\n{b}" for _, _, _, s, b in new])
    words = set().union(*new_stems)
    df = _doc_counts(conn, words)
    size = math.log(max(total, SMALL) + 1)
    idf = {t: size - math.log(n + 0.5) for t, n in df.items()}
    kept: list[tuple[str, str, float]] = []
    for (seq, event_id, ts, _, _), mine in zip(new, new_stems, strict=True):
        partners = _partners(conn, mine, df, rare, seq)
        if not partners:
            continue
        rows = _fetch(conn, partners)
        theirs = stems([f"{s}\n{b}" for _, _, s, b in rows])
        more = _doc_counts(conn, set().union(*theirs) - df.keys())
        df.update(more)
        idf.update({t: size - math.log(n + 0.5) for t, n in more.items()})
        norm = sum(idf.get(t, 0.0) for t in mine)
        for (other, other_ts, _, _), other_words in zip(rows, theirs, strict=True):
            score = weighted_cosine(mine, other_words, idf, norm)
            if score < CANDIDATE or other_ts == ts:
                continue
            later, earlier = (event_id, other) if ts > other_ts else (other, event_id)
            kept.append((later, earlier, round(score, 4)))
    conn.executemany("INSERT OR REPLACE INTO updates VALUES (?, ?, ?)", kept)
    return len(kept)


def kept_pairs(
    conn: sqlite3.Connection, side: Literal["older", "newer"], ids: Sequence[str], least: float
) -> list[tuple[str, str, float]]:
    """(older, newer, words) of the kept pairs sharing at least ``least`` whose ``side``
    (``older`` or ``newer``) is one of ``ids``."""
    out: list[tuple[str, str, float]] = []
    wanted = list(dict.fromkeys(ids))
    for i in range(0, len(wanted), _IDS):
        part = wanted[i : i + _IDS]
        out += conn.execute(
            f"SELECT older, newer, words FROM updates WHERE {side} IN "
            f"({','.join('?' * len(part))}) AND words >= ?",
            [*part, least],
        ).fetchall()
    return out


def _doc_counts(conn: sqlite3.Connection, words: Iterable[str]) -> dict[str, int]:
    wanted = list(words)
    out: dict[str, int] = {}
    for i in range(0, len(wanted), 500):
        part = wanted[i : i + 500]
        out.update(
            conn.execute(
                f"SELECT term, doc FROM events_vocab WHERE term IN ({','.join('?' * len(part))})",
                part,
            ).fetchall()
        )
    return out


def _partners(
    conn: sqlite3.Connection, mine: frozenset[str], df: dict[str, int], rare: float, seq: int
) -> list[int]:
    """Events holding one of the event's rare words, rarest words first, ``PARTNERS`` at most."""
    found: dict[int, None] = {}
    for term in sorted((t for t in mine if 1 < df.get(t, 0) <= rare), key=df.__getitem__):
        for (doc,) in conn.execute("SELECT DISTINCT doc FROM events_where WHERE term = ?", (term,)):
            if doc != seq:
                found[doc] = None
        if len(found) >= PARTNERS:
            break
    return list(found)[:PARTNERS]


def _fetch(conn: sqlite3.Connection, seqs: list[int]) -> list[tuple[str, float, str, str]]:
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT id, ts, summary, body FROM events WHERE seq IN ({marks}) AND embeddable = 1",
        seqs,
    ).fetchall()
