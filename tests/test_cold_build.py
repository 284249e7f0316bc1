"""Cold builds: an unindexed tier is indexed in committed batches that searches see at
once, writes are answered between them, progress shows in status and the log, a build
killed half way is completed on the next start, and the CLI's bar stays off pipes."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import io
import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import threading
import urllib.error
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sidecar import metrics
from sidecar.api.scrape import read_state, render
from sidecar.config import Settings
from sidecar.disk.tiers import Tier
from sidecar.index import build, indexer, jobs, parse_pool, queue
from sidecar.index.parse_pool import ParsePool
from sidecar.index.progress import BuildProgress, ProgressBar, tracked
from sidecar.index.store import IndexedFile, PreparedFile, chunk_rows, metadata_json
from sidecar.service import MemoryService
from sidecar.stores import head_start
from sidecar.stores.sqlite import SQLiteStore
from tests.conftest import eventually
from tests.sidecar_process import SidecarProcess, wait_for

REPO = Path(__file__).resolve().parent.parent


def make_tree(root: Path, files: int, words: int = 40) -> None:
    """``files`` notes, each findable by its own word ``uniqNNNNN``."""
    for i in range(files):
        folder = root / f"notes/f{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(f"w{(i * 7 + k) % 500}" for k in range(words))
        (folder / f"n{i:05d}.md").write_text(f"# Note {i}\n\nuniq{i:05d} {body}\n")


def word_of(rel: str) -> str:
    """The word only the note at ``rel`` (written by ``make_tree``) holds."""
    return f"uniq{rel[-8:-3]}"


async def indexed_and_not(svc: MemoryService) -> tuple[list[str], list[str]]:
    """The agent tier's notes the index holds, and those it does not hold yet."""
    state = svc.indexes.tiers["agent"]
    held = await svc.indexes.read(state.store.file_states)
    on_disk = sorted(rel for rel, _ in indexer.walk_markdown(state.tier.root))
    return sorted(held), [rel for rel in on_disk if rel not in held]


class Gate:
    """Lets the build parse one batch per permit, so a test sees it half done."""

    def __init__(self) -> None:
        self.permits = threading.Semaphore(0)
        self.blocked = threading.Event()  # a parse is waiting for a permit
        self.open = False

    def allow(self, batches: int = 1) -> None:
        for _ in range(batches):
            self.permits.release()

    def release_all(self) -> None:
        self.open = True
        self.allow(10_000)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    """Builds parse in process, one commit and one step per file, each batch behind the
    gate; the first batch passes at once."""
    gate = Gate()
    real = indexer.read_parsed
    calls = 0

    def gated(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 1 and not gate.open:
            gate.blocked.set()
            assert gate.permits.acquire(timeout=20), "the test never let the build go on"
            gate.blocked.clear()
        return real(*args)

    monkeypatch.setattr(indexer, "read_parsed", gated)
    monkeypatch.setattr(jobs, "BUILD_MIN_FILES", 20)
    monkeypatch.setattr(jobs, "POOL_MIN_FILES", 10**9)
    monkeypatch.setattr(build, "STEP_S", 0.0)
    monkeypatch.setattr(build, "COMMIT_FILES", 1)
    yield gate
    gate.release_all()


@pytest.fixture
async def cold_service(settings: Settings, gate: Gate) -> AsyncIterator[MemoryService]:
    make_tree(settings.agent_dir, 200)
    svc = MemoryService(settings)
    await svc.start()
    try:
        yield svc
    finally:
        gate.release_all()
        await svc.stop()


async def test_status_shows_the_build_and_searches_see_what_is_committed(
    cold_service: MemoryService, gate: Gate
) -> None:
    svc = cold_service
    await asyncio.to_thread(gate.blocked.wait, 10)
    status = await svc.status("agent")
    assert status["indexing"] is True and status["search_ready"] is False
    progress = status["build"]
    assert progress["state"] == "building" and progress["kind"] == "cold"
    assert progress["files_total"] == 200
    assert 0 < progress["files_done"] < 200
    assert status["total_files"] == progress["files_done"]  # every batch committed
    assert set(progress) == {"state", "kind", "files_done", "files_total", "rate_per_s",
                             "started_at"}  # fmt: skip
    # What is committed is searchable now; what is not parsed yet is not.
    done, waiting = await indexed_and_not(svc)
    assert len(done) == progress["files_done"]
    hits = (await svc.search.search(word_of(done[0]), "agent", 10)).to_json()
    assert [r["file"] for r in hits["results"]] == [done[0]]
    hits = (await svc.search.search(word_of(waiting[0]), "agent", 10)).to_json()
    assert hits["results"] == []
    health = await svc.health()
    assert health["tiers"]["agent"]["state"] == "indexing"
    # What a metrics scrape reads, from any thread: the build job is running.
    assert await asyncio.to_thread(svc.indexes.queue.depth, "agent") == 1
    age = await asyncio.to_thread(svc.indexes.queue.oldest_age, "agent")
    assert age is not None and age >= 0
    builds = metrics.INDEX_BUILDS.labels(tier="agent", kind="cold")
    before = builds._value.get()

    gate.release_all()
    await svc.indexes.queue.wait_idle()
    assert builds._value.get() == before + 1
    done = await svc.status("agent")
    assert "build" not in done and done["total_files"] == 200 and done["indexing"] is False
    last = (await svc.search.search(word_of(waiting[-1]), "agent", 10)).to_json()
    assert [r["file"] for r in last["results"]] == [waiting[-1]]
    progress_of = svc.indexes.tiers["agent"].progress
    assert progress_of is not None and progress_of.state == "done"
    assert progress_of.files_done == 200


def merging(db: Path) -> tuple[int, int]:
    """The index's FTS5 'automerge' and 'crisismerge', read by a connection of the test's
    own."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = dict(conn.execute("SELECT k, v FROM chunks_fts_config"))
    return int(rows.get("automerge", 4)), int(rows.get("crisismerge", 16))  # FTS5's defaults


async def test_a_build_pauses_segment_merging_and_the_optimize_after_it_resumes_it(
    cold_service: MemoryService, gate: Gate, settings: Settings
) -> None:
    """Merging as each batch commits rewrites segments the build's closing optimize
    merges anyway, and so does a level merged at once when it reaches 16 segments (3 s of
    a 50k build); left as in the build after it, every later edit would add a segment to
    search."""
    db = settings.agent_dir / "index.sqlite"
    await asyncio.to_thread(gate.blocked.wait, 10)
    assert merging(db) == (0, 64)
    gate.release_all()

    async def resumed() -> bool:
        return merging(db) == (4, 16)

    await eventually(resumed, "the optimize after the build")
    assert (await cold_service.status("agent"))["total_files"] == 200


def test_merging_left_paused_by_a_build_cut_short_resumes_on_the_next_open(
    tmp_path: Path,
) -> None:
    """Killed between a build's last batch and its optimize, an index would otherwise
    keep merging off for good: nothing else turns it back on."""
    root = tmp_path / "tier"
    make_tree(root, 3)
    db = tmp_path / "index.sqlite"
    store = SQLiteStore(db)
    rels = [rel for rel, _ in indexer.walk_markdown(root)]
    store.add_files([f for _, f, _ in indexer.read_parsed(root, rels, 650) if f is not None])
    store.close()  # no optimize: the process died first
    assert merging(db) == (0, 64)
    SQLiteStore(db).close()
    assert merging(db) == (4, 16)
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:  # only one left as a build set it
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('crisismerge', 64)")
    SQLiteStore(db).close()
    assert merging(db) == (4, 16)


async def test_a_write_is_answered_between_build_steps(
    cold_service: MemoryService, gate: Gate
) -> None:
    svc = cold_service
    await asyncio.to_thread(gate.blocked.wait, 10)
    write = asyncio.create_task(
        svc.notes.write("agent", "daily/2026-01-01.md", "- the kumquat shipment arrived", "append")
    )
    await eventually(
        lambda: asyncio.sleep(0, svc.indexes.queue.depth("agent") == 2), "the write queued"
    )
    gate.allow(1)  # one more batch: the step ends, and the write goes before the next
    answer = await asyncio.wait_for(write, 10)
    assert answer["indexed"] is True
    status = await svc.status("agent")
    assert status["build"]["state"] == "building"  # the write did not wait for the build
    hits = (await svc.search.search("kumquat", "agent", 10)).to_json()
    assert [r["file"] for r in hits["results"]] == ["daily/2026-01-01.md"]

    gate.release_all()
    await svc.indexes.queue.wait_idle()
    status = await svc.status("agent")
    assert status["total_files"] == 201 and "build" not in status


async def test_an_edit_during_the_build_is_not_overwritten_by_it(
    cold_service: MemoryService, gate: Gate
) -> None:
    """The build read the file before the edit; the edit's own job read it after."""
    svc = cold_service
    await asyncio.to_thread(gate.blocked.wait, 10)
    _, waiting = await indexed_and_not(svc)
    late = waiting[-1]  # in a batch still to come
    (svc.settings.agent_dir / late).write_text("# Rewritten\n\nrewritten with quince\n")
    # Queued behind the build's step, which waits at the gate: let it go on, then wait.
    edited = svc.indexes.queue.submit(queue.JobKey("agent", queue.FILE, late))
    gate.release_all()
    await edited
    await svc.indexes.queue.wait_idle()
    hits = (await svc.search.search("quince", "agent", 10)).to_json()
    assert [r["file"] for r in hits["results"]] == [late]
    old = (await svc.search.search(word_of(late), "agent", 10)).to_json()
    assert old["results"] == []


async def test_a_build_an_outage_interrupted_goes_on_once_the_store_answers(
    cold_service: MemoryService, gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mid-build, the store is out of reach (as a shared one can be): the first heal
    cannot tell yet whether the index survived, the build's next step is dropped while
    the tier is broken, and the heal that finds the index intact must restart it."""
    svc = cold_service
    monkeypatch.setattr(jobs, "HEAL_RETRY_S", 0.05)
    await asyncio.to_thread(gate.blocked.wait, 10)
    state = svc.indexes.tiers["agent"]
    asked: list[int] = []

    def intact() -> bool:
        asked.append(1)
        if len(asked) == 1:
            raise RuntimeError("the server is still out of reach")
        return True

    monkeypatch.setattr(state.store, "intact", intact)
    svc.indexes.mark_broken("agent", "index store unreachable (a test)")
    gate.release_all()

    async def all_indexed() -> bool:
        return not (await indexed_and_not(svc))[1] and state.build is None

    await eventually(all_indexed, "the interrupted build to go on and finish")
    assert len(asked) >= 2 and state.broken is None


def dump_rows(store: SQLiteStore) -> tuple[list[Any], list[Any]]:
    """Every files and chunks row but the time it was indexed at, in insertion order."""
    # the FTS index agrees with the chunk rows it was filled from (raises if not)
    with contextlib.closing(sqlite3.connect(store.path)) as check:
        check.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    conn = store.db.reader()
    files = conn.execute("SELECT path, size, mtime_ns, sha256, metadata FROM files ORDER BY path")
    chunks = conn.execute(
        "SELECT id, path, start_line, end_line, heading, body, context, hash FROM chunks "
        "ORDER BY id"
    )
    return files.fetchall(), chunks.fetchall()


def plain(parsed: list[indexer.Parsed]) -> list[indexer.Parsed]:
    """Parsed files as one type (a worker's are PreparedFile), with the chunks a store
    inserts (those with text)."""
    return [
        (rel, None if f is None else
         IndexedFile(f.path, f.state, f.metadata, [c for c in f.chunks if c.text]), why)
        for rel, f, why in parsed
    ]  # fmt: skip


def test_a_build_in_worker_processes_indexes_what_one_in_process_does(tmp_path: Path) -> None:
    root = tmp_path / "tier"
    make_tree(root, 300)
    (root / "notes/f0/skipped.md").write_text("x")
    os.link(root / "notes/f0/skipped.md", tmp_path / "second-link")
    # files with no text to index: each keeps a files row and gets no chunk
    (root / "notes/f1/front-matter-only.md").write_text("---\ntitle: Nothing yet\n---\n")
    (root / "notes/f1/empty.md").write_text("")
    (root / "notes/f1/blank.md").write_text("\n  \n\n")
    textless = {"notes/f1/front-matter-only.md", "notes/f1/empty.md", "notes/f1/blank.md"}
    plan_store = SQLiteStore(tmp_path / "plan.sqlite")
    rels = indexer.plan_tree(plan_store, root).new
    plan_store.close()
    pool = ParsePool(2)
    try:
        assert pool.usable
        parsed = list(pool.parse(root, rels, 650))
        # Each has answered (and so run nicer than the daemon, whose writer inserting what
        # they parse sets the pace), round robin over five batches.
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        for worker in pool._workers:
            pid = worker.proc.pid if worker.proc is not None else worker.pid
            nice = os.getpriority(os.PRIO_PROCESS, pid)
            assert nice == min(19, mine + parse_pool.WORKER_NICE)
        in_process = indexer.read_parsed(root, rels, 650)
        assert plain(parsed) == plain(in_process)
        # what the workers computed for the store is what it computes itself
        for (_, item, _), (_, own, _) in zip(parsed, in_process, strict=True):
            if item is not None:
                assert isinstance(item, PreparedFile) and own is not None
                assert item.metadata_text == metadata_json(item.metadata)
                assert item.rows == chunk_rows(own.path, own.chunks)
        # and a store holds the same rows whichever way a build's files were parsed
        held = []
        for name, batch in (("workers", parsed), ("in-process", in_process)):
            store = SQLiteStore(tmp_path / f"{name}.sqlite")
            store.add_files([f for _, f, _ in batch if f is not None])
            held.append(dump_rows(store))
            store.close()
        assert held[0] == held[1] and len(held[0][1]) >= 300
        files, chunks = held[0]
        assert textless <= {f[0] for f in files}
        assert not textless & {c[1] for c in chunks}
        assert all(c[5].strip() for c in chunks)  # no chunk row without text
        # A worker that dies mid-build: what it had not answered is parsed in process.
        os.kill(pool._workers[0].pid, signal.SIGKILL)
        assert plain(list(pool.parse(root, rels, 650))) == plain(in_process)
    finally:
        pool.close()
    ((rel, item, why),) = [p for p in indexer.read_parsed(root, rels, 650) if p[1] is None]
    assert rel == "notes/f0/skipped.md" and item is None and "2 hard links" in str(why)


def test_a_head_start_is_taken_over_by_the_build_that_lists_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests sent before the daemon loaded are not sent again; requests for a list the
    build does not begin with are dropped, answers and all."""
    root = tmp_path / "tier"
    make_tree(root, 450)
    pool = head_start.head_start([(root, tmp_path / "index.sqlite")], 650)
    assert pool is not None
    sent = []
    submit = pool._submit
    monkeypatch.setattr(pool, "_submit", lambda *a: sent.append(a[1]) or submit(*a))
    try:
        assert pool.parsing_ahead(root)
        plan_store = SQLiteStore(tmp_path / "plan.sqlite")
        rels = indexer.plan_tree(plan_store, root).new
        plan_store.close()
        parsing = pool.parse(root, rels, 650)
        assert parsing.taken_over == 450 and not pool.parsing_ahead(root)
        assert plain(list(parsing)) == plain(indexer.read_parsed(root, rels, 650))
        assert sent == [] and pool._answers == {}
        # a list that does not start with what was sent: parsed afresh, nothing left behind
        pool.ahead(root, rels[:200], 650)
        other = pool.parse(root, rels[1:], 650)
        assert other.taken_over == 0
        assert plain(list(other)) == plain(indexer.read_parsed(root, rels[1:], 650))
        assert [f for batch in sent[4:] for f in batch] == rels[1:] and pool._answers == {}
        # another chunk size is another parse
        pool.ahead(root, rels, 650)
        resized = pool.parse(root, rels, 400)
        assert resized.taken_over == 0
        resized.close()
        # a note added after the walk: the batches before it are taken over, not the short
        # last one, which does not ask for it
        (root / "notes/f6/zz-late.md").write_text("# Late\n\nuniqlate arrived last\n")
        longer = [*rels, "notes/f6/zz-late.md"]
        pool.ahead(root, rels, 650)
        grown = pool.parse(root, longer, 650)
        assert grown.taken_over == 448
        assert plain(list(grown)) == plain(indexer.read_parsed(root, longer, 650))
        # and one deleted early in the walk: what came before it is kept
        pool.ahead(root, rels, 650)
        shorter = [*rels[:100], *rels[101:]]
        assert pool.parse(root, shorter, 650).taken_over == 64
    finally:
        pool.close()
    assert pool._answers == {} and not feeders()


def feeders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sidecar-parse-feeder"]


def test_a_build_dropped_part_way_leaves_no_thread_or_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_pool, "AHEAD_FILES", 256)  # four requests ahead: the feeder waits
    root = tmp_path / "tier"
    make_tree(root, 600)
    store = SQLiteStore(tmp_path / "index.sqlite")
    rels = indexer.plan_tree(store, root).new
    pool = ParsePool(2)
    try:
        cold = build.Build(BuildProgress("agent", "cold", len(rels)), root, rels, 650, pool)
        assert not cold.step(store, {}, budget_s=0.0)  # one commit, then dropped (a failure)
        assert feeders() and pool._answers
        cold.close()
        assert not feeders() and pool._answers == {}
        # a pool closed under a parsing stops it too and keeps no answer; what its taker
        # has not had yet, it parses in process
        under_way = pool.parse(root, rels, 650)
        first = next(under_way)
        pool.close()
        assert not feeders() and pool._answers == {}
        rest: list[indexer.Parsed] = []
        taker = threading.Thread(target=lambda: rest.extend(under_way), daemon=True)
        taker.start()
        taker.join(60)
        assert not taker.is_alive(), "the taker waits for requests the pool never sent"
        assert plain([first, *rest]) == plain(indexer.read_parsed(root, rels, 650))
    finally:
        pool.close()
        store.close()


async def test_a_head_start_no_build_takes_over_is_let_go(tier_dirs: tuple[Path, Path]) -> None:
    """Parsed ahead for a build that does not come (files gone meanwhile, too few left to
    build in bulk): the requests are dropped and the workers stopped once the tier is
    reconciled, not kept until the daemon stops."""
    agent, crew = tier_dirs  # an agent alone: no other tier's reconcile lets the pool go
    settings = Settings(agent_dir=agent, crew_dir=crew, role="agent", embedder="none")
    make_tree(settings.agent_dir, 450)
    pool = head_start.head_start(settings.sqlite_indexes(), settings.chunk_chars)
    assert pool is not None and pool.parsing_ahead(settings.agent_dir)
    for rel in [r for r, _ in indexer.walk_markdown(settings.agent_dir)][:360]:
        (settings.agent_dir / rel).unlink()  # 90 left: indexed one by one, as edits are
    svc = MemoryService(settings, pool)
    await svc.start()
    try:
        await svc.indexes.queue.wait_idle()
        assert not svc.indexes.tiers["agent"].build
        assert (await svc.status("agent"))["total_files"] == 90
        assert svc.indexes._pool is None and not pool.usable and pool._answers == {}
    finally:
        await svc.stop()


def test_a_head_start_is_for_a_cold_index_big_enough_for_workers(tmp_path: Path) -> None:
    root = tmp_path / "tier"
    make_tree(root, head_start.POOL_MIN_FILES - 1)
    tier = Tier("agent", root)
    assert head_start.indexed_paths(tier.index_path) == set()  # no index: built from nothing
    assert head_start.head_start([(root, tier.index_path)], 650) is None  # too few files
    make_tree(root, 600)
    store = SQLiteStore(tier.index_path)
    rels = indexer.plan_tree(store, root).new
    store.add_files([f for _, f, _ in indexer.read_parsed(root, rels[:150], 650) if f])
    store.close()
    assert head_start.indexed_paths(tier.index_path) is None  # built: nothing to start
    assert head_start.head_start([(root, tier.index_path)], 650) is None
    # an unfinished build: the files it committed are left out, the rest go in walk order
    store = SQLiteStore(tier.index_path)
    store.set_meta(build.BUILDING, "2026-11-26T10:00:00+00:00")
    store.close()
    assert head_start.indexed_paths(tier.index_path) == set(rels[:150])
    pool = head_start.head_start([(root, tier.index_path)], 650)
    assert pool is not None
    try:
        assert pool._ahead[root][0] == rels[150:]
    finally:
        pool.close()
    # a folder the walk cannot enter is no head start, not a failed start (the daemon says
    # what is wrong with it)
    beneath_a_file = tier.index_path / "tier"
    assert head_start.head_start([(beneath_a_file, tmp_path / "x.sqlite")], 650) is None
    # an index of another schema, or not a database, is rebuilt from nothing
    with sqlite3.connect(tier.index_path) as conn:
        conn.execute("PRAGMA user_version = 1")
    assert head_start.indexed_paths(tier.index_path) == set()
    tier.index_path.write_bytes(b"not a database" * 100)
    assert head_start.indexed_paths(tier.index_path) == set()


def test_worker_pipes_hold_a_head_start_and_whole_answers(tmp_path: Path) -> None:
    """At the default 64 KB, the requests a head start sends would block the daemon's start
    until the workers read them, and a worker would block part way through each answer
    (several hundred KB) until the daemon's reader thread had drained it."""
    make_tree(tmp_path, 1)
    pool = ParsePool(1)
    try:
        (worker,) = pool._workers
        assert worker.proc is None  # forked: its pipes are the pool's own
        assert len(list(pool.parse(tmp_path, ["notes/f0/n00000.md"], 650))) == 1  # it serves
        answers = os.open(f"/proc/{worker.pid}/fd/1", os.O_WRONLY)  # the same pipe
        try:
            for end in (worker.stdin.fileno(), answers):
                assert fcntl.fcntl(end, fcntl.F_GETPIPE_SZ) == parse_pool.PIPE_BYTES
        finally:
            os.close(answers)
    finally:
        pool.close()


def test_a_forked_worker_leaves_what_it_inherited_out_of_its_collections() -> None:
    """A worker forked from the daemon moves the objects it inherited to the collector's
    permanent generation (its collections never write to the daemon's pages, which would
    copy them), and runs nicer than the daemon."""
    reply_r, reply_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            before = gc.get_freeze_count()
            parse_pool._settle_forked()
            oldest = len(gc.get_objects(generation=2))
            nice = os.getpriority(os.PRIO_PROCESS, 0)
            os.write(reply_w, f"{before} {gc.get_freeze_count()} {oldest} {nice}".encode())
        finally:
            os._exit(0)
    os.close(reply_w)
    with os.fdopen(reply_r, "rb") as reply:
        before, frozen, oldest, nice = map(int, reply.read().split())
    os.waitpid(pid, 0)
    assert frozen - before > 10_000  # every module, function and object the parent had made
    assert oldest == 0  # none is left for a full collection to go through
    assert nice == min(19, os.getpriority(os.PRIO_PROCESS, 0) + parse_pool.WORKER_NICE)


def test_a_small_build_commits_in_quarters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One transaction for all of a small build leaves the writer waiting while it is
    parsed, then inserting alone while the workers wait: quarters overlap the two."""
    root = tmp_path / "tier"
    make_tree(root, 400)
    store = SQLiteStore(tmp_path / "index.sqlite")
    rels = indexer.plan_tree(store, root).new
    commits: list[int] = []
    add_files = store.add_files

    def counted(items: Any) -> int:
        batch = list(items)
        commits.append(len(batch))
        return add_files(batch)

    monkeypatch.setattr(store, "add_files", counted)
    cold = build.Build(BuildProgress("agent", "cold", len(rels)), root, rels, 650, None)
    while not cold.step(store, {}, budget_s=60):  # no step ends for time
        pass
    assert commits == [100, 100, 100, 100]
    assert store.stats().total_files == 400
    store.close()


def test_workers_parse_ahead_of_a_slow_taker_and_a_build_stopped_early_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests go out while the caller is busy (not only as it takes answers), at most
    the window ahead; a caller that stops early leaves no answer behind in the pool."""
    root = tmp_path / "tier"
    make_tree(root, 120)
    plan_store = SQLiteStore(tmp_path / "plan.sqlite")
    rels = indexer.plan_tree(plan_store, root).new
    plan_store.close()
    monkeypatch.setattr(parse_pool, "BATCH_FILES", 8)
    monkeypatch.setattr(parse_pool, "AHEAD_FILES", 32)  # four requests ahead
    pool = ParsePool(2)
    submit, sent, window_full = pool._submit, [0], threading.Event()

    def counted(*args: Any) -> int | None:
        sent[0] += 1
        if sent[0] == 5:
            window_full.set()
        return submit(*args)

    monkeypatch.setattr(pool, "_submit", counted)
    try:
        parsed = pool.parse(root, rels, 650)
        first = next(parsed)
        # while the caller holds the first answer, the feeder fills the window (one taken,
        # four ahead) and stops there
        assert window_full.wait(30)
        assert sent[0] == 5
        assert plain([first, *parsed]) == plain(indexer.read_parsed(root, rels, 650))
        stopped = pool.parse(root, rels, 650)
        next(stopped)
        stopped.close()
        assert pool._answers == {}
        pool._answers[10**9] = b"not a pickle"  # garbled: the caller parses that batch itself
        assert pool._take(10**9) is None
        # so is an answer in another shape (a worker of another version): found before
        # its rows reach SQLite, where they would fail the whole batch's transaction
        good = parse_pool._flatten(indexer.read_parsed(root, rels[:1], 650)[0])
        rel, why, (size, mtime, sha, meta, rows) = good
        assert rows
        short = (rel, why, (size, mtime, sha, meta, [r[:6] for r in rows]))
        for answer, usable in ((good, True), (short, False)):
            pool._answers[10**9] = pickle.dumps([answer])
            assert (pool._take(10**9) is not None) is usable
    finally:
        pool.close()


def test_progress_reports_a_rate_and_logs_at_most_every_few_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    progress = BuildProgress("agent", "cold", 10)
    with caplog.at_level("INFO", logger="sidecar.index.progress"):
        progress.advance(3)  # just started: nothing logged yet
        progress._logged -= 10  # as if the last line were ten seconds old
        progress.advance(2)
    lines = [r for r in caplog.records if r.getMessage() == "index build progress"]
    assert len(lines) == 1
    assert (lines[0].files_done, lines[0].files_total) == (5, 10)  # type: ignore[attr-defined]
    assert progress.rate_per_s > 0
    progress.finish()
    assert progress.to_json()["state"] == "done"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_on_a_terminal_only() -> None:
    tty, pipe = Tty(), io.StringIO()
    assert list(tracked(range(5), 5, "reindex", tty)) == [0, 1, 2, 3, 4]
    assert list(tracked(range(5), 5, "reindex", pipe)) == [0, 1, 2, 3, 4]
    assert "5/5 files" in tty.getvalue() and tty.getvalue().endswith("\n")
    assert pipe.getvalue() == ""
    bar = ProgressBar("x", pipe)
    bar.update(1, 2, force=True)
    bar.close()
    assert pipe.getvalue() == ""


def test_a_redraw_clears_the_longer_line_before_it_and_never_overflows() -> None:
    tty = Tty()
    bar = ProgressBar("x", tty, width=10)
    bar.update(1, 100, rate=12_345.0, force=True)
    bar.update(150, 100, rate=9.0, force=True)  # more files turned up than were listed
    last = tty.getvalue().rsplit("\r", 1)[-1]
    assert last == "x [##########] 150/100 files  9/s\x1b[K"


def test_cli_reindex_piped_prints_no_bar(tmp_path: Path) -> None:
    make_tree(tmp_path, 30)
    done = subprocess.run(
        [sys.executable, "-m", "sidecar", "reindex", "-p", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "indexed 30 files, 30 chunks"
    assert "\r" not in done.stderr and "files" not in done.stderr


# -- a build killed half way, in a real process ----------------------------------------


def status_of(proc: SidecarProcess) -> dict[str, Any] | None:
    try:
        return dict(proc.get("/memory/status?scope=agent"))
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def test_a_build_killed_half_way_is_completed_on_the_next_start(tmp_path: Path) -> None:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    crew.mkdir(parents=True)
    files = 8000
    make_tree(agent, files, words=120)
    proc = SidecarProcess(agent, crew)
    proc.proc = subprocess.Popen(proc.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env=proc.env)  # fmt: skip
    seen: dict[str, Any] = {}
    try:

        def half_built() -> bool:
            assert proc.proc is not None and proc.proc.poll() is None, "the daemon exited"
            status = status_of(proc)
            if status is None or "build" not in status:
                assert status is None or status["total_files"] < files, "built before seen"
                return False
            seen.update(status)
            return 0 < status["build"]["files_done"] < files - 2000

        wait_for(half_built, 60, "a build under way")
        proc.kill()  # SIGKILL: no chance to finish the batch in flight or clear the marker
    finally:
        proc.kill()
    assert 0 < seen["total_files"] < files
    index = SQLiteStore(agent / "index.sqlite")
    try:
        assert index.get_meta(build.BUILDING) is not None  # the unfinished build says so
        partial = index.stats().total_files
    finally:
        index.close()
    assert 0 < partial < files

    again = SidecarProcess(agent, crew)
    try:
        again.start(timeout=120)  # ready: every tier reconciled
        status = again.get("/memory/status?scope=agent")
        assert status["total_files"] == files and status["indexing"] is False
        assert {r["file"] for r in again.search("uniq07999")} == {"notes/f5/n07999.md"}
        assert {r["file"] for r in again.search("uniq00000")} == {"notes/f0/n00000.md"}
    finally:
        again.kill()
    log = [json.loads(line) for line in again.log_path.read_text().splitlines() if line[:1] == "{"]
    resumed = [e for e in log if e["msg"] == "completing an index build that was interrupted"]
    assert resumed and resumed[0]["tier"] == "agent"
    done = [e for e in log if e["msg"] == "index build done; every file is searchable"]
    assert done and done[0]["files_total"] == files - partial
    # the workers were asked for the files still to index before the daemon had loaded, and
    # the build took those requests over rather than asking again
    (started,) = [e for e in log if e["msg"].startswith("index build started")]
    assert started["head_start_files"] == min(files - partial, parse_pool.AHEAD_FILES)
    index = SQLiteStore(agent / "index.sqlite")
    try:
        assert index.get_meta(build.BUILDING) is None
    finally:
        index.close()


def test_a_file_changed_while_the_daemon_was_down_is_read_again_whatever_its_mtime(
    tmp_path: Path,
) -> None:
    """A start compares each file's size and mtime with what the index recorded: a note
    rewritten while the daemon was down and given an old mtime (restored from a backup,
    copied with ``cp -p``) is read again, even at the same size."""
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    crew.mkdir(parents=True)
    make_tree(agent, 150)  # enough for a cold build
    first = SidecarProcess(agent, crew)
    try:
        first.start(timeout=60)
        assert first.get("/memory/status?scope=agent")["total_files"] == 150
        assert first.terminate() == 0
    finally:
        first.kill()
    old_ns = 978_307_200 * 10**9  # 2001-01-01, years before the index recorded anything
    same = agent / "notes/f3/n00003.md"
    same.write_text(same.read_text().replace("uniq00003", "swap00003"))  # same size
    os.utime(same, ns=(old_ns, old_ns))
    grown = agent / "notes/f4/n00004.md"
    grown.write_text(grown.read_text() + "appended walrus\n")
    os.utime(grown, ns=(old_ns, old_ns))
    again = SidecarProcess(agent, crew)
    try:
        again.start(timeout=60)  # ready: every tier reconciled
        assert {r["file"] for r in again.search("swap00003")} == {"notes/f3/n00003.md"}
        assert again.search("uniq00003") == []
        assert {r["file"] for r in again.search("walrus")} == {"notes/f4/n00004.md"}
        assert again.get("/memory/status?scope=agent")["total_files"] == 150
    finally:
        again.kill()


async def test_metrics_show_the_build_in_progress_then_count_it(
    cold_service: MemoryService, gate: Gate
) -> None:
    def gauges(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode())
            for s in family.samples
        }

    builds = metrics.INDEX_BUILDS.labels(tier="agent", kind="cold")
    before = builds._value.get()
    await asyncio.to_thread(gate.blocked.wait, 10)
    during = gauges(render(await read_state(cold_service)))
    done = during[("sidecar_index_build_files", (("count", "done"), ("tier", "agent")))]
    assert during[("sidecar_index_build_files", (("count", "total"), ("tier", "agent")))] == 200
    assert 0 < done < 200
    assert during[("sidecar_index_state", (("state", "indexing"), ("tier", "agent")))] == 1

    gate.release_all()
    await cold_service.indexes.queue.wait_idle()
    after = gauges(render(await read_state(cold_service)))
    assert ("sidecar_index_build_files", (("count", "done"), ("tier", "agent"))) not in after
    assert builds._value.get() == before + 1
