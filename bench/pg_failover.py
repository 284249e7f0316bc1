"""pg_failover: two leads of one crew namespace in PostgreSQL; the writing one is killed.

Both leads mount the same crew folder (the files are the source of truth) and keep
the crew index in one PostgreSQL namespace; one holds the writer lease, the other
stands by (``sidecar.stores.postgres``). Each trial SIGKILLs the current writer and
restarts it as the new standby, so the roles alternate. Two kinds of trial:

* busy: a client appends notes to the writer over HTTP in a loop (one file per
  note) and, when the writer stops answering, retries on the standby; measured is
  the time from the SIGKILL until a note is acknowledged *indexed* by the standby
  (201, ``indexed: true``), and until it is found by a search there;
* idle: nobody writes or asks anything; measured is the time from the SIGKILL
  until the standby's log says it took the lease (its one-second lease timer; a
  health probe or write would take it at once, so none is made).

Afterwards every acknowledged note must be in its file and found by a search on the
last writer, and the crew index must hold every file of the folder.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.daemon import Client, Daemon, DaemonError
from bench.pg_store import cluster
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency

NAME = "pg_failover"
DESCRIPTION = "two leads on one PostgreSQL crew namespace: kill the writer"
TRIALS, QUICK_TRIALS = 5, 2  # of each kind
ACKED_BEFORE_KILL = 30
TAKEOVER = at_most(5.0, "<= 5 s")
DEADLINE_S = 60.0
LOST = at_most(0, "0")


class Lead:
    """One of the two leads: a daemon on its own agent folder and the shared crew."""

    def __init__(self, tmp: Path, crew: Path, url: str, k: int) -> None:
        self.tmp, self.crew, self.url, self.k = tmp, crew, url, k
        self.starts = 0
        self.daemon: Daemon | None = None

    def start(self) -> Daemon:
        self.starts += 1
        agent = self.tmp / f"agent-{self.k}"
        agent.mkdir(exist_ok=True)
        self.daemon = Daemon(agent, self.crew, self.tmp / f"lead-{self.k}-{self.starts}.log",
                             extra_args=["--embedder", "none", "--crew-store", self.url,
                                         "--namespace", "failover"])  # fmt: skip
        self.daemon.start()
        self.daemon.wait_ready(timeout=60)
        return self.daemon

    def kill(self) -> float:
        """SIGKILL: no goodbye, the lease dies with the connection. Returns when (wall)."""
        assert self.daemon is not None and self.daemon.proc is not None
        at = time.time()
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.proc.wait(10)
        self.daemon.stop()
        return at

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()


def writer_of(daemon: Daemon) -> str:
    _, body = daemon.client.json("GET", "/healthz")
    return str(body["tiers"]["crew"]["store"]["writer"])


def until(check: Any, what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > deadline:
            raise DaemonError(f"no {what} within {deadline_s} s")
        time.sleep(0.01)


@dataclass(slots=True)
class Notes:
    """What the client wrote: acknowledged notes (token, file) and attempts."""

    acked: list[tuple[str, str]] = field(default_factory=list)
    attempts: int = 0

    def write(self, client: Client, tag: str) -> tuple[int, dict[str, Any]]:
        self.attempts += 1
        token = f"fo{tag}n{self.attempts}z"
        rel = f"topics/failover-{tag}-{self.attempts}.md"
        body = {"scope": "crew", "file": rel, "mode": "append",
                "content": f"- note {token} from the failover benchmark"}  # fmt: skip
        status, answer = client.json("POST", "/memory/write", body)
        if status == 201:
            self.acked.append((token, rel))
        return status, answer


def found(daemon: Daemon, token: str) -> bool:
    code, body = daemon.client.json(
        "POST", "/memory/search", {"query": token, "scope": "crew", "limit": 3, "mode": "sparse"}
    )
    return code == 200 and any(token in r["snippet"] for r in body["results"])


def busy_trial(lead: Lead, standby: Daemon, notes: Notes, tag: str) -> tuple[float, float]:
    """Kill the writer mid-stream; seconds until the standby acknowledges a note indexed,
    and until that note is searchable there."""
    assert lead.daemon is not None
    stop = threading.Event()
    client = Client(lead.daemon.port, timeout=10)

    def loop() -> None:
        while not stop.is_set():
            try:
                notes.write(client, tag)
            except (
                OSError,
                http.client.HTTPException,
                ValueError,
            ):  # the writer is gone: the main thread takes over
                return

    thread = threading.Thread(target=loop, name="failover-writer")
    before = len(notes.acked)
    thread.start()
    try:
        until(lambda: len(notes.acked) - before >= ACKED_BEFORE_KILL, "writes to the lead")
        started = time.monotonic()
        lead.kill()
    finally:
        stop.set()
        thread.join(30)
        client.close()
    while True:  # the client fails over: the same loop, on the standby
        status, answer = notes.write(standby.client, tag)
        if status == 201 and answer.get("indexed"):
            indexed = time.monotonic() - started
            break
        if time.monotonic() - started > DEADLINE_S:
            raise DaemonError(f"the standby never indexed a write: {status} {answer}")
    token = notes.acked[-1][0]
    until(lambda: found(standby, token), "search hit on the new writer")
    return indexed, time.monotonic() - started


def lease_taken_at(log: Path) -> float | None:
    """Wall time of the 'writer lease taken' line of the crew namespace, if logged."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        if "writer lease taken" in line and "failover/crew" in line:
            ts = json.loads(line)["ts"]
            return dt.datetime.fromisoformat(ts).timestamp()
    return None


def idle_trial(lead: Lead, standby: Lead) -> float:
    """Kill the writer with nobody asking anything; seconds until the standby's log
    says it took the lease."""
    assert standby.daemon is not None
    log = standby.daemon.log_path
    if lease_taken_at(log) is not None:
        raise DaemonError("the standby already took the lease before the kill")
    killed = lead.kill()
    holder: list[float] = []

    def taken() -> bool:
        at = lease_taken_at(log)
        if at is not None:
            holder.append(at)
        return at is not None

    until(taken, "lease taken by the idle standby")
    return holder[0] - killed


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "two leads on one crew namespace: SIGKILL the writer")
    trials = QUICK_TRIALS if ctx.quick else TRIALS
    notes = Notes()
    busy: list[tuple[float, float]] = []
    idle: list[float] = []
    with ctx.tempdir(NAME) as tmp, cluster() as url:
        crew = tmp / "crew"
        (crew / "topics").mkdir(parents=True)
        leads = [Lead(tmp, crew, url, 0), Lead(tmp, crew, url, 1)]
        try:
            writer, standby = leads
            first = writer.start()
            until(lambda: writer_of(first) == "lead", "a writer")
            second = standby.start()
            until(lambda: writer_of(second) == "standby", "a standby")
            for trial in range(2 * trials):
                kind = "busy" if trial % 2 == 0 else "idle"
                progress(NAME, f"trial {trial + 1} of {2 * trials}: {kind}")
                assert standby.daemon is not None
                if kind == "busy":
                    busy.append(busy_trial(writer, standby.daemon, notes, str(trial)))
                else:
                    idle.append(idle_trial(writer, standby))
                writer, standby = standby, writer
                new_writer = writer.daemon
                assert new_writer is not None
                until(lambda: writer_of(new_writer) == "lead", "the new writer to lead")  # noqa: B023
                restarted = standby.start()
                until(lambda: writer_of(restarted) == "standby", "the new standby")  # noqa: B023
            last = writer.daemon
            assert last is not None
            progress(NAME, f"checking {len(notes.acked)} acknowledged notes on the last writer")
            missing_file = [t for t, rel in notes.acked
                            if t not in (crew / rel).read_text(encoding="utf-8")]  # fmt: skip
            missing_hit = [t for t, _ in notes.acked if not found(last, t)]
            files = sum(1 for _ in crew.rglob("*.md"))
            _, status = last.client.json("GET", "/memory/status?scope=crew")
            indexed_files = int(status["total_files"])
        finally:
            for lead in leads:
                lead.stop()
    ack = Latency.of_seconds([b[0] for b in busy])
    hit = Latency.of_seconds([b[1] for b in busy])
    lease = Latency.of_seconds(idle)
    result.figures += [
        Figure("busy: SIGKILL to a write indexed by the standby, p50", ack.p50 / 1000, "s", 3),
        Figure(
            "busy: SIGKILL to that write found by search, max", hit.max / 1000, "s", 3, TAKEOVER
        ),
        Figure("idle: SIGKILL to the standby's lease (timer), p50", lease.p50 / 1000, "s", 3),
        Figure(
            "idle: SIGKILL to the standby's lease (timer), max", lease.max / 1000, "s", 3, TAKEOVER
        ),
        Figure("acknowledged notes missing from their file", len(missing_file), "", 0, LOST),
        Figure("acknowledged notes not found by search", len(missing_hit), "", 0, LOST),
        Figure("crew files not in the index", files - indexed_files, "", 0, LOST),
    ]
    result.tables.append(Table("SIGKILL of the writing lead until ...", LATENCY_HEADERS, [
        ack.row("busy: a write acknowledged indexed"), hit.row("busy: that write searchable"),
        lease.row("idle: lease taken"),
    ]))  # fmt: skip
    result.notes += [
        f"{trials} busy and {trials} idle trials, roles alternating; {len(notes.acked)} of "
        f"{notes.attempts} writes acknowledged (the others were in flight when their lead "
        "was killed: not acknowledged, so the client cannot count on them)",
        "PostgreSQL releases a session advisory lock as soon as the killed process's "
        "connection closes; the standby tries the lease every second (LEASE_RETRY_S) and, "
        "on a write or a health probe, at once",
        "default --reconcile-interval (60 s): the reconcile plays no part in the takeover",
    ]
    result.details = {
        "busy_s": [[round(a, 4), round(b, 4)] for a, b in busy],
        "idle_s": [round(x, 4) for x in idle],
        "acked": len(notes.acked),
        "attempts": notes.attempts,
        "missing_file": missing_file,
        "missing_hit": missing_hit,
        "files": files,
        "indexed_files": indexed_files,
    }
    return result
