"""pg_store: the PostgreSQL index store beside the SQLite one, same questions, same machine.

Three things decide whether a tier can move to PostgreSQL:

* that it finds the same evidence: LoCoMo dev budgeted recall, through
  ``locomo_inprocess.py`` with ``store=pgserver``, sparse and, unless ``--quick``,
  hybrid;
* what indexing and search cost through a real daemon: one ``sidecar serve`` per
  store on the same files (10k and 100k chunks; 1M with ``--full``), timed from spawn
  until the tier is indexed (a cold build), then one-file updates (``POST
  /memory/write``, answered once indexed) and searches over HTTP, the two daemons
  timed interleaved, request by request. The files are LoCoMo's conversations copied
  with variation (``corpus.Varied``: speakers renamed, dates shifted, turns subset and
  shuffled), as distinct as separate conversations; identical copies
  (``corpus.Replicator``) are measured beside them at 10k and 100k, since the figures
  before issue 34 came from them: there every chunk exists 70 times at 100k, every
  query's best scores tie many ways, and no exact top-k can prune;
* that namespaces keep apart: search p50 (HTTP and in process) on one namespace of
  10k chunks alone, then with 99 more of 10k each beside it (9 with ``--quick``),
  and the shared buffers a search touches in each case. The other namespaces are
  copied in SQL from the first (same text, same statistics): building each through
  the store would take an hour and measure nothing new.

PostgreSQL is a throwaway cluster (``pgserver``) on this machine, over a Unix socket.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench.context import Context
from bench.corpus import Replicator, Varied, source_files
from bench.daemon import Daemon, DaemonError
from bench.latency import _queries, http_probe, measure
from bench.locomo_data import subprocess_env
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.disk.tiers import INDEX_FILENAME
from sidecar.index import indexer
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.index.store import IndexStore
from sidecar.retrieval import query
from sidecar.retrieval.ranking import search_store
from sidecar.stores import fts5, open_store
from sidecar.stores.pg_search import SEARCH_WORDS, TOP, terms

NAME = "pg_store"
DESCRIPTION = "PostgreSQL store beside SQLite: LoCoMo recall, index and search at scale"
SIZES = (10_000, 100_000)
FULL_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (10_000,)
QUERIES_AT_1M = 100
UPDATES, QUICK_UPDATES = 40, 20
NAMESPACES, QUICK_NAMESPACES = 100, 10
NS_CHUNKS = 10_000
BUFFER_QUERIES = 30  # searches EXPLAINed for the shared buffers they touch
LIMIT = 10
RECALL_GAP = at_most(0.02, "<= 0.02")
ISOLATION = at_most(1.5, "<= 1.50x")
INDEX_TIMEOUT_S = {10_000: 900.0, 100_000: 3600.0, 1_000_000: 6 * 3600.0}
STORES = ("SQLite", "PostgreSQL")
# The corpora the scale table measures: copies that differ, and (up to 100k, not with
# --quick) the identical copies the earlier figures were measured on.
VARIED, REPLICATED = "varied", "replicated"
REPLICATED_UP_TO = 100_000
# Issue 34: top-k makes PostgreSQL no slower than SQLite at 100k chunks, and about 0.15x
# at 1M (keyed by hundreds of thousands of chunks, as indexed: about 1 and 10).
SEARCH_RATIO = {1: at_most(1.0, "<= 1.00x"), 10: at_most(0.15, "<= 0.15x")}
# Issue 34: a cold build of 1M chunks on PostgreSQL in five minutes at most (a 2-core
# machine); beside it, the same build's time as a ratio to SQLite's in the same run.
BUILD_TARGET = {10: at_most(300.0, "<= 300 s")}


def locomo_recall(ctx: Context, store: str, mode: str, out: Path) -> float:
    """Dev-split budgeted recall of the in-process retriever on one store."""
    cmd = [
        sys.executable, str(ctx.locomo().script), "--split", "dev",
        "--retriever", "bench/locomo_inprocess.py:factory", "--out", str(out),
        "--arg", f"mode={mode}", "--arg", f"store={store}",
    ]  # fmt: skip
    done = subprocess.run(
        cmd, cwd=ctx.repo, env=subprocess_env(ctx.repo), capture_output=True, text=True,
        timeout=3600, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"locomo_eval.py {store} {mode}: {done.stderr[-800:]}")
    return float(json.loads(out.read_text())["summary"]["dev"]["recall_budget"])


def pg_cluster(base: Path) -> Any:
    """A throwaway PostgreSQL cluster under ``base`` (``cleanup()`` stops it)."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in containers
        warnings.simplefilter("ignore")
        import pgserver
    base.chmod(0o755)  # run as root, pgserver runs PostgreSQL as a user of its own
    return pgserver.get_server(base / "pg", cleanup_mode="delete")


@contextlib.contextmanager
def cluster() -> Iterator[str]:
    """A throwaway cluster's URL; the cluster and its files are gone afterwards."""
    base = Path(tempfile.mkdtemp(prefix="sidecar-bench-pg-"))
    try:
        server = pg_cluster(base)
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def database(url: str, name: str) -> Iterator[str]:
    """A database of its own in the cluster (dropped afterwards, all namespaces at once)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield urllib.parse.urlsplit(url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def build(store: IndexStore, root: Path) -> float:
    started = time.monotonic()
    store.replace_all(indexer.load_tree(root, DEFAULT_MAX_CHARS))
    store.optimize()
    return time.monotonic() - started


# -- LoCoMo recall --------------------------------------------------------------------


def recall(ctx: Context, tmp: Path, result: BenchResult) -> None:
    modes = ["sparse"] if ctx.quick else ["sparse", "hybrid"]
    rows: list[list[str]] = []
    for mode in modes:
        progress(NAME, f"LoCoMo dev, {mode}, both stores")
        lite = locomo_recall(ctx, "", mode, tmp / f"sqlite-{mode}.json")
        pg = locomo_recall(ctx, "pgserver", mode, tmp / f"pg-{mode}.json")
        rows.append([mode, f"{lite:.3f}", f"{pg:.3f}", f"{pg - lite:+.3f}"])
        result.details[f"recall_{mode}"] = {"sqlite": lite, "postgresql": pg}
        result.figures.append(
            Figure(f"LoCoMo dev {mode}: |PostgreSQL - SQLite| recall", abs(pg - lite),
                   digits=3, target=RECALL_GAP, note=f"{pg:.3f} vs {lite:.3f}")
        )  # fmt: skip
    result.tables.append(Table("LoCoMo dev budgeted recall", ["mode", "SQLite",
                               "PostgreSQL", "difference"], rows))  # fmt: skip


# -- index and search through a daemon, at scale ----------------------------------------


@dataclass(slots=True)
class Scale:
    corpus: str
    chunks: int
    files: int
    index_s: dict[str, float]
    update: dict[str, Latency]
    search: dict[str, Latency]

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "chunks": self.chunks,
            "files": self.files,
            "index_s": {k: round(v, 2) for k, v in self.index_s.items()},
            "update": {k: v.to_json() for k, v in self.update.items()},
            "search_http": {k: v.to_json() for k, v in self.search.items()},
        }


def _start(root: Path, tmp: Path, name: str, extra: list[str], files: int, size: int) -> Daemon:
    """A daemon on ``root``, once its agent tier holds every file (a cold build); no cap
    on the tier's size, which a replicated corpus is far over."""
    crew = tmp / f"crew-{name}"
    crew.mkdir(exist_ok=True)
    daemon = Daemon(root, crew, tmp / f"daemon-{name}.log",
                    extra_args=["--embedder", "none", "--cap-tier-bytes", str(1 << 40),
                                *extra])  # fmt: skip
    try:
        daemon.start()
        daemon.wait_ready(timeout=120)
        daemon.wait_indexed(files, timeout=INDEX_TIMEOUT_S[size])
    except BaseException:
        daemon.stop()
        raise
    return daemon


def _updates(daemons: dict[str, Daemon], n: int) -> dict[str, Latency]:
    """One-file updates through the API, interleaved: an append to a small daily file,
    answered once the file is written and its changed chunks indexed."""
    samples: dict[str, list[float]] = {name: [] for name in daemons}
    for i in range(n):
        for j in range(len(daemons)):
            name = list(daemons)[(i + j) % len(daemons)]
            line = f"- update {i}: the ledger moved to shelf {i * 7919 % 1000}"
            body = {"scope": "agent", "file": f"daily/2001-01-0{i % 4 + 1}.md", "mode": "append",
                    "content": line}  # fmt: skip
            started = time.perf_counter()
            status, answer = daemons[name].client.json("POST", "/memory/write", body)
            elapsed = time.perf_counter() - started
            if status != 201 or not answer.get("indexed"):
                raise DaemonError(f"{name}: write answered {status}: {answer}")
            samples[name].append(elapsed)
    return {name: Latency.of_seconds(s) for name, s in samples.items()}


def scale(
    ctx: Context, tmp: Path, url: str, size: int, roots: dict[str, Replicator], corpus: str
) -> Scale:
    loc = ctx.locomo()
    grown = {name: rep.grow_to(size) for name, rep in roots.items()}["PostgreSQL"]
    progress(NAME, f"{size:,} chunks ({corpus}): {grown.files:,} files, "
             f"{grown.bytes / 1e6:.1f} MB a store")  # fmt: skip
    for path in roots["SQLite"].root.glob(f"{INDEX_FILENAME}*"):
        path.unlink()  # each size is a cold build, as the fresh namespace is
    ns = f"scale-{corpus}-{size}"
    extra = {"SQLite": [], "PostgreSQL": ["--agent-store", url, "--namespace", ns]}
    daemons: dict[str, Daemon] = {}
    index_s: dict[str, float] = {}
    try:
        for name in STORES:
            progress(NAME, f"{size:,} chunks: {name} daemon's cold build")
            started = time.monotonic()
            daemons[name] = _start(roots[name].root, tmp, name, extra[name], grown.files, size)
            index_s[name] = time.monotonic() - started
        chunks = daemons["PostgreSQL"].client.status()["total_chunks"]
        update = _updates(daemons, QUICK_UPDATES if ctx.quick else UPDATES)
        if size > 100_000:
            queries = _queries(ctx, loc, 100_000)[:QUERIES_AT_1M]
        else:
            queries = _queries(ctx, loc, size)
        progress(NAME, f"{chunks:,} chunks indexed; {len(queries)} queries over HTTP")
        search = measure({name: http_probe(d) for name, d in daemons.items()}, queries)
    finally:
        for daemon in daemons.values():
            daemon.stop()
        for rep in roots.values():
            for path in (rep.root / "daily").glob("2001-01-0?.md"):
                path.unlink()
    return Scale(corpus, chunks, grown.files, index_s, update, search)


# -- many namespaces ----------------------------------------------------------------


def _columns(conn: psycopg.Connection[Any], table: str) -> str:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "AND column_name <> 'namespace' ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return ", ".join(r[0] for r in rows)


KEYS = {"files": "path", "chunks": "id", "blocks": "lexeme, bound, id", "terms": "lexeme",
        "dead": "chunk_id"}  # fmt: skip


def clone(url: str, source: str, targets: list[str]) -> None:
    """Copy one namespace's rows under other names, in SQL (chunk ids are per namespace,
    so they are kept); a trigger counts each copy's chunks."""
    with psycopg.connect(url, autocommit=True) as conn:
        cols = {t: _columns(conn, t) for t in KEYS}
        for k, target in enumerate(targets):
            with conn.transaction():
                for table, names in cols.items():
                    override = " OVERRIDING SYSTEM VALUE" if table in ("chunks", "blocks") else ""
                    conn.execute(
                        f"INSERT INTO {table} (namespace, {names}){override} "
                        f"SELECT %s, {names} FROM {table} WHERE namespace = %s "
                        f"ORDER BY {KEYS[table]}",  # in key order: appends to each index
                        (target, source),
                    )
                conn.execute(  # the impacts copied were computed against the source's average
                    "UPDATE namespace_stats SET impact_avgdl = (SELECT impact_avgdl FROM "
                    "namespace_stats WHERE namespace = %s) WHERE namespace = %s",
                    (source, target),
                )
            if (k + 1) % 10 == 0:
                progress(NAME, f"{k + 1} of {len(targets)} namespaces copied")
        conn.execute("VACUUM (ANALYZE) files, chunks, blocks, terms")


def buffers(url: str, namespace: str, queries: list[str]) -> float:
    """Mean shared buffers (hit + read) one BM25 search touches, from EXPLAIN: what grows
    if a search reads other namespaces' rows."""
    touched: list[int] = []
    with psycopg.connect(url, autocommit=True) as conn:
        for q in queries:
            planned = query.plan(q)
            if planned is None:
                continue
            tree = fts5.parse(planned.match)
            if not fts5.is_bag_of_words(tree):
                continue
            params = {"ns": namespace, "top": TOP, "limit": LIMIT, **terms(tree)}
            (plan_json,) = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + SEARCH_WORDS, params
            ).fetchone()  # type: ignore[misc]
            top = plan_json[0]["Plan"]
            touched.append(int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"]))
    return sum(touched) / max(1, len(touched))


@dataclass(slots=True)
class Isolation:
    namespaces: int
    chunks: int
    copy_s: float
    alone: dict[str, Latency]
    among: dict[str, Latency]
    buffers_alone: float
    buffers_among: float

    def to_json(self) -> dict[str, Any]:
        return {
            "namespaces": self.namespaces,
            "chunks_each": self.chunks,
            "copy_s": round(self.copy_s, 1),
            "alone": {k: v.to_json() for k, v in self.alone.items()},
            "among": {k: v.to_json() for k, v in self.among.items()},
            "shared_buffers_per_search": {
                "alone": self.buffers_alone,
                "among": self.buffers_among,
            },
        }


def isolation(ctx: Context, tmp: Path, url: str) -> Isolation:
    loc = ctx.locomo()
    count = QUICK_NAMESPACES if ctx.quick else NAMESPACES
    rep = Replicator(source_files(loc.dev_corpora()), tmp / "ns")
    grown = rep.grow_to(NS_CHUNKS)
    queries = _queries(ctx, loc, NS_CHUNKS)
    with database(url, "sidecar_isolation") as db:
        progress(NAME, f"namespaces: the first, {grown.chunks:,} chunks, by a daemon")
        daemon = _start(rep.root, tmp, "iso", ["--agent-store", db, "--namespace", "iso-000"],
                        grown.files, NS_CHUNKS)  # fmt: skip
        store: IndexStore | None = None
        try:
            first = daemon.client.json("GET", "/healthz")[1]["tiers"]["agent"]["store"]["namespace"]
            store = open_store(db, first)
            store.optimize()  # as the daemon does after its build: no search before it
            chunks = store.stats().total_chunks

            def inproc(q: str) -> None:
                planned = query.plan(q)
                if planned is not None:
                    search_store(store, planned, LIMIT)

            probes = {"HTTP": http_probe(daemon), "in process": inproc}
            alone = measure(probes, queries)
            buffers_alone = buffers(db, first, queries[:BUFFER_QUERIES])
            others = [f"{first}-copy-{k:03d}" for k in range(1, count)]
            progress(NAME, f"namespaces: copying the first {len(others)} times in SQL")
            started = time.monotonic()
            clone(db, first, others)
            copy_s = time.monotonic() - started
            among = measure(probes, queries)
            buffers_among = buffers(db, first, queries[:BUFFER_QUERIES])
            # And searches spread over the namespaces, each query to a random one.
            rng = random.Random(19)
            spread = [open_store(db, ns) for ns in rng.sample([first, *others], min(10, count))]
            try:

                def anywhere(q: str) -> None:
                    planned = query.plan(q)
                    if planned is not None:
                        search_store(rng.choice(spread), planned, LIMIT)

                among["in process, spread"] = measure({"x": anywhere}, queries)["x"]
            finally:
                for s in spread:
                    s.close()
        finally:
            daemon.stop()
            if store is not None:
                store.close()
    return Isolation(count, chunks, copy_s, alone, among, buffers_alone, buffers_among)


# -- the benchmark ------------------------------------------------------------------


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "PostgreSQL store beside SQLite: recall, index and search at scale")
    loc = ctx.locomo()
    sizes = QUICK_SIZES if ctx.quick else FULL_SIZES if ctx.full else SIZES
    scales: list[Scale] = []
    with ctx.tempdir(NAME) as tmp:
        recall(ctx, tmp, result)
        sources = source_files(loc.dev_corpora())
        kinds = {VARIED: Varied} if ctx.quick else {VARIED: Varied, REPLICATED: Replicator}
        roots = {corpus: {name: kind(sources, tmp / corpus / name.lower()) for name in STORES}
                 for corpus, kind in kinds.items()}  # fmt: skip
        with cluster() as url:
            for size in sizes:
                for corpus in kinds:
                    if corpus == VARIED or size <= REPLICATED_UP_TO:
                        scales.append(scale(ctx, tmp, url, size, roots[corpus], corpus))
            iso = isolation(ctx, tmp, url)
    _report_scale(result, scales)
    _report_isolation(result, iso)
    return result


def _report_scale(result: BenchResult, scales: list[Scale]) -> None:
    rows: list[list[str]] = []
    for s in scales:
        tag = f"{s.chunks // 1000:,}k chunks" + (" replicated" if s.corpus == REPLICATED else "")
        for name in STORES:
            rows.append([f"{tag}, {name}", f"{s.index_s[name]:.1f}",
                         f"{s.update[name].p50:.1f}", f"{s.search[name].p50:.2f}",
                         f"{s.search[name].p99:.2f}"])  # fmt: skip
            build_target = BUILD_TARGET.get(s.chunks // 100_000) if name != "SQLite" else None
            result.figures += [
                Figure(f"{tag}: cold index, {name}", s.index_s[name], "s", 1, build_target),
                Figure(f"{tag}: one-file update p50, {name}", s.update[name].p50, "ms"),
                Figure(f"{tag}: HTTP search p50, {name}", s.search[name].p50, "ms"),
                Figure(f"{tag}: HTTP search p99, {name}", s.search[name].p99, "ms"),
            ]
        built = s.index_s["PostgreSQL"] / max(s.index_s["SQLite"], 1e-9)
        result.figures.append(Figure(f"{tag}: PostgreSQL / SQLite cold index", built, "x"))
        ratio = s.search["PostgreSQL"].p50 / max(s.search["SQLite"].p50, 1e-9)
        target = SEARCH_RATIO.get(s.chunks // 100_000) if s.corpus == VARIED else None
        result.figures.append(Figure(f"{tag}: PostgreSQL / SQLite HTTP search p50", ratio, "x",
                                     target=target))  # fmt: skip
    result.tables.append(Table(
        "one daemon per store on the same corpus (sparse; searches interleaved)",
        ["", "cold index s", "update p50 ms", "search p50 ms", "search p99 ms"], rows,
    ))  # fmt: skip
    result.tables.append(Table(
        "HTTP search latency",
        LATENCY_HEADERS,
        [s.search[n].row(f"{s.chunks // 1000:,}k {s.corpus}, {n}") for s in scales for n in STORES],
    ))  # fmt: skip
    result.details["scale"] = [s.to_json() for s in scales]
    result.notes += [
        "corpus: LoCoMo dev conversations copied with variation (speakers renamed from a "
        "pool, dates shifted, 80% of each session's turns kept, shuffled), the same files "
        "for both stores; 'replicated': identical copies, as measured before issue 34 "
        "(every best score tied tens of ways), beside them for comparison, no target",
        "cold index: from spawning `sidecar serve` until /memory/status says every file "
        "is indexed (the daemon's cold build in steps); PostgreSQL in a fresh namespace, "
        "each batch's chunks read into lexemes and their postings packed by the sidecar, "
        "sent by binary COPY (docs/postgresql.md)",
        "update: POST /memory/write appending one line to a small daily file, answered "
        "once the file is on disk and its changed chunks indexed",
        "PostgreSQL computes FTS5's BM25 (same k1, b, column weights) from a postings "
        "table (each term's postings packed 128 to a row, by impact); an OR of words walks "
        "them by block bound, reading on only the terms the k-th best floor cannot leave "
        "out (MaxScore), and stops once no unseen chunk can enter the top k (exact); "
        "its stems are Snowball English where SQLite's are Porter",
    ]


def _report_isolation(result: BenchResult, iso: Isolation) -> None:
    tag = f"{iso.namespaces} namespaces of {iso.chunks // 1000}k"
    ratio = iso.among["HTTP"].p50 / iso.alone["HTTP"].p50
    result.figures += [
        Figure("1 namespace of 10k: HTTP search p50", iso.alone["HTTP"].p50, "ms"),
        Figure(f"{tag}: HTTP search p50 (same namespace)", iso.among["HTTP"].p50, "ms"),
        Figure(f"{tag} / 1 namespace: HTTP p50", ratio, "x", target=ISOLATION),
        Figure(
            f"{tag}: in-process p50, a random namespace each",
            iso.among["in process, spread"].p50,
            "ms",
        ),
        Figure(
            f"{tag} / 1 namespace: shared buffers per search",
            iso.buffers_among / max(iso.buffers_alone, 1e-9),
            "x",
            target=ISOLATION,
        ),
    ]
    rows = [lat.row(f"1 namespace, {k}") for k, lat in iso.alone.items()]
    rows += [lat.row(f"{iso.namespaces} namespaces, {k}") for k, lat in iso.among.items()]
    result.tables.append(Table(f"search in one namespace of {iso.chunks:,} chunks, alone and "
                               f"among {iso.namespaces}", LATENCY_HEADERS, rows))  # fmt: skip
    result.details["isolation"] = iso.to_json()
    result.notes.append(
        f"namespaces: {iso.namespaces - 1} copies of the first made in SQL in "
        f"{iso.copy_s:.0f} s; shared buffers per BM25 search (EXPLAIN ANALYZE, mean of "
        f"{BUFFER_QUERIES}): {iso.buffers_alone:.0f} alone, {iso.buffers_among:.0f} among "
        f"{iso.namespaces}"
    )
