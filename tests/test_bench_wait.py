"""The benchmarks wait for what the daemon indexes: over the demo memory (which holds
``learnings/*.md``, indexed in their own format, not as notes) a wait for every ``*.md``
as a note never ended and ``make bench`` failed in ``memory`` after 300 s."""

from __future__ import annotations

from pathlib import Path

from bench.daemon import Daemon
from sidecar import demo


def test_the_bench_waits_for_the_notes_the_daemon_indexes(tmp_path: Path) -> None:
    agent, crew = demo.seed(tmp_path / "demo")
    assert list(agent.glob("learnings/*.md"))  # the case that stalled
    with Daemon(agent, crew, tmp_path / "daemon.log", extra_args=["--embedder", "none"]) as daemon:
        daemon.wait_ready()
        status = daemon.wait_indexed(timeout=60)
    assert status["total_files"] == daemon.notes() == 2  # AGENT.md and yesterday's log
