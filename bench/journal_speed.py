"""journal_speed: the episodic journal's write, recall, rebuild and memory costs.

Every figure that can be set against a bare baseline is, measured in the same run:

- one event recorded over HTTP (``POST /memory/journal``, a 200-character summary)
  against the floor any durable HTTP record pays: ``os.write`` of the same line to
  an ``O_APPEND`` file plus ``os.fsync``, plus an empty round trip to the same daemon
  (the same route with a JSON array body, answered ``400 invalid_json`` before any
  disk work), the three interleaved;
- 16 concurrent keep-alive clients, one event a request, for a fixed time, against
  a bare aiohttp app (in its own process) that reads the body and answers 201 ``{}``,
  driven by the same client, rounds interleaved;
- durable events/s in batches of 100 (several clients), loading 100k events;
- recall p50 over HTTP at 100k events (10% embeddable), sparse-only and hybrid;
- rebuilding the index of those 100k events from the files, in process, against
  ``json.loads`` of every line of the same files;
- the daemon's resident memory from empty to 100k events.

The clients of the concurrent figures are asyncio streams speaking HTTP/1.1 by
hand: the least client CPU a request can cost, so on a small machine the client
is not what limits either rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.daemon import Client, Daemon, DaemonError, free_port
from bench.report import BenchResult, Figure, Table, at_least, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar.index.sqlite import TOKENIZER
from sidecar.retrieval.query import terms as query_terms

NAME = "journal_speed"
DESCRIPTION = "episodic journal: record, recall, rebuild, memory"
RECORD_TARGET = at_most(2.0, "<= 2.00x")
CONCURRENT_TARGET = at_least(0.5, ">= 0.50x")
BATCH_TARGET = at_least(20_000, ">= 20,000 /s")
SPARSE_RECALL_TARGET = at_most(10.0, "<= 10 ms")
HYBRID_RECALL_TARGET = at_most(15.0, "<= 15 ms")
REBUILD_TARGET = at_most(10.0, "<= 10 s")
RSS_TARGET = at_most(50.0, "<= 50 MB")

JOURNAL = "/memory/journal"
RECALL = "/memory/recall"
SUMMARY_CHARS = 200
CLIENTS = 16
BATCH = 100
LOADERS = 4  # concurrent clients sending batches
EMBEDDED_SHARE = 0.10  # peer.escalation: always embedded
RECALL_K = 10
WARMUP = 20
IDLE_S = 1.5
EMBED_TIMEOUT_S = 900.0

# -- realistic events ---------------------------------------------------------------

# One word each, as many teams name them: a query naming a service is about that service,
# not about every "*-api".
SERVICES = (
    "payments", "ledger", "authgate", "searchidx", "storefront", "inventory", "billing",
    "notifier", "thumbnailer", "orders", "fraudscore", "sessions", "reporting", "mailrelay",
    "flagd", "catalog", "shipping", "taxcalc", "profiles", "recommender", "auditlog",
    "metricsgw", "cdnpurge", "broker", "kafka", "redis", "postgres", "pgreplica", "elastic",
    "vault", "ssobridge", "pdfgen", "webhooks", "ratelimiter", "geoip", "pricing", "coupons",
    "loyalty", "chatsvc", "uploader", "transcoder", "backupd", "certbot", "cron", "etlrunner",
    "lakehouse", "inference", "gateway", "identity", "invoicer", "refunds", "quotes",
    "settlement", "kyc", "onboarding", "scheduler", "dispatcher", "tracker", "routing",
    "telemetry", "clickstream", "ads", "bidder", "segmenter", "mailer", "smsgw", "pushd",
    "ledgerwriter", "archiver", "exporter", "importer", "cartsvc", "wishlist", "reviews",
    "moderation", "translator", "sitemap", "crawler", "indexer", "ranker",
)  # fmt: skip
PEOPLE = (
    "Priya", "Marco", "Chen", "Aisha", "Tomas", "Lena", "Kofi", "Yuki", "Dana", "Ravi",
    "Sofia", "Mateo", "Ingrid", "Omar", "Hana", "Lucas", "Zara", "Felix", "Nadia", "Arjun",
    "Elena", "Jonas", "Mei", "Tariq", "Carla", "Pavel", "Amara", "Diego", "Freya", "Sami",
)  # fmt: skip
ERRORS = (
    "connection timeout", "OOM kill", "TLS handshake failure", "deadlock detected",
    "HTTP 503 from upstream", "disk full on /var", "rate limit exceeded", "schema mismatch",
    "replication lag", "certificate expired", "DNS resolution failure", "segfault in worker",
    "too many open files", "null pointer in handler", "stale cache entries", "queue backlog",
    "checksum mismatch", "thread pool exhausted", "slow query", "permission denied",
    "pod crash loop", "clock skew", "JSON decode error", "gRPC deadline exceeded",
    "lock wait timeout", "429 from partner API", "memory leak", "failed health check",
    "dropped websocket connections", "corrupted index segment", "inode exhaustion",
    "split brain", "stuck consumer group", "expired OAuth token", "kernel panic",
    "connection reset by peer", "config drift", "broken pipe", "GC pause", "cold start spike",
)  # fmt: skip
ACTIONS = (
    "rolled back", "restarted", "scaled up", "paged the owner of", "escalated", "patched",
    "rotated credentials for", "drained", "re-ran the migration on", "opened a ticket for",
    "added an alert on", "raised the memory limit of", "pinned the version of", "failed over",
    "silenced alerts for", "profiled", "bisected a regression in", "cleared the cache of",
    "redeployed", "throttled", "quarantined a node of", "reindexed", "wrote a runbook for",
    "reviewed the config of",
)  # fmt: skip
ENVS = (
    "prod", "staging", "canary", "eu-west-1", "us-east-2", "ap-south-1", "dev", "qa",
    "sandbox", "perf", "dr-site", "edge",
)  # fmt: skip
TASKS = (
    "the nightly backfill", "a canary rollout", "the schema migration", "the weekly reindex",
    "a load test", "the quarterly failover drill", "the cache warm-up", "a blue-green deploy",
    "the data export for finance", "the certificate rotation", "the node pool upgrade",
    "the log compaction", "a dependency bump", "the search reindex", "the billing run",
)  # fmt: skip
TEMPLATES = (
    "{person} {action} {service} in {env} after {error}",
    "{service} hit {error} during {task}; {person} {action} it",
    "{error} on {service} ({env}), ticket INC-{n}; {person} is looking into it",
    "Escalation from {person}: {service} keeps hitting {error} since {task}",
    "{task} for {service} finished in {minutes} min with {count} retries; {person} signed off",
    "{person} asked to pause {task} until {service} recovers from {error}",
    "tool call: kubectl rollout status {service} -n {env} exited 1 ({error})",
    "{service} p99 latency {ms} ms in {env}; {person} {action} {service2}",
    "Postmortem note: {error} in {service2} cascaded into {service}; {person} {action} both",
    "{person} confirmed {service} is healthy in {env} after {task}",
)  # fmt: skip
NON_EMBEDDED = (  # (type, severities): none of these is embedded by the default policy
    ("tool.call", ("info", "warn")),
    ("exec.output_chunk", ("info", "warn", "error")),
    ("network.request", ("info", "warn", "error")),
    ("deploy.step", ("info", "warn")),
    ("keeper.decision", ("info",)),
)
QUERY_TEMPLATES = (
    "{service} {error}",
    "who {action} {service}?",
    "{error} on {service}",
    "what did {person} say about {service}",
    "what happened during {task} on {service}",
    "{person} {service} incident",
    "why did {service} fail in {env}",
    "{error} after {task}",
)


def _zipf(n: int, s: float = 0.9) -> list[float]:
    """Cumulative weights: a few services and errors are common, most are rare."""
    total, out = 0.0, []
    for rank in range(n):
        total += 1.0 / (rank + 1) ** s
        out.append(total)
    return out


class EventMaker:
    """Seeded, varied summaries over a fixed vocabulary."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._svc = _zipf(len(SERVICES), 0.6)
        self._err = _zipf(len(ERRORS), 0.6)
        self._ppl = _zipf(len(PEOPLE), 0.5)

    def summary(self) -> str:
        rng = self.rng
        services = rng.choices(SERVICES, cum_weights=self._svc, k=2)
        return rng.choice(TEMPLATES).format(
            person=rng.choices(PEOPLE, cum_weights=self._ppl)[0],
            action=rng.choice(ACTIONS),
            service=services[0],
            service2=services[1],
            env=rng.choice(ENVS),
            error=rng.choices(ERRORS, cum_weights=self._err)[0],
            task=rng.choice(TASKS),
            n=rng.randrange(1000, 99999),
            minutes=rng.randrange(1, 240),
            count=rng.randrange(0, 9),
            ms=rng.randrange(80, 9000),
        )

    def sized_summary(self, chars: int = SUMMARY_CHARS) -> str:
        text = self.summary()
        while len(text) < chars:
            text += "; " + self.summary()
        return text[:chars].rstrip() + "." * (chars - len(text[:chars].rstrip()))

    def event(self, ts: float | None = None, embedded: bool | None = None) -> dict[str, Any]:
        rng = self.rng
        if embedded is None:
            embedded = rng.random() < EMBEDDED_SHARE
        if embedded:
            kind, severity = "peer.escalation", rng.choice(("info", "warn", "error"))
        else:
            kind, severities = rng.choice(NON_EMBEDDED)
            severity = rng.choice(severities)
        event: dict[str, Any] = {"type": kind, "severity": severity, "summary": self.summary()}
        if rng.random() < 0.3:
            event["payload"] = {
                "host": f"node-{rng.randrange(1, 64)}",
                "duration_ms": rng.randrange(1, 60_000),
            }
        if ts is not None:
            event["ts"] = iso(ts)
        event["session_id"] = f"run-{rng.randrange(1, 400)}"
        return event

    def query(self) -> str:
        rng = self.rng
        return rng.choice(QUERY_TEMPLATES).format(
            person=rng.choice(PEOPLE),
            action=rng.choice(ACTIONS),
            service=rng.choice(SERVICES),
            env=rng.choice(ENVS),
            error=rng.choice(ERRORS),
            task=rng.choice(TASKS),
        )


def iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def spread_events(maker: EventMaker, n: int, days: float = 30.0) -> list[dict[str, Any]]:
    """``n`` events over the last ``days`` days, oldest first, an exact 10% embeddable."""
    now = time.time() - 60.0
    start = now - days * 86400.0
    step = (now - start) / n
    embedded = set(maker.rng.sample(range(n), round(n * EMBEDDED_SHARE)))
    return [
        maker.event(start + i * step + maker.rng.random() * step, i in embedded) for i in range(n)
    ]


def match_counts(summaries: Sequence[str], queries: Sequence[str]) -> tuple[list[int], list[int]]:
    """Per query, how many summaries hold every one of its terms, and how many hold any
    (what the daemon's plain-language query matches: an OR of its non-stopword terms),
    counted by an in-memory FTS5 table with the index's tokenizer."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5(summary, tokenize='{TOKENIZER}')")
        db.executemany("INSERT INTO t(summary) VALUES (?)", ((s,) for s in summaries))
        all_of, any_of = [], []
        for q in queries:
            words = query_terms(q)
            if not words:
                all_of.append(0)
                any_of.append(0)
                continue
            quoted = ['"' + w.replace('"', '""') + '"' for w in words]
            for out, op in ((all_of, " AND "), (any_of, " OR ")):
                row = db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (op.join(quoted),))
                out.append(int(row.fetchone()[0]))
        return all_of, any_of
    finally:
        db.close()


# -- a lean HTTP/1.1 client ---------------------------------------------------------


def request_bytes(port: int, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class RawConnection:
    """One keep-alive connection; requests are prebuilt bytes, answers (status, body)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self) -> RawConnection:
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()

    async def send(self, data: bytes) -> tuple[int, bytes]:
        assert self._reader is not None and self._writer is not None
        self._writer.write(data)
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        lower = head.lower()
        at = lower.find(b"\r\ncontent-length:")
        if at != -1:
            end = lower.index(b"\r\n", at + 2)
            return status, await self._reader.readexactly(int(lower[at + 17 : end]))
        if b"transfer-encoding: chunked" in lower:
            body = b""
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self._reader.readexactly(size + 2)
                if size == 0:
                    return status, body
                body += chunk[:-2]
        raise DaemonError(f"answer without a length: {head[:200]!r}")


async def _for_duration(
    port: int, requests: Sequence[bytes], seconds: float, clients: int, expect: int
) -> tuple[int, float]:
    """Each client sends one request after another until the deadline: (answers, seconds)."""
    conns = [await RawConnection(port).open() for _ in range(clients)]
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + seconds

    async def worker(k: int, conn: RawConnection) -> int:
        done = 0
        while loop.time() < deadline:
            status, body = await conn.send(requests[(k + done * clients) % len(requests)])
            if status != expect:
                raise DaemonError(f"answered {status}, not {expect}: {body[:300]!r}")
            done += 1
        return done

    try:
        counts = await asyncio.gather(*(worker(k, c) for k, c in enumerate(conns)))
        return sum(counts), loop.time() - started
    finally:
        for conn in conns:
            await conn.close()


async def _all_of(port: int, requests: Sequence[bytes], clients: int) -> tuple[float, list[Any]]:
    """Send every request once, ``clients`` at a time; (seconds, each 201 answer in order)."""
    conns = [await RawConnection(port).open() for _ in range(clients)]
    answers: list[Any] = [None] * len(requests)
    queue = iter(range(len(requests)))
    loop = asyncio.get_running_loop()

    async def worker(conn: RawConnection) -> None:
        for i in queue:  # a shared iterator: each index goes to exactly one client
            status, body = await conn.send(requests[i])
            if status != 201:
                raise DaemonError(f"batch {i} answered {status}: {body[:300]!r}")
            answers[i] = json.loads(body)

    started = loop.time()
    try:
        await asyncio.gather(*(worker(c) for c in conns))
        return loop.time() - started, answers
    finally:
        for conn in conns:
            await conn.close()


def rate_for(port: int, requests: Sequence[bytes], seconds: float, expect: int = 201) -> float:
    done, elapsed = asyncio.run(_for_duration(port, requests, seconds, CLIENTS, expect))
    return done / elapsed


def post_batches(
    port: int, events: Sequence[dict[str, Any]], clients: int = LOADERS, batch: int = BATCH
) -> tuple[float, list[str]]:
    """Record ``events`` in batches over ``clients`` connections: (seconds, ids in order)."""
    bodies = [
        request_bytes(port, JOURNAL, json.dumps({"events": list(events[i : i + batch])}).encode())
        for i in range(0, len(events), batch)
    ]
    seconds, answers = asyncio.run(_all_of(port, bodies, clients))
    ids = [i for a in answers for i in a["ids"]]
    if len(ids) != len(events):
        raise DaemonError(f"{len(events)} events sent, {len(ids)} ids answered")
    return seconds, ids


# -- the empty server baseline --------------------------------------------------------

EMPTY_SERVER = """
import sys
from aiohttp import web

async def handle(request):
    await request.read()
    return web.json_response({}, status=201)

app = web.Application()
app.router.add_post("/memory/journal", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""


@contextlib.contextmanager
def empty_server(log: Path) -> Iterator[int]:
    """A bare aiohttp app answering 201 ``{}`` to any POST /memory/journal; its port."""
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", EMPTY_SERVER, str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise DaemonError(
                    f"empty server exited {proc.returncode}: {log.read_text()[-500:]}"
                )
            probe = Client(port, timeout=2)
            try:
                if probe.raw("POST", JOURNAL, b"{}")[0] == 201:
                    break
            except OSError:
                pass
            finally:
                probe.close()
            if time.monotonic() > deadline:
                raise DaemonError("empty server did not answer within 20 s")
            time.sleep(0.05)
        yield port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# -- daemon helpers ---------------------------------------------------------------------


def _alive(daemon: Daemon) -> None:
    if daemon.proc is None or daemon.proc.poll() is not None:
        raise DaemonError(f"daemon exited; log tail:\n{daemon.log_tail()}")


def journal_status(daemon: Daemon) -> dict[str, Any]:
    journal = daemon.client.status().get("journal")
    if not isinstance(journal, dict):
        raise DaemonError("GET /memory/status?scope=agent has no 'journal' object")
    return journal


def wait_journal(
    daemon: Daemon,
    events: int,
    embedded: bool,
    timeout: float = EMBED_TIMEOUT_S,
    log_every: float = 15.0,
    bench: str = NAME,
) -> dict[str, Any]:
    """Poll the agent tier's status until it holds ``events`` events, is not indexing, the
    background injection scan has read every event, and (with ``embedded``) no event
    waits for its vector: recall is measured on a settled journal."""
    started = time.monotonic()
    last_log = started
    last: dict[str, Any] = {}
    while time.monotonic() - started < timeout:
        _alive(daemon)
        last = journal_status(daemon)
        if (
            (last.get("events") or 0) >= events
            and not last.get("indexing")
            and last.get("pending_scans") == 0
            and (not embedded or last.get("pending_embeddings") == 0)
        ):
            return last
        if time.monotonic() - last_log > log_every:
            last_log = time.monotonic()
            progress(bench, f"waiting for the journal: {last}")
        time.sleep(0.25)
    raise DaemonError(f"journal not ready within {timeout:.0f} s (want {events}); last {last}")


def recall(client: Client, query: str, k: int = RECALL_K, **extra: Any) -> dict[str, Any]:
    status, body = client.json("POST", RECALL, {"query": query, "k": k, "mark": False, **extra})
    if status != 200:
        raise DaemonError(f"recall {query!r} answered {status}: {body}")
    return dict(body)


def rss_mb(daemon: Daemon) -> float:
    return daemon.memory_kb()["VmRSS"] * 1024 / 1e6


# -- 1. one event: API against the floor ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sequential:
    api: Latency
    bare: Latency  # os.write of the same line to an O_APPEND file + os.fsync
    http: Latency  # empty round trip

    @property
    def floor_p50(self) -> float:
        return self.bare.p50 + self.http.p50


def _one_record(client: Client, event: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    body = json.dumps(event).encode()
    started = time.perf_counter()
    status, raw = client.raw("POST", JOURNAL, body)
    elapsed = time.perf_counter() - started
    answer = json.loads(raw)
    if status != 201 or len(answer.get("ids", ())) != 1:
        raise DaemonError(f"record answered {status}: {raw[:300]!r}")
    return elapsed, answer


def _empty_round_trip(client: Client, event: dict[str, Any]) -> float:
    body = json.dumps([event]).encode()  # the same bytes, as a JSON array
    started = time.perf_counter()
    status, raw = client.raw("POST", JOURNAL, body)
    elapsed = time.perf_counter() - started
    if status != 400 or json.loads(raw).get("error") != "invalid_json":
        raise DaemonError(f"empty round trip answered {status}: {raw[:300]!r}")
    return elapsed


def _bare_append(fd: int, line: bytes) -> float:
    started = time.perf_counter()
    os.write(fd, line)
    os.fsync(fd)
    return time.perf_counter() - started


def _last_line(tier: Path, rel: str) -> bytes:
    data = (tier / rel).read_bytes()
    return data[data.rstrip(b"\n").rfind(b"\n") + 1 :]


def sequential(daemon: Daemon, tier: Path, bare_dir: Path, n: int) -> tuple[Sequential, int]:
    """API records, empty round trips and bare appends in turn (rotating order)."""
    maker = EventMaker(1)
    events = [{"type": "tool.call", "summary": maker.sized_summary()} for _ in range(n + 5)]
    for event in events[:5]:  # warm up; the journal line the bare append writes
        _, answer = _one_record(daemon.client, event)
    line = _last_line(tier, answer["file"])
    bare_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(bare_dir / "journal.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    api, bare, http = [], [], []
    try:
        for i, event in enumerate(events[5:]):
            probes = [
                lambda e=event: api.append(_one_record(daemon.client, e)[0]),
                lambda e=event: http.append(_empty_round_trip(daemon.client, e)),
                lambda: bare.append(_bare_append(fd, line)),
            ]
            for j in range(3):
                probes[(i + j) % 3]()
    finally:
        os.close(fd)
    return Sequential(*(Latency.of_seconds(x) for x in (api, bare, http))), len(line)


# -- 2. concurrent single-event requests against a bare aiohttp app ----------------------


@dataclass(frozen=True, slots=True)
class Concurrent:
    api_rps: float
    empty_rps: float
    rounds: int

    @property
    def ratio(self) -> float:
        return self.api_rps / self.empty_rps


def concurrent(daemon_port: int, empty_port: int, seconds: float, rounds: int) -> Concurrent:
    maker = EventMaker(2)
    bodies = [
        json.dumps({"type": "tool.call", "summary": maker.sized_summary()}).encode()
        for _ in range(256)
    ]
    api_req = [request_bytes(daemon_port, JOURNAL, b) for b in bodies]
    empty_req = [request_bytes(empty_port, JOURNAL, b) for b in bodies]
    rate_for(daemon_port, api_req, 0.5)  # warm-up
    rate_for(empty_port, empty_req, 0.5)
    api, empty = [], []
    for r in range(rounds):  # alternate which goes first
        order = [(api, daemon_port, api_req), (empty, empty_port, empty_req)]
        for out, port, reqs in order if r % 2 == 0 else order[::-1]:
            out.append(rate_for(port, reqs, seconds))
    return Concurrent(statistics.fmean(api), statistics.fmean(empty), rounds)


# -- 3-6. 100k events -------------------------------------------------------------------


@dataclass(slots=True)
class Loaded:
    events: int
    load_s: float
    status: dict[str, Any]
    recall: Latency
    modes: set[str]
    hits: list[int]  # hits per query
    samples: list[float]  # seconds per query, in query order
    bytes_before_recalls: int
    bytes_after_recalls: int
    rss_empty_mb: float = 0.0
    rss_loaded_mb: float = 0.0
    rss_after_recall_mb: float = 0.0
    hwm_mb: float = 0.0
    wait_s: float = 0.0  # from the last answer to everything indexed (and embedded)

    @property
    def events_per_s(self) -> float:
        return self.events / self.load_s


def measure_recall(
    client: Client, queries: Sequence[str]
) -> tuple[list[float], set[str], list[int]]:
    """Seconds per query (after a warm-up), the modes answered, and hits per query."""
    for q in queries[:WARMUP]:
        recall(client, q)
    samples, modes, hits = [], set(), []
    for q in queries:
        started = time.perf_counter()
        body = recall(client, q)
        samples.append(time.perf_counter() - started)
        modes.add(str(body.get("mode")))
        hits.append(len(body.get("hits", ())))
    return samples, modes, hits


def load_and_recall(
    ctx: Context, work: Path, events: list[dict[str, Any]], queries: list[str], embedder: str
) -> tuple[Loaded, Path]:
    agent = work / "agent"
    hybrid = embedder != "none"
    with ctx.daemon(agent, work, embedder=embedder) as daemon:
        warm = EventMaker(3).event(embedded=False)
        _one_record(daemon.client, warm)
        recall(daemon.client, "warm up")
        journal_status(daemon)
        time.sleep(IDLE_S)
        rss_empty = rss_mb(daemon)
        progress(
            NAME,
            f"{embedder}: recording {len(events):,} events, batches of {BATCH}, {LOADERS} clients",
        )
        load_s, _ = post_batches(daemon.port, events)
        waited = time.monotonic()
        if hybrid:
            progress(
                NAME, f"{embedder}: waiting for {round(len(events) * EMBEDDED_SHARE):,} embeddings"
            )
        status = wait_journal(daemon, len(events) + 1, embedded=hybrid)
        wait_s = time.monotonic() - waited
        time.sleep(IDLE_S)
        rss_loaded = rss_mb(daemon)
        progress(NAME, f"{embedder}: {len(queries)} recalls at {len(events):,} events")
        before = journal_status(daemon).get("bytes", 0)
        samples, modes, hits = measure_recall(daemon.client, queries)
        after = journal_status(daemon).get("bytes", 0)
        time.sleep(IDLE_S)
        kb = daemon.memory_kb()
    loaded = Loaded(
        len(events),
        load_s,
        status,
        Latency.of_seconds(samples),
        modes,
        hits,
        samples,
        before,
        after,
        rss_empty,
        rss_loaded,
        kb["VmRSS"] * 1024 / 1e6,
        kb["VmHWM"] * 1024 / 1e6,
        wait_s,
    )
    return loaded, agent


def json_lines_s(tier: Path) -> tuple[float, int]:
    """The bare baseline of a rebuild: read and ``json.loads`` every line of the journal."""
    started = time.perf_counter()
    n = 0
    for path in sorted((tier / "journal").glob("*.jsonl")):
        with open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    json.loads(line)
                    n += 1
    return time.perf_counter() - started, n


def rebuild_s(tier: Path, db: Path) -> tuple[float, int]:
    from sidecar.journal.index import JournalIndex  # the journal lands after this bench

    db.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    index = JournalIndex(db)
    try:
        n = index.rebuild(tier)
        return time.perf_counter() - started, int(n)
    finally:
        close = getattr(index, "close", None)
        if close is not None:
            close()


def by_matches(any_of: list[int], sparse: Loaded, hybrid: Loaded, parts: int = 4) -> Table:
    """Recall p50 per quartile of how many events hold any of the query's terms."""
    order = sorted(range(len(any_of)), key=any_of.__getitem__)
    rows = []
    for p in range(parts):
        idx = order[p * len(order) // parts : (p + 1) * len(order) // parts]
        if not idx:
            continue
        rows.append([
            f"{any_of[idx[0]]:,}-{any_of[idx[-1]]:,}",
            str(len(idx)),
            *(f"{Latency.of_seconds([r.samples[i] for i in idx]).p50:.2f}"
              for r in (sparse, hybrid)),
        ])  # fmt: skip
    return Table(
        "recall p50 by how many events match any query term (FTS5 OR, as the daemon plans it)",
        ["events matched", "queries", "sparse p50 ms", "hybrid p50 ms"],
        rows,
    )


# -- the benchmark ------------------------------------------------------------------------


def run(ctx: Context) -> BenchResult:
    quick = ctx.quick
    result = BenchResult(NAME, "episodic journal: record, recall, rebuild, memory")
    n_seq = 100 if quick else 300
    seconds, rounds = (1.5, 2) if quick else (2.5, 3)
    n_events = 20_000 if quick else 100_000
    n_queries = 100 if quick else 200
    size = f"{n_events // 1000}k"

    maker = EventMaker(7)
    events = spread_events(maker, n_events)
    queries = [maker.query() for _ in range(n_queries)]
    all_of, any_of = match_counts([e["summary"] for e in events], queries)

    with ctx.tempdir(NAME) as tmp:
        progress(NAME, f"{n_seq} single records: API, empty round trip and bare append, in turn")
        with ctx.daemon(tmp / "a" / "agent", tmp / "a") as daemon:
            seq, line_bytes = sequential(daemon, tmp / "a" / "agent", tmp / "bare", n_seq)
            progress(
                NAME,
                f"{CLIENTS} concurrent clients, {rounds} x {seconds} s rounds, "
                "against a bare aiohttp app",
            )
            with empty_server(tmp / "empty-server.log") as empty_port:
                conc = concurrent(daemon.port, empty_port, seconds, rounds)

        sparse, tier = load_and_recall(ctx, tmp / "sparse", events, queries, "none")

        progress(NAME, f"rebuilding the index of {size} events in process")
        base1, lines = json_lines_s(tier)
        rebuild, indexed = rebuild_s(tier, tmp / "rebuild" / "journal.sqlite")
        base2, _ = json_lines_s(tier)
        bare_rebuild = (base1 + base2) / 2

        hybrid, _ = load_and_recall(ctx, tmp / "hybrid", events, queries, "minilm")

    growth = sparse.rss_after_recall_mb - sparse.rss_empty_mb
    result.figures = [
        Figure(
            "record p50 / floor p50",
            seq.api.p50 / seq.floor_p50,
            "x",
            target=RECORD_TARGET,
            note=f"floor = O_APPEND write+fsync + empty round trip = {seq.floor_p50:.2f} ms",
        ),
        Figure("record p50", seq.api.p50, "ms", note=f"one event, {line_bytes}-byte line"),
        Figure("record p99", seq.api.p99, "ms"),
        Figure(
            f"concurrent records/s / empty aiohttp/s ({CLIENTS} clients)",
            conc.ratio,
            "x",
            target=CONCURRENT_TARGET,
            note=f"{conc.api_rps:,.0f} vs {conc.empty_rps:,.0f} requests/s",
        ),
        Figure(
            f"durable events/s, batches of {BATCH}",
            sparse.events_per_s,
            "/s",
            digits=0,
            target=BATCH_TARGET,
            note=f"{LOADERS} clients, {size} events, sparse-only",
        ),
        Figure(
            f"recall p50 at {size}, sparse-only",
            sparse.recall.p50,
            "ms",
            target=SPARSE_RECALL_TARGET,
            note=f"k={RECALL_K}, mark false",
        ),
        Figure(
            f"recall p50 at {size}, hybrid",
            hybrid.recall.p50,
            "ms",
            target=HYBRID_RECALL_TARGET,
            note=f"{hybrid.status.get('embedded')} events embedded",
        ),
        Figure(
            f"rebuild of {size} events",
            rebuild,
            "s",
            target=REBUILD_TARGET,
            note=f"{indexed:,} events indexed, no embedding",
        ),
        Figure(
            "rebuild / json.loads of every line",
            rebuild / bare_rebuild,
            "x",
            note=f"json.loads of {lines:,} lines = {bare_rebuild:.2f} s",
        ),
        Figure(
            f"RSS growth, empty to {size} events",
            growth,
            "MB",
            digits=1,
            target=RSS_TARGET,
            note=f"{sparse.rss_empty_mb:.1f} -> {sparse.rss_after_recall_mb:.1f} MB, "
            "sparse-only, after the recalls",
        ),
        Figure(f"recall p99 at {size}, sparse-only", sparse.recall.p99, "ms"),
        Figure(f"recall p99 at {size}, hybrid", hybrid.recall.p99, "ms"),
        Figure(
            f"durable events/s, batches of {BATCH}, hybrid on",
            hybrid.events_per_s,
            "/s",
            digits=0,
            note="embedding after the answer",
        ),
        Figure(
            "embedding wait after the hybrid load",
            hybrid.wait_s,
            "s",
            digits=1,
            note="last answer to pending_embeddings == 0",
        ),
    ]
    result.tables.append(
        Table(
            "latency",
            LATENCY_HEADERS,
            [
                seq.api.row("record (POST /memory/journal)"),
                seq.bare.row("bare O_APPEND write + fsync"),
                seq.http.row("empty round trip (400 invalid_json)"),
                sparse.recall.row(f"recall at {size}, sparse-only"),
                hybrid.recall.row(f"recall at {size}, hybrid"),
            ],
        )
    )
    result.tables.append(
        Table(
            "resident memory (MB)",
            ["daemon", "empty", f"{size} loaded", "after recalls", "peak (VmHWM)"],
            [
                [
                    name,
                    *(
                        f"{v:.1f}"
                        for v in (r.rss_empty_mb, r.rss_loaded_mb, r.rss_after_recall_mb, r.hwm_mb)
                    ),
                ]
                for name, r in (("sparse-only", sparse), ("hybrid", hybrid))
            ],
        )
    )
    result.tables.append(by_matches(any_of, sparse, hybrid))
    q = statistics.quantiles
    result.notes += [
        f"events: {n_events:,} over 30 days, {EMBEDDED_SHARE:.0%} peer.escalation (embedded), "
        "the rest tool.call / exec.output_chunk / network.request / deploy.step / "
        "keeper.decision at info or warn (not embedded); ~30% carry a small payload",
        f"queries: {n_queries} from templates over the same vocabulary; events holding every "
        f"query word: median {statistics.median(all_of):,.0f} (quartiles "
        f"{', '.join(f'{x:,.0f}' for x in q(all_of, n=4))}); holding any: median "
        f"{statistics.median(any_of):,.0f}; hits answered per query: median "
        f"{statistics.median(sparse.hits):.0f} (sparse), {statistics.median(hybrid.hits):.0f} "
        "(hybrid)",
        f"recall modes answered: sparse daemon {sorted(sparse.modes)}, hybrid daemon "
        f"{sorted(hybrid.modes)}",
        f"concurrency: {CLIENTS} asyncio keep-alive connections, one 200-character event a "
        f"request, {rounds} interleaved rounds of {seconds} s each; the empty app is aiohttp "
        "with access_log=None reading the body and answering 201 {} in its own process",
        "the rebuild is JournalIndex(fresh db).rebuild(tier root) after the daemon stopped; "
        "its bare baseline (json.loads of every line) is the mean of one run before and one after",
    ]
    for name, r in (("sparse", sparse), ("hybrid", hybrid)):
        if r.bytes_after_recalls != r.bytes_before_recalls:
            result.notes.append(
                f"!! {name}: the journal grew by {r.bytes_after_recalls - r.bytes_before_recalls:,}"
                " bytes during recalls sent with mark false"
            )
    if sparse.modes != {"sparse-only"} or hybrid.modes != {"hybrid"}:
        result.notes.append("!! a daemon answered recall in an unexpected mode (see above)")
    result.details = {
        "record": seq.api.to_json(),
        "bare_append_fsync": seq.bare.to_json(),
        "empty_round_trip": seq.http.to_json(),
        "floor_p50_ms": round(seq.floor_p50, 4),
        "concurrent": {
            "api_rps": conc.api_rps,
            "empty_rps": conc.empty_rps,
            "clients": CLIENTS,
            "rounds": rounds,
            "seconds": seconds,
        },
        "rebuild": {
            "seconds": rebuild,
            "indexed": indexed,
            "json_loads_s": [base1, base2],
            "lines": lines,
        },
        "query_matches": {"all_words": all_of, "any_word": any_of},
    }
    for name, r in (("sparse", sparse), ("hybrid", hybrid)):
        result.details[name] = {
            "events": r.events,
            "load_s": r.load_s,
            "events_per_s": r.events_per_s,
            "wait_s": r.wait_s,
            "status": r.status,
            "recall": r.recall.to_json(),
            "rss_mb": {
                "empty": r.rss_empty_mb,
                "loaded": r.rss_loaded_mb,
                "after_recall": r.rss_after_recall_mb,
                "hwm": r.hwm_mb,
            },
        }
    return result
