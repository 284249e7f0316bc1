"""embed_lead: a member that borrows its lead's model (``--embedder lead``).

Three daemons over copies of the demo memory: a lead with the in-process model
and its crew address, a member embedding through it, and a sparse-only member
as the baseline. Measured in one run:

- the idle resident memory (VmRSS) of the borrowing member, once every chunk has
  a vector, against the sparse-only member's (ratio) and the 70 MB target;
- hybrid search p50 through the member against the lead's own hybrid p50 on the
  same notes and questions, timed interleaved (the difference is the hop);
- what a member's client spends reading a batch's reply from the lead, base64 against
  JSON numbers (``encoding_format``): the same 64 texts, both replies parsed in turn;
- the lead's own hybrid p50 while ten clients post query embeddings to its
  ``/v1/embeddings`` as ten members would (each a question, a pause, the next),
  against the lead idle, interleaved in rounds so a busy machine slows both alike.
"""

from __future__ import annotations

import http.client
import json
import shutil
import threading
import time

from bench.context import Context
from bench.daemon import Daemon, DaemonError, free_port
from bench.memory import IDLE_S, Reading, read_memory
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS, Latency
from sidecar import demo
from sidecar.retrieval.embedders.openai import OpenAIEmbedder

NAME = "embed_lead"
DESCRIPTION = "a member embedding through its lead: RSS, latency, load"
TOKEN = "bench-embed-lead-token"
RSS_TARGET = at_most(70.0, "<= 70 MB")
HOP_TARGET = at_most(3.0, "<= 3.00 ms")
LOAD_TARGET = at_most(1.2, "<= 1.20x")
MEMBERS = 10
ENCODED_BATCH = 64  # texts in a member's indexing batch (the embedder's default)
PARSES = 30  # parses of each reply, alternating
MEMBER_PAUSE_S = 0.05  # a member's agent thinks between searches; ten of them together
ROUNDS = 6  # idle / loaded alternations for the load figure
QUESTIONS = [
    "how do we deploy to staging", "which region is production in", "who reviews the "
    "database migrations", "what broke the last release", "how do I roll back a deploy",
    "where are the feature flags", "what is the on-call rotation", "which PostgreSQL version",
    "how are secrets stored", "what did we decide about caching", "when is the freeze",
    "how do I run the tests", "what is the branch naming rule", "why did the build fail",
    "which team owns billing", "how do we tag a release", "what is the rebase policy",
    "where do the logs go", "who approved the schema change", "what happened yesterday",
]  # fmt: skip


def _search_body(query: str) -> bytes:
    return json.dumps({"query": query, "limit": 10, "scope": "agent", "mode": "hybrid"}).encode()


def _timed_search(daemon: Daemon, query: str) -> float:
    started = time.perf_counter()
    code, raw = daemon.client.raw("POST", "/memory/search", _search_body(query))
    elapsed = time.perf_counter() - started
    if code != 200 or json.loads(raw).get("mode") != "hybrid":
        raise DaemonError(f"hybrid search on {daemon.url} answered {code}: {raw[:200]!r}")
    return elapsed


def _wait_embedded(daemon: Daemon, timeout: float = 300.0) -> None:
    """Until the agent tier is indexed and every chunk has a vector."""
    daemon.wait_indexed(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, status = daemon.client.json("GET", "/memory/status?scope=agent")
        if status.get("embeddings", {}).get("state") == "ready":
            return
        time.sleep(0.1)
    raise DaemonError(f"{daemon.url}: vectors not ready within {timeout} s")


class Members:
    """Ten clients posting one question each to the lead's /v1/embeddings, then pausing."""

    def __init__(self, crew_port: int) -> None:
        self.port = crew_port
        self.stop = threading.Event()
        self.sent = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._member, args=(i,)) for i in range(MEMBERS)]

    def __enter__(self) -> Members:
        self.stop.clear()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join()
        self._threads = [threading.Thread(target=self._member, args=(i,)) for i in range(MEMBERS)]

    def _member(self, n: int) -> None:
        # Each from an address of its own, as members in their containers are: the lead
        # bounds what each member has in flight, by address.
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=10, source_address=(f"127.0.0.{10 + n}", 0)
        )
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        i = n
        while not self.stop.is_set():
            body = json.dumps({"model": "lead", "input": [QUESTIONS[i % len(QUESTIONS)]]})
            conn.request("POST", "/v1/embeddings", body, headers)
            resp = conn.getresponse()
            resp.read()
            with self._lock:
                self.sent += 1
                if resp.status != 200:
                    self.errors.append(str(resp.status))
            i += MEMBERS
            self.stop.wait(MEMBER_PAUSE_S)
        conn.close()


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "a member embedding through its lead: memory, latency, lead load")
    per_round = 20 if ctx.quick else 60
    with ctx.tempdir(NAME) as tmp:
        agent, crew = demo.seed(tmp / "demo")
        dirs = {name: tmp / name for name in ("lead", "member", "sparse")}
        for path in dirs.values():
            shutil.copytree(agent, path)
        crew_port = free_port()
        env = {"SIDECAR_CREW_TOKEN": TOKEN}
        to_lead = ["--lead-url", f"http://127.0.0.1:{crew_port}"]
        lead = Daemon(dirs["lead"], crew, tmp / "lead.log", "lead",
                      ["--crew-listen", f"127.0.0.1:{crew_port}", "--embedder", "minilm"],
                      env)  # fmt: skip
        member = Daemon(dirs["member"], crew, tmp / "member.log", "agent",
                        [*to_lead, "--embedder", "lead"], env)  # fmt: skip
        sparse = Daemon(dirs["sparse"], crew, tmp / "sparse.log", "agent",
                        [*to_lead, "--embedder", "none"], env)  # fmt: skip
        with lead:
            lead.wait_ready(timeout=120)
            with member, sparse:
                member.wait_ready()
                sparse.wait_ready()
                _wait_embedded(lead)
                _wait_embedded(member)
                sparse.wait_indexed()
                time.sleep(IDLE_S)  # as the memory benchmark reads it: idle
                borrowing, baseline = read_memory(member), read_memory(sparse)
                progress(NAME, f"RSS {borrowing.rss_mb:.1f} MB vs {baseline.rss_mb:.1f} MB")
                hop = _hop(lead, member, per_round * ROUNDS // 2)
                time.sleep(IDLE_S)
                searched = read_memory(member)  # numpy and the query path now loaded for sure
            encodings = _encodings(crew_port)
            idle, loaded, rate = _load(lead, crew_port, per_round)
    _report(result, borrowing, baseline, hop, idle, loaded, rate)
    result.figures.insert(1, Figure("member idle RSS after its hybrid searches", searched.rss_mb,
                                    "MB", 1, RSS_TARGET))  # fmt: skip
    result.details["rss_mb"]["lead_member_after_searches"] = searched.rss_mb
    _report_encodings(result, encodings)
    return result


def _hop(lead: Daemon, member: Daemon, count: int) -> tuple[Latency, Latency]:
    """The lead's own hybrid search and the member's, interleaved question by question."""
    for q in QUESTIONS[:5]:  # warm both
        _timed_search(lead, q), _timed_search(member, q)
    own: list[float] = []
    through: list[float] = []
    for i in range(count):
        q = QUESTIONS[i % len(QUESTIONS)] + f" {i}"  # no two queries alike
        pair = ((own, lead), (through, member)) if i % 2 else ((through, member), (own, lead))
        for samples, daemon in pair:
            samples.append(_timed_search(daemon, q))
    return Latency.of_seconds(own), Latency.of_seconds(through)


def _reply(crew_port: int, texts: list[str], encoding: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", crew_port, timeout=60)
    try:
        body = json.dumps({"model": "lead", "input": texts, "encoding_format": encoding})
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        conn.request("POST", "/v1/embeddings", body, headers)
        resp = conn.getresponse()
        raw = resp.read()
        if resp.status != 200:
            raise DaemonError(f"/v1/embeddings ({encoding}) answered {resp.status}: {raw[:200]!r}")
        return raw
    finally:
        conn.close()


def _encodings(crew_port: int) -> dict[str, tuple[int, Latency]]:
    """Reply bytes and the member client's parse time of one batch, per encoding."""
    texts = [f"{QUESTIONS[i % len(QUESTIONS)]} (note {i})" for i in range(ENCODED_BATCH)]
    replies = {e: _reply(crew_port, texts, e) for e in ("float", "base64")}
    parser = OpenAIEmbedder(f"http://127.0.0.1:{crew_port}", "lead", TOKEN, lead=True)
    samples: dict[str, list[float]] = {e: [] for e in replies}
    for i in range(PARSES):
        for encoding in ("float", "base64") if i % 2 else ("base64", "float"):
            started = time.perf_counter()
            parser._parse(replies[encoding], len(texts))
            samples[encoding].append(time.perf_counter() - started)
    return {e: (len(replies[e]), Latency.of_seconds(samples[e])) for e in replies}


def _report_encodings(result: BenchResult, encodings: dict[str, tuple[int, Latency]]) -> None:
    (float_bytes, floats), (b64_bytes, b64) = encodings["float"], encodings["base64"]
    batch = f"a {ENCODED_BATCH}-text batch"
    result.figures += [
        Figure(f"reply to {batch}, floats", float_bytes / 1000, "kB", 1),
        Figure(f"reply to {batch}, base64 / floats", b64_bytes / float_bytes, "x"),
        Figure(f"member parses {batch}, floats (p50)", floats.p50, "ms"),
        Figure(f"member parses {batch}, base64 / floats (p50)", b64.p50 / floats.p50, "x"),
    ]
    result.details["encodings"] = {
        "float": {"bytes": float_bytes, "parse": floats.to_json()},
        "base64": {"bytes": b64_bytes, "parse": b64.to_json()},
    }


def _load(lead: Daemon, crew_port: int, per_round: int) -> tuple[Latency, Latency, float]:
    """The lead's own search alone, then while ten members embed queries, in rounds."""
    idle: list[float] = []
    loaded: list[float] = []
    members = Members(crew_port)
    busy_s = 0.0
    for r in range(ROUNDS):
        for busy in (False, True) if r % 2 else (True, False):
            questions = [QUESTIONS[(r * per_round + i) % len(QUESTIONS)] + f" r{r}"
                         for i in range(per_round)]  # fmt: skip
            if not busy:
                idle += [_timed_search(lead, q) for q in questions]
                continue
            with members:
                started = time.perf_counter()
                loaded += [_timed_search(lead, q) for q in questions]
                busy_s += time.perf_counter() - started
    if members.errors:
        raise DaemonError(f"the lead refused member embeddings: {members.errors[:5]}")
    return Latency.of_seconds(idle), Latency.of_seconds(loaded), members.sent / busy_s


def _report(
    result: BenchResult,
    borrowing: Reading,
    baseline: Reading,
    hop: tuple[Latency, Latency],
    idle: Latency,
    loaded: Latency,
    rate: float,
) -> None:
    own, through = hop
    ratio = borrowing.rss_mb / baseline.rss_mb
    served = f"{rate:.0f} member query embeddings/s"
    result.figures = [
        Figure("member idle RSS, --embedder lead", borrowing.rss_mb, "MB", 1, RSS_TARGET),
        Figure("member idle RSS, sparse-only", baseline.rss_mb, "MB", 1),
        Figure("RSS, lead-embedding member / sparse-only member", ratio, "x"),
        Figure("lead's own hybrid p50", own.p50, "ms"),
        Figure("member's hybrid p50 (query embedded by the lead)", through.p50, "ms"),
        Figure("member hybrid p50 - lead hybrid p50", through.p50 - own.p50, "ms", 2, HOP_TARGET),
        Figure("lead's own hybrid p50, idle", idle.p50, "ms"),
        Figure(
            f"lead's own hybrid p50, {MEMBERS} members embedding", loaded.p50, "ms", note=served
        ),
        Figure("lead p50 serving members / idle", loaded.p50 / idle.p50, "x", 2, LOAD_TARGET),
    ]
    result.tables.append(Table("hybrid search over HTTP (demo memory)", LATENCY_HEADERS, [
        own.row("lead, own model"), through.row("member, via the lead"),
        idle.row("lead, idle"), loaded.row(f"lead, {MEMBERS} members embedding"),
    ]))  # fmt: skip
    result.notes += [
        "MB = 10^6 bytes, read "
        f"{IDLE_S} s after every chunk had a vector; the member loads no model (no onnxruntime)",
        f"each of the {MEMBERS} members posts one question to /v1/embeddings, waits for it, "
        f"pauses {MEMBER_PAUSE_S * 1000:.0f} ms; idle and loaded alternate in {ROUNDS} rounds",
    ]
    result.details = {
        "rss_mb": {"lead_member": borrowing.rss_mb, "sparse_member": baseline.rss_mb},
        "hop": {"lead": own.to_json(), "member": through.to_json()},
        "load": {"idle": idle.to_json(), "loaded": loaded.to_json(), "rate_per_s": rate},
    }
