"""indexing: full index of ~2,000 notes (~4 MB) and one-file incremental reindex.

Full: ``SQLiteStore.replace_all(indexer.load_tree(root))`` beside a bare loop
(read, split into ~800-character pieces, insert into a plain FTS5 table, one
transaction), alternated over a few rounds on the same warm files, each round
into a fresh database. Incremental: edit one file, time ``indexer.sync_file``.

Each side's CPU (every thread of this process) is reported beside its wall time: on a
machine other work shares, CPU says what the index costs when the wall clock cannot,
and the sidecar's wall time is less than its CPU by what its tokenizing thread overlaps.

The two sides do not index the same text: the bare loop tokenizes each file once, the
sidecar each chunk's heading, body and neighbours' text (``Chunk.context``), about 2.4
times as many characters. So the full index is also taken apart, CPU only, in the same
rounds: parsing alone (``load_tree``), storing the parsed files alone (``replace_all``),
and a bare FTS5 table of the same three columns and tokenizer fed the sidecar's own
texts: what FTS5 alone costs to index what the sidecar indexes.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import bare_fts
from bench.context import Context
from bench.notes import NoteWriter, write_notes
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.index import indexer
from sidecar.index.sqlite import TOKENIZER
from sidecar.index.store import IndexedFile
from sidecar.stores.sqlite import SQLiteStore

NAME = "indexing"
DESCRIPTION = "full and incremental indexing of 2,000 notes"
FILES = 2000
TOTAL_BYTES = 4_000_000
FULL_TARGET = at_most(1.0, "<= 1.00 s")
RATIO_TARGET = at_most(2.0, "<= 2.00x")  # issue 34: within twice the bare loop
INCREMENTAL_TARGET = at_most(5.0, "<= 5.00 ms")
SEED = 11


@dataclass(slots=True)
class FullRuns:
    sidecar_s: list[float]
    bare_s: list[float]
    chunks: int
    bare_rows: int
    sidecar_cpu_s: list[float] = field(default_factory=list)
    bare_cpu_s: list[float] = field(default_factory=list)
    # the full index taken apart (CPU seconds), and the characters each side tokenizes
    parse_cpu_s: list[float] = field(default_factory=list)
    store_cpu_s: list[float] = field(default_factory=list)
    same_texts_cpu_s: list[float] = field(default_factory=list)
    sidecar_chars: int = 0
    bare_chars: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "sidecar_s": [round(s, 4) for s in self.sidecar_s],
            "bare_s": [round(s, 4) for s in self.bare_s],
            "sidecar_cpu_s": [round(s, 4) for s in self.sidecar_cpu_s],
            "bare_cpu_s": [round(s, 4) for s in self.bare_cpu_s],
            "parse_cpu_s": [round(s, 4) for s in self.parse_cpu_s],
            "store_cpu_s": [round(s, 4) for s in self.store_cpu_s],
            "same_texts_cpu_s": [round(s, 4) for s in self.same_texts_cpu_s],
            "sidecar_chars": self.sidecar_chars,
            "bare_chars": self.bare_chars,
            "chunks": self.chunks,
            "bare_rows": self.bare_rows,
        }


def _warm(root: Path) -> None:
    for rel in bare_fts.markdown_files(root):
        (root / rel).read_bytes()


def time_sidecar_full(root: Path, db: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds of the full index, and the chunks it stored."""
    store = SQLiteStore(db)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        store.replace_all(indexer.load_tree(root))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        return elapsed, cpu, store.stats().total_chunks
    finally:
        store.close()


def time_bare_full(root: Path, db: Path) -> tuple[float, float, int]:
    conn = bare_fts.connect(db)
    try:
        bare_fts.create(conn)
        started, cpu = time.perf_counter(), time.process_time()
        bare_fts.insert_all(conn, bare_fts.file_pieces(root, bare_fts.markdown_files(root)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        return elapsed, cpu, int(conn.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        conn.close()


def time_parse(root: Path) -> tuple[float, list[IndexedFile]]:
    """CPU seconds of parsing every file as the full index does, and what it parsed."""
    cpu = time.process_time()
    items = list(indexer.load_tree(root))
    return time.process_time() - cpu, items


def time_store(items: list[IndexedFile], db: Path) -> float:
    """CPU seconds (every thread) of storing files parsed beforehand."""
    store = SQLiteStore(db)
    try:
        cpu = time.process_time()
        store.replace_all(iter(items))
        return time.process_time() - cpu
    finally:
        store.close()


def same_texts(items: list[IndexedFile]) -> list[tuple[str, str, str]]:
    """(heading, body, context) of every chunk the sidecar indexes."""
    return [(c.heading, c.text, c.context) for item in items for c in item.chunks if c.text]


def time_same_texts(texts: list[tuple[str, str, str]], db: Path) -> float:
    """CPU seconds of a plain FTS5 table of the sidecar's columns and tokenizer taking
    its texts in one transaction: the least FTS5 can spend indexing what it indexes."""
    conn = bare_fts.connect(db)
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(heading, body, context, tokenize='{TOKENIZER}')"
        )
        cpu = time.process_time()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t(heading, body, context) VALUES (?, ?, ?)", texts)
        conn.execute("COMMIT")
        return time.process_time() - cpu
    finally:
        conn.close()


def full_runs(root: Path, tmp: Path, rounds: int) -> FullRuns:
    _warm(root)
    runs = FullRuns([], [], 0, 0)
    runs.bare_chars = sum(
        len(body) for _, body in bare_fts.file_pieces(root, bare_fts.markdown_files(root))
    )
    for i in range(rounds):
        elapsed, cpu, runs.chunks = time_sidecar_full(root, tmp / f"sidecar-{i}.sqlite")
        runs.sidecar_s.append(elapsed)
        runs.sidecar_cpu_s.append(cpu)
        elapsed, cpu, runs.bare_rows = time_bare_full(root, tmp / f"bare-{i}.sqlite")
        runs.bare_s.append(elapsed)
        runs.bare_cpu_s.append(cpu)
        cpu, items = time_parse(root)
        runs.parse_cpu_s.append(cpu)
        runs.store_cpu_s.append(time_store(items, tmp / f"store-{i}.sqlite"))
        texts = same_texts(items)
        runs.sidecar_chars = sum(len(h) + len(b) + len(c) for h, b, c in texts)
        runs.same_texts_cpu_s.append(time_same_texts(texts, tmp / f"same-{i}.sqlite"))
    return runs


def incremental(root: Path, db: Path, edits: int) -> tuple[Latency, int]:
    """Edit a random file, then time ``sync_file`` on it; returns latency and files indexed."""
    writer = NoteWriter(SEED + 1)
    rels = bare_fts.markdown_files(root)
    store = SQLiteStore(db)
    try:
        store.replace_all(indexer.load_tree(root))
        samples: list[float] = []
        indexed = 0
        for _ in range(edits):
            rel = writer.rng.choice(rels)
            path = root / rel
            path.write_text(writer.edit(path.read_text(encoding="utf-8")), encoding="utf-8")
            started = time.perf_counter()
            indexed += indexer.sync_file(store, root, rel).indexed
            samples.append(time.perf_counter() - started)
        return Latency.of_seconds(samples), indexed
    finally:
        store.close()


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, f"full index of {FILES:,} notes and one-file incremental reindex")
    rounds, edits = (2, 50) if ctx.quick else (3, 200)
    with ctx.tempdir(NAME) as tmp:
        size = write_notes(tmp / "notes", FILES, TOTAL_BYTES, seed=SEED)
        progress(NAME, f"{size.files:,} notes, {size.bytes / 1e6:.2f} MB; {rounds} full rounds")
        full = full_runs(tmp / "notes", tmp, rounds)
        progress(NAME, f"{edits} one-file edits")
        incr, indexed = incremental(tmp / "notes", tmp / "incremental.sqlite", edits)
    sidecar_s = statistics.median(full.sidecar_s)
    bare_s = statistics.median(full.bare_s)
    sidecar_cpu = statistics.median(full.sidecar_cpu_s)
    bare_cpu = statistics.median(full.bare_cpu_s)
    parse_cpu = statistics.median(full.parse_cpu_s)
    store_cpu = statistics.median(full.store_cpu_s)
    same_cpu = statistics.median(full.same_texts_cpu_s)
    result.figures = [
        Figure("full index, sidecar (median)", sidecar_s, "s", 3, FULL_TARGET),
        Figure("full index, bare FTS5 loop (median)", bare_s, "s", 3),
        Figure("sidecar / bare", sidecar_s / bare_s, "x", target=RATIO_TARGET),
        Figure("full index CPU, sidecar (median)", sidecar_cpu, "s", 3),
        Figure("full index CPU, bare FTS5 loop (median)", bare_cpu, "s", 3),
        Figure("CPU sidecar / bare", sidecar_cpu / bare_cpu, "x"),
        Figure("characters tokenized, sidecar / bare", full.sidecar_chars / full.bare_chars, "x"),
        Figure("parse CPU alone / bare CPU", parse_cpu / bare_cpu, "x"),
        Figure("store CPU alone / bare CPU", store_cpu / bare_cpu, "x"),
        Figure("bare FTS5 of the sidecar's texts, CPU / bare CPU", same_cpu / bare_cpu, "x"),
        Figure("store CPU / bare FTS5 of the sidecar's texts", store_cpu / same_cpu, "x"),
        Figure("incremental sync_file p50", incr.p50, "ms", target=INCREMENTAL_TARGET),
        Figure("incremental sync_file p99", incr.p99, "ms"),
    ]
    result.tables.append(
        Table("incremental reindex (one edited file)", LATENCY_HEADERS, [incr.row("sync_file")])
    )
    result.notes += [
        f"corpus: {size.files:,} files, {size.bytes / 1e6:.2f} MB; sidecar stored "
        f"{full.chunks:,} chunks, the bare loop {full.bare_rows:,} pieces",
        f"full rounds (s): sidecar {', '.join(f'{s:.3f}' for s in full.sidecar_s)}; "
        f"bare {', '.join(f'{s:.3f}' for s in full.bare_s)}",
        f"full rounds CPU (s): sidecar {', '.join(f'{s:.3f}' for s in full.sidecar_cpu_s)}; "
        f"bare {', '.join(f'{s:.3f}' for s in full.bare_cpu_s)}",
        f"{indexed} of {edits} edits reindexed a changed file",
        f"taken apart, CPU (s, medians): parse {parse_cpu:.3f}, store {store_cpu:.3f}; a bare "
        f"FTS5 table of the sidecar's columns and texts {same_cpu:.3f}; characters tokenized: "
        f"sidecar {full.sidecar_chars / 1e6:.2f} M (heading, body, neighbour context), "
        f"bare {full.bare_chars / 1e6:.2f} M",
    ]
    result.details = {
        "corpus_bytes": size.bytes,
        "full": full.to_json(),
        "incremental": incr.to_json(),
        "edits_indexed": indexed,
    }
    return result
