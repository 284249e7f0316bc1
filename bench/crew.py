"""crew: crew-tier search through a member (proxied to the lead) vs directly on the lead.

A lead indexes a crew folder of 10k chunks (LoCoMo conversations replicated at
run time) and serves its token-guarded crew address; a member points at it.
Both are timed on the same questions, interleaved, in one run.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.context import Context
from bench.corpus import Replicator, source_files
from bench.daemon import Daemon, DaemonError, free_port
from bench.latency import Probe, measure
from bench.report import BenchResult, Figure, Table, at_most, progress
from bench.timing import LATENCY_HEADERS

NAME = "crew"
DESCRIPTION = "crew search through a member vs on the lead"
CHUNKS = 10_000
TOKEN = "bench-crew-token"
EXTRA_TARGET = at_most(2.0, "<= 2.00 ms")


def crew_probe(daemon: Daemon) -> Probe:
    def one(q: str) -> None:
        body = json.dumps({"query": q, "limit": 10, "scope": "crew"}).encode()
        status, raw = daemon.client.raw("POST", "/memory/search", body)
        if status != 200:
            raise DaemonError(f"crew search answered {status}: {raw[:200]!r}")

    return one


def wait_crew_indexed(lead: Daemon, files: int, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, status = lead.client.json("GET", "/memory/status?scope=crew")
        idle = not status.get("indexing") and not status.get("queue_depth")
        if idle and status.get("total_files") == files:
            return dict(status)
        time.sleep(0.05)
    raise DaemonError(f"crew index not ready within {timeout} s")


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "crew search via a member (proxied) vs on the lead (direct)")
    loc = ctx.locomo()
    queries = loc.dev_questions()[: 150 if ctx.quick else 500]
    with ctx.tempdir(NAME) as tmp:
        crew_dir = tmp / "crew"
        grown = Replicator(source_files(loc.dev_corpora()), crew_dir).grow_to(CHUNKS)
        crew_port = free_port()
        env = {"SIDECAR_CREW_TOKEN": TOKEN}
        sparse = ["--embedder", "none"]
        lead = Daemon(tmp / "lead", crew_dir, tmp / "lead.log", "lead",
                      ["--crew-listen", f"127.0.0.1:{crew_port}", *sparse], env)  # fmt: skip
        member = Daemon(tmp / "member", crew_dir, tmp / "member.log", "agent",
                        ["--lead-url", f"http://127.0.0.1:{crew_port}", *sparse], env)  # fmt: skip
        for daemon in (lead, member):
            daemon.agent_dir.mkdir(parents=True)
        with lead, member:
            lead.wait_ready()
            member.wait_ready()
            status = wait_crew_indexed(lead, grown.files)
            progress(NAME, f"{status['total_chunks']:,} crew chunks; {len(queries)} queries")
            stats = measure({"direct": crew_probe(lead), "proxied": crew_probe(member)}, queries)
    direct, proxied = stats["direct"], stats["proxied"]
    result.figures = [
        Figure("direct on the lead p50", direct.p50, "ms"),
        Figure("direct on the lead p99", direct.p99, "ms"),
        Figure("proxied through a member p50", proxied.p50, "ms"),
        Figure("proxied through a member p99", proxied.p99, "ms"),
        Figure("proxied p50 - direct p50", proxied.p50 - direct.p50, "ms", target=EXTRA_TARGET),
    ]
    result.tables.append(
        Table(
            f"crew search, {status['total_chunks']:,} chunks",
            LATENCY_HEADERS,
            [direct.row("direct (lead)"), proxied.row("proxied (member)")],
        )
    )
    result.notes.append("both over HTTP keep-alive from this process; the member keeps a "
                        "pooled keep-alive connection to the lead's crew address")  # fmt: skip
    result.details = {"direct": direct.to_json(), "proxied": proxied.to_json()}
    return result
