"""``sidecar serve`` as a separate process: plain file I/O in, HTTP search out."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sidecar_process import SidecarProcess, wait_for


@pytest.fixture
def sidecar(tier_dirs: tuple[Path, Path]) -> Iterator[SidecarProcess]:
    proc = SidecarProcess(*tier_dirs).start()
    try:
        yield proc
    finally:
        proc.kill()


def test_plain_file_write_is_found_over_http(
    sidecar: SidecarProcess, tier_dirs: tuple[Path, Path]
) -> None:
    agent, crew = tier_dirs
    with open(agent / "daily" / "2026-11-21.md", "a", encoding="utf-8") as fh:
        fh.write("# 2026-11-21\n- Deployed the heron service to staging.\n")
    (crew / "CREW.md").write_text("# Crew\nHeron owns the staging cluster.\n")
    wait_for(lambda: len(sidecar.search("heron", "both")) == 2, what="both files searchable")
    results = sidecar.search("heron service staging")
    assert results[0]["file"] == "daily/2026-11-21.md"
    assert results[0]["start_line"] == 2  # below the date heading, which "heading" names
    assert results[0]["heading"] == "2026-11-21"


def test_sigterm_drains_acknowledged_work(
    sidecar: SidecarProcess, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    for i in range(400):
        (agent / "daily" / f"2020-01-{i:03d}.md").write_text(f"# Day {i}\nentry walnut{i}\n")
    accepted = sidecar.request("POST", "/memory/reindex?scope=agent")
    assert accepted["accepted"] is True
    assert sidecar.terminate() == 0
    assert "shutting down" in sidecar.log_path.read_text()
    status = offline("status", "-p", str(agent))
    assert '"total_files": 400' in status


def test_restart_reconciles_changes_made_while_down(tier_dirs: tuple[Path, Path]) -> None:
    agent, crew = tier_dirs
    (agent / "AGENT.md").write_text("# Facts\noriginal lychee fact\n")
    (agent / "daily" / "2026-01-01.md").write_text("doomed papaya note\n")
    first = SidecarProcess(agent, crew).start()
    try:
        wait_for(lambda: len(first.search("lychee OR papaya")) == 2, what="initial index")
        assert first.terminate() == 0
    finally:
        first.kill()
    (agent / "AGENT.md").write_text("# Facts\nrevised durian fact\n")
    (agent / "daily" / "2026-01-01.md").unlink()
    (agent / "daily" / "2026-01-02.md").write_text("new fig note\n")
    second = SidecarProcess(agent, crew).start()
    try:
        assert second.search("lychee OR papaya") == []
        assert [r["file"] for r in second.search("durian")] == ["AGENT.md"]
        assert [r["file"] for r in second.search("fig")] == ["daily/2026-01-02.md"]
    finally:
        second.kill()


def test_deleted_index_is_rebuilt_on_start(tier_dirs: tuple[Path, Path]) -> None:
    agent, crew = tier_dirs
    (agent / "AGENT.md").write_text("# Facts\nthe kumquat rule\n")
    first = SidecarProcess(agent, crew).start()
    try:
        wait_for(lambda: bool(first.search("kumquat")), what="indexed")
        assert first.terminate() == 0
    finally:
        first.kill()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{agent / 'index.sqlite'}{suffix}").unlink(missing_ok=True)
    second = SidecarProcess(agent, crew).start()
    try:
        assert [r["file"] for r in second.search("kumquat")] == ["AGENT.md"]
    finally:
        second.kill()


def test_port_in_use_is_a_clear_error(
    sidecar: SidecarProcess, tier_dirs: tuple[Path, Path]
) -> None:
    agent, crew = tier_dirs
    result = subprocess.run(
        [sys.executable, "-m", "sidecar", "serve", "--agent-dir", str(agent),
         "--crew-dir", str(crew), "--port", str(sidecar.port)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert "cannot start" in result.stderr


def offline(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "sidecar", *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_context_command_prints_the_block(
    sidecar: SidecarProcess, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    (agent / "AGENT.md").write_text("# Prefs\n- the ocelot preference\n")
    text = offline("context", "--url", sidecar.url, "--budget", "5000")
    assert text.startswith("[AGENT MEMORY]")
    assert "the ocelot preference" in text
    assert len(text) <= 5000
    body = json.loads(offline("context", "--url", sidecar.url, "--json"))
    assert body["used"] == len(body["text"])
