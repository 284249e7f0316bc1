"""Compaction and vector pruning follow every change to ``learnings/``, whoever made it:
hand edits by another process (seen by the real inotify watcher), ``memory.write``, a
change made while the daemon was down. Real files, real SQLite, a real server."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.learnings import entries
from sidecar.learnings.index import INDEX_FILENAME
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub

LONG_AGO = (date.today() - timedelta(days=90)).isoformat()
MIGRATIONS = "Run the schema migrations before deploying the API service to staging."


def entry(entry_id: str, text: str, count: int = 0) -> str:
    return (f"\n---\nid: {entry_id}\ntype: procedural\nreinforcement_count: {count}\n"
            f"last_reinforced: '{LONG_AGO}'\n---\n{text}\n")  # fmt: skip


async def run(*argv: str) -> None:
    proc = await asyncio.create_subprocess_exec(*argv)
    assert await proc.wait() == 0, argv


async def by_another_process(path: Path, *texts: str) -> None:
    """Appends made by a shell, one ``>>`` each, as an editor or a script would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    script = "; ".join(f'printf \'%s\' "${n + 1}" >> "$0"' for n in range(len(texts)))
    await run("sh", "-c", script, str(path), *texts)


def active(path: Path) -> list[entries.Entry]:
    found, _ = entries.parse(path.name, path.read_text())
    return [e for e in found if e.status == "active"]


def archived(root: Path) -> list[str]:
    out: list[str] = []
    for path in sorted((root / "learnings" / "archive").glob("*.md")):
        out += [e.id for e in entries.parse(path.name, path.read_text())[0]]
    return out


async def status(client: TestClient) -> dict[str, Any]:
    resp = await client.get("/memory/status", params={"scope": "agent"})
    return dict((await resp.json())["learnings"])


async def search(client: TestClient, query: str, **extra: Any) -> list[dict[str, Any]]:
    resp = await client.post("/memory/learnings/search", json={"query": query, **extra})
    body = await resp.json()
    assert resp.status == 200, body
    return list(body["hits"])


async def test_a_burst_of_hand_appends_by_another_process_is_one_compaction(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    path = settings.agent_dir / "learnings" / "deploys.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Deploys\n" + entry("tidy", "Delete merged branches after a deploy."))

    async def indexed() -> bool:
        return bool(await search(client, "merged branches"))

    await eventually(indexed, "the watcher to index the hand-written file")
    # five copies of one lesson, a few words apart, appended in a burst
    copies = [entry(f"mig-{n}", MIGRATIONS.replace(".", "!" * n), count=n) for n in range(5)]
    await by_another_process(path, *copies)

    async def merged() -> bool:
        return len(active(path)) == 2 and len(archived(settings.agent_dir)) == 4

    await eventually(merged, "the burst of appends to be compacted")
    kept = {e.id: e for e in active(path)}
    assert set(kept) == {"tidy", "mig-4"}  # the most reinforced copy, holding them all
    assert kept["mig-4"].reinforcement_count == 0 + 1 + 2 + 3 + 4
    assert sorted(archived(settings.agent_dir)) == ["mig-0", "mig-1", "mig-2", "mig-3"]
    assert (await status(client))["compactions"] == {"after_change": 1}
    assert [h["id"] for h in await search(client, "schema migrations staging")] == ["mig-4"]


async def test_a_memory_write_into_learnings_is_compacted(
    client: TestClient, settings: Settings
) -> None:
    content = entry("pager-a", "Acknowledge pages within five minutes.") + entry(
        "pager-b", "Acknowledge pages within five minutes!", count=2
    )
    body = {"scope": "agent", "file": "learnings/ops.md", "mode": "append", "content": content}
    resp = await client.post("/memory/write", json=body)
    assert resp.status == 201, await resp.json()
    path = settings.agent_dir / "learnings" / "ops.md"

    async def merged() -> bool:
        return [e.id for e in active(path)] == ["pager-b"]

    await eventually(merged, "a memory.write into learnings/ to be compacted")
    assert archived(settings.agent_dir) == ["pager-a"]


async def test_a_change_made_while_the_daemon_was_down_is_compacted_at_start(
    settings: Settings,
) -> None:
    svc = MemoryService(settings)
    await svc.start()
    await svc.stop()
    path = settings.agent_dir / "learnings" / "ops.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(entry("a", MIGRATIONS) + entry("old", "Deploy by hand.").replace(
        "type: procedural", "status: retired"))  # fmt: skip
    svc = MemoryService(settings)
    await svc.start()
    try:

        async def compacted() -> bool:
            return sorted(archived(settings.agent_dir)) == ["old"]

        await eventually(compacted, "the retired entry to be archived at start")
        assert [e.id for e in active(path)] == ["a"]
    finally:
        await svc.stop()


async def test_a_failed_compaction_after_a_change_is_reported_then_retried(
    client: TestClient, settings: Settings
) -> None:
    archive = settings.agent_dir / "learnings" / "archive" / f"{date.today().year}.md"
    archive.mkdir(parents=True)  # where the merged-away entry must go: not a file
    path = settings.agent_dir / "learnings" / "ops.md"
    await by_another_process(path, entry("x", MIGRATIONS), entry("y", MIGRATIONS + " Always."))

    async def reported() -> bool:
        return bool((await status(client))["compactions"].get("failed"))

    await eventually(reported, "the failed compaction to show in status")
    (failed,) = (await status(client))["compactions"]["failed"]
    assert failed["file"] == "learnings/ops.md" and failed["error"]
    health = await (await client.get("/healthz")).json()
    assert any("compaction of learnings/ops.md" in r for r in health["reasons"]), health
    assert len(active(path)) == 2  # nothing lost: both still there
    shutil.rmtree(archive)
    await by_another_process(path, "\n")  # the next change tries again

    async def recovered() -> bool:
        body = (await status(client))["compactions"]
        return "failed" not in body and len(active(path)) == 1

    await eventually(recovered, "the next change to compact the file")


@pytest.fixture
def embedder() -> Iterator[OllamaStub]:
    with OllamaStub(dim=64) as stub:
        yield stub


def stored_hashes(root: Path) -> tuple[set[str], set[str]]:
    """(hashes of the learnings' chunks, hashes with a stored vector)."""
    with sqlite3.connect(root / INDEX_FILENAME) as db:
        chunks = {h for (h,) in db.execute("SELECT hash FROM chunks")}
        vectors = {h for (h,) in db.execute("SELECT hash FROM vectors")}
    return chunks, vectors


async def test_a_changed_entrys_old_vector_is_pruned_and_its_text_never_found(
    settings: Settings, embedder: OllamaStub
) -> None:
    dense = dataclasses.replace(settings, embedder="ollama", ollama_url=embedder.url,
                                ollama_model="nomic-embed-text")  # fmt: skip
    svc = MemoryService(dense)
    await svc.start()
    client = TestClient(TestServer(create_app(svc), host="127.0.0.1"))
    await client.start_server()
    root = settings.agent_dir
    path = root / "learnings" / "certs.md"
    try:
        await by_another_process(
            path, entry("cert", "Rotate the staging TLS certificate every month.")
        )

        async def embedded() -> bool:
            chunks, vectors = stored_hashes(root)
            return len(chunks) == 1 and chunks <= vectors

        await eventually(embedded, "the entry's vector to be stored")
        (old,), _ = stored_hashes(root)
        await run(
            "sed",
            "-i",
            "s/staging TLS certificate every month/production database password every quarter/",
            str(path),
        )  # an editor's save: renamed over it

        async def pruned() -> bool:
            chunks, vectors = stored_hashes(root)
            return old not in vectors and len(chunks) == 1 and chunks <= vectors

        await eventually(pruned, "the old text's vector to be pruned and the new one stored")
        for mode in ("dense", "hybrid", "sparse"):
            hits = await search(client, "staging TLS certificate", mode=mode)
            assert all("staging" not in h["text"] for h in hits), (mode, hits)
        (hit,) = await search(client, "database password", mode="sparse")
        assert hit["text"] == "Rotate the production database password every quarter."
    finally:
        await client.close()
        await svc.stop()
