"""What a hostile run found: cross-site requests, hard links, input that used to give a
500, loose file names, a full disk, raw bytes in answers, and an index that must heal.

Each test here failed before its fix.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from sidecar.config import Settings
from sidecar.disk.tiers import TooLarge, UnsafePath, read_regular
from sidecar.index import indexer
from sidecar.index.queue import FILE, JobKey
from sidecar.service import MemoryService
from tests.conftest import eventually, fill
from tests.sidecar_process import SidecarProcess

JSON = {"Content-Type": "application/json"}
EVIL = "https://evil.example"


def file_job(rel: str, tier: str = "agent") -> JobKey:
    """The reindex job the watcher would queue for a change to ``rel``."""
    return JobKey(tier, FILE, rel)


async def status_of(client: TestClient, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with client.request(method, path, **kw) as resp:
        assert resp.content_type == "application/json", await resp.text()
        return resp.status, await resp.json()


# -- 1. cross-site requests ---------------------------------------------------------------


async def test_a_web_page_cannot_write_memory(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    body = '{"file": "AGENT.md", "content": "- planted"}'
    plain = {"Content-Type": "text/plain", "Origin": EVIL}
    assert await status_of(client, "POST", "/memory/write", data=body, headers=plain) == (
        403, {"error": "forbidden_origin", "detail": f"Origin {EVIL!r} is not a loopback page"},
    )  # fmt: skip
    # Without an Origin (a form a browser posts as text/plain still has no JSON type).
    status, err = await status_of(
        client, "POST", "/memory/write", data=body, headers={"Content-Type": "text/plain"}
    )
    assert (status, err["error"]) == (415, "unsupported_media_type")
    status, err = await status_of(
        client, "POST", "/memory/write", data=body, headers={**JSON, "Origin": "null"}
    )
    assert (status, err["error"]) == (403, "forbidden_origin")
    status, err = await status_of(client, "POST", "/memory/reindex?scope=agent")
    assert (status, err["error"]) == (415, "unsupported_media_type")
    assert not (tier_dirs[0] / "AGENT.md").exists()
    # A page served from a loopback name, with the JSON type, may write.
    local = {**JSON, "Origin": "http://localhost:3000"}
    status, _ = await status_of(client, "POST", "/memory/write", data=body, headers=local)
    assert status == 201


@pytest.mark.parametrize(
    ("method", "path", "status", "error", "detail"),
    [
        ("POST", "/healthz", 405, "method_not_allowed", "does not take POST; it takes GET"),
        ("DELETE", "/memory/write", 405, "method_not_allowed", "it takes POST"),
        ("GET", "/memory/search", 405, "method_not_allowed", "it takes POST"),
        ("POST", "/memory/nope", 404, "not_found", "no such endpoint: POST /memory/nope"),
    ],
)
async def test_a_wrong_method_or_route_is_told_so_before_the_content_type_check(
    client: TestClient, method: str, path: str, status: int, error: str, detail: str
) -> None:
    got, err = await status_of(client, method, path, data="{}")  # no JSON Content-Type
    assert (got, err["error"]) == (status, error) and detail in err["detail"]


@pytest.mark.parametrize(
    ("method", "path", "kw"),
    [
        ("GET", "/memory/read?file=AGENT.md", {}),
        ("GET", "/memory/context", {}),
        ("POST", "/memory/search", {"json": {"query": "secret"}}),
        ("GET", "/memory/status", {}),
    ],
)
async def test_a_web_page_cannot_read_memory(
    client: TestClient, tier_dirs: tuple[Path, Path], method: str, path: str, kw: Any
) -> None:
    (tier_dirs[0] / "AGENT.md").write_text("- the secret is 42\n")
    status, err = await status_of(client, method, path, headers={"Origin": EVIL}, **kw)
    assert (status, err["error"]) == (403, "forbidden_origin")


async def test_search_still_takes_curl_without_a_content_type(client: TestClient) -> None:
    status, body = await status_of(
        client, "POST", "/memory/search", data=b'{"query": "anything"}',
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert status == 200 and body["count"] == 0


# -- 2. hard links ------------------------------------------------------------------------


def test_a_hard_link_is_refused_on_the_open_descriptor(tmp_path: Path) -> None:
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    tier = tmp_path / "tier"
    tier.mkdir()
    os.link(outside, tier / "AGENT.md")
    with pytest.raises(UnsafePath, match="2 hard links"):
        read_regular(tier, "AGENT.md")
    (tier / "big.md").write_bytes(b"x" * 2048)
    with pytest.raises(TooLarge, match="2,048 bytes, over the 1,024-byte limit"):
        read_regular(tier, "big.md", max_bytes=1024)


async def test_hard_linked_files_are_neither_read_indexed_nor_shown(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    agent, _ = tier_dirs
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    os.link(outside, agent / "AGENT.md")
    await service.indexes.queue.submit(file_job("AGENT.md"))

    status, err = await status_of(client, "GET", "/memory/read?file=AGENT.md")
    assert (status, err["error"]) == (403, "forbidden_path") and "hard links" in err["detail"]
    async with client.get("/memory/context") as resp:
        assert "root:x" not in await resp.text()
    status, found = await status_of(client, "POST", "/memory/search", json={"query": "root bash"})
    assert found["count"] == 0
    _, info = await status_of(client, "GET", "/memory/status?scope=agent")
    assert [s["file"] for s in info["skipped"]] == ["AGENT.md"]
    assert "hard links" in info["skipped"][0]["reason"]
    _, health = await status_of(client, "GET", "/healthz")
    assert health["tiers"]["agent"]["skipped_files"] == 1
    assert any("not indexed" in r for r in health["reasons"])
    # A write through the API does not copy the linked file into a note either.
    status, err = await status_of(
        client, "POST", "/memory/write", json={"file": "AGENT.md", "content": "- x"}
    )
    assert (status, err["error"]) == (403, "forbidden_path")
    assert outside.read_text() == "root:x:0:0:root:/root:/bin/bash\n"

    (agent / "AGENT.md").unlink()  # gone: no longer listed
    await service.indexes.queue.submit(file_job("AGENT.md"))
    _, info = await status_of(client, "GET", "/memory/status?scope=agent")
    assert info["skipped"] == []


# -- 6. oversized files -------------------------------------------------------------------


async def test_an_oversized_file_is_listed_and_never_read(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(indexer, "MAX_FILE_BYTES", 4096)
    (tier_dirs[0] / "daily" / "2026-01-01.md").write_bytes(b"- huge line\n" * 1000)
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    await service.indexes.queue.submit(file_job("daily/2026-01-01.md"))
    monkeypatch.setattr(os, "read", real_read)
    assert reads == []  # refused on its size, before a byte was read
    _, info = await status_of(client, "GET", "/memory/status?scope=agent")
    assert info["skipped"] == [
        {"file": "daily/2026-01-01.md", "reason": "daily/2026-01-01.md is 12,000 bytes, "
         "over the 4,096-byte limit"},
    ]  # fmt: skip
    _, health = await status_of(client, "GET", "/healthz")
    assert health["tiers"]["agent"]["skipped_files"] == 1


# -- 3. input that used to give a 500 -----------------------------------------------------


async def test_deeply_nested_json_is_a_400(client: TestClient) -> None:
    deep = "[" * 1000 + "]" * 1000
    for path in ("/memory/write", "/memory/search"):
        status, err = await status_of(client, "POST", path, data=deep, headers=JSON)
        assert status == 400 and err["error"] in ("too_deep", "invalid_json"), err
        body = '{"query": "x", "mode": ' + "[" * 1000 + "]" * 1000 + "}"
        status, err = await status_of(client, "POST", path, data=body, headers=JSON)
        assert (status, err["error"]) == (400, "too_deep"), err
    status, err = await status_of(
        client, "POST", "/memory/search",
        json={"query": "x", "mode": [[[[[[[[["sparse"]]]]]]]]]},
    )  # fmt: skip
    assert (status, err["error"]) == (400, "too_deep") and "'mode'" in err["detail"]


@pytest.mark.parametrize("path", ["/memory/search", "/memory/write", "/memory/journal"])
async def test_a_number_too_long_for_python_is_a_400(client: TestClient, path: str) -> None:
    """json.loads refuses integers of more than 4,300 digits with a ValueError that is
    not a JSONDecodeError; unknown fields are read before they are refused."""
    body = '{"query": "x", "file": "AGENT.md", "type": "a.b", "x": ' + "9" * 5000 + "}"
    status, err = await status_of(client, "POST", path, data=body, headers=JSON)
    assert (status, err["error"]) == (400, "invalid_json"), err
    assert "number" in err["detail"]


async def test_the_journal_listing_refuses_scope_both(client: TestClient) -> None:
    """One journal per tier: ``both`` is a scope of notes searches, not of a listing."""
    status, err = await status_of(client, "GET", "/memory/journal?scope=both")
    assert (status, err["error"]) == (400, "bad_scope"), err


async def test_the_change_stream_refuses_parameters_it_would_ignore(client: TestClient) -> None:
    """It follows every tier; ``?scope=crew`` must not look like a filter that works."""
    for query in ("scope=x", "scope=crew", "bogus=1"):
        status, err = await status_of(client, "GET", f"/memory/files/changes?{query}")
        assert (status, err["error"]) == (400, "unknown_parameter"), err


WRONG_TYPES = [["agent"], {"a": 1}, 3, 2.5, True]


@pytest.mark.parametrize("field", ["scope", "file", "content", "mode"])
@pytest.mark.parametrize("value", WRONG_TYPES, ids=repr)
async def test_every_write_field_is_type_checked(
    client: TestClient, tier_dirs: tuple[Path, Path], field: str, value: Any
) -> None:
    body = {"scope": "agent", "file": "AGENT.md", "content": "- x", "mode": "append", field: value}
    status, err = await status_of(client, "POST", "/memory/write", json=body)
    assert status == 400, err
    assert f"'{field}'" in err["detail"]
    assert not (tier_dirs[0] / "AGENT.md").exists()


@pytest.mark.parametrize("field", ["query", "scope", "limit", "mode"])
@pytest.mark.parametrize("value", WRONG_TYPES, ids=repr)
async def test_every_search_field_is_type_checked(
    client: TestClient, field: str, value: Any
) -> None:
    if field == "limit" and isinstance(value, int) and not isinstance(value, bool):
        return  # 3 is a fine limit
    body = {"query": "x", "scope": "agent", "limit": 5, "mode": "sparse", field: value}
    status, err = await status_of(client, "POST", "/memory/search", json=body)
    assert status == 400, err
    assert f"'{field}'" in err["detail"]


async def test_a_read_past_the_end_is_a_bad_range(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    (tier_dirs[0] / "AGENT.md").write_text("".join(f"- line {i}\n" for i in range(1, 10)))
    status, err = await status_of(client, "GET", "/memory/read?file=AGENT.md&start_line=50")
    assert (status, err["error"]) == (400, "bad_range") and "has 9 line(s)" in err["detail"]
    status, err = await status_of(
        client, "GET", "/memory/read?file=AGENT.md&start_line=5&end_line=2"
    )
    assert (status, err["error"]) == (400, "bad_range")
    status, body = await status_of(client, "GET", "/memory/read?file=AGENT.md&start_line=9")
    assert (status, body["start_line"], body["end_line"]) == (200, 9, 9)


# -- 8. the disk-space guard --------------------------------------------------------------


async def test_a_full_disk_is_never_healthy_whatever_the_minimum(
    small_fs: Path, tier_dirs: tuple[Path, Path]
) -> None:
    """``--min-free-mb 0`` on a really full filesystem: health says so, and says ok again
    (and writes work) as soon as space is freed, with no restart."""
    settings = Settings(agent_dir=small_fs / "agent", crew_dir=tier_dirs[1], role="lead",
                        reconcile_interval=3600, embedder="none", min_free_bytes=0)  # fmt: skip
    svc = MemoryService(settings)
    await svc.start()
    try:
        await svc.indexes.queue.wait_idle()
        assert (await svc.health())["status"] == "ok"
        fill(small_fs / "filler")
        health = await svc.health()
        assert health["status"] == "degraded" and health["write_path"]["ok"] is False
        assert health["write_path"]["reason"].startswith("agent: only 0 KiB free")
        (small_fs / "filler").unlink()
        assert (await svc.health())["status"] == "ok"
        await svc.notes.write("agent", "AGENT.md", "- room again", "append")
    finally:
        await svc.stop()


# -- 9. raw bytes in answers --------------------------------------------------------------


async def test_answers_carry_text_not_raw_bytes(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path]
) -> None:
    raw = b"- ok\x00\x1b[31mred\x07\xff\xfe tail\n"
    (tier_dirs[0] / "AGENT.md").write_bytes(raw + b"x" * 3990)
    await service.indexes.queue.submit(file_job("AGENT.md"))
    status, err = await status_of(
        client, "POST", "/memory/write", json={"file": "AGENT.md", "content": "- more " * 20}
    )
    assert (status, err["error"]) == (422, "cap_exceeded")
    assert err["current_entries"].startswith("- ok\ufffd\ufffd[31mred\ufffd\ufffd\ufffd tail\n")
    _, read = await status_of(client, "GET", "/memory/read?file=AGENT.md&end_line=1")
    assert read["content"] == "- ok\ufffd\ufffd[31mred\ufffd\ufffd\ufffd tail"
    _, found = await status_of(client, "POST", "/memory/search", json={"query": "tail"})
    assert "\x1b" not in found["results"][0]["snippet"]


# -- 5. an index that heals itself --------------------------------------------------------


@pytest.fixture
def held_rebuild(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every index rebuild until the test sets the event, so its states can be seen."""
    release = threading.Event()
    real = indexer.load_tree

    def held(*args: Any) -> Any:
        release.wait(10)
        return real(*args)

    monkeypatch.setattr(indexer, "load_tree", held)
    return release


async def search(client: TestClient, query: str, scope: str = "agent") -> tuple[int, Any]:
    return await status_of(client, "POST", "/memory/search", json={"query": query, "scope": scope})


@pytest.mark.parametrize("damage", ["garbage", "deleted_tier"])
async def test_a_broken_index_is_rebuilt_and_health_says_so_meanwhile(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path],
    held_rebuild: threading.Event, damage: str,
) -> None:  # fmt: skip
    agent, crew = tier_dirs
    status, _ = await status_of(
        client, "POST", "/memory/write", json={"file": "AGENT.md", "content": "- kiwi farm"}
    )
    assert status == 201
    (crew / "CREW.md").write_text("- the crew grows kiwi too\n")
    await service.indexes.queue.submit(file_job("CREW.md", "crew"))
    if damage == "garbage":
        (agent / "index.sqlite").write_bytes(b"this is not a database" * 512)
    else:
        while agent.exists():  # the daemon's SQLite files may come and go meanwhile
            shutil.rmtree(agent, ignore_errors=True)
        agent.mkdir()
        (agent / "AGENT.md").write_text("- kiwi farm\n")

    # A monitor's health poll is what notices first (SQLite may answer from its cache).
    _, health = await status_of(client, "GET", "/healthz")
    assert health["status"] == "degraded"
    assert health["tiers"]["agent"]["state"] == "rebuilding"
    assert any("index unusable" in r for r in health["reasons"])
    status, err = await search(client, "kiwi")
    assert (status, err["error"]) == (503, "index_rebuilding"), err
    assert err["retry_after"] > 0
    status, both = await search(client, "kiwi", "both")  # the other tier still answers
    assert status == 200 and [r["source"] for r in both["results"]] == ["crew"]
    assert any(d.startswith("agent: index_rebuilding") for d in both["degraded"])
    _, info = await status_of(client, "GET", "/memory/status?scope=agent")
    assert info["broken"] and info["search_ready"] is False
    # Writes go on, durable at once, while the index is rebuilt.
    status, wrote = await status_of(
        client, "POST", "/memory/write",
        json={"file": "daily/2026-01-02.md", "content": "- kiwi harvest"},
    )  # fmt: skip
    assert status == 201 and wrote["indexed"] is False and "rebuilt" in wrote["warning"]
    assert (agent / "daily" / "2026-01-02.md").read_text() == "- kiwi harvest\n"

    held_rebuild.set()

    async def healed() -> bool:
        _, h = await status_of(client, "GET", "/healthz")
        return h["status"] == "ok"

    await eventually(healed, "the index to heal")
    await service.indexes.queue.wait_idle()
    status, found = await search(client, "kiwi")
    assert status == 200
    assert sorted(r["file"] for r in found["results"]) == ["AGENT.md", "daily/2026-01-02.md"]


async def test_a_write_that_finds_the_index_broken_still_lands(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path],
    held_rebuild: threading.Event, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """SQLite reports the corruption to the write itself: the write stands, the tier heals."""
    store = service.indexes.tiers["agent"].store

    def malformed(*_: Any) -> Any:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(store, "total_bytes", malformed)
    monkeypatch.setattr(store, "replace_file", malformed)
    status, wrote = await status_of(
        client, "POST", "/memory/write", json={"file": "AGENT.md", "content": "- pear"}
    )
    assert status == 201 and wrote["indexed"] is False, wrote
    assert (tier_dirs[0] / "AGENT.md").read_text() == "- pear\n"
    assert "malformed" in (service.indexes.tiers["agent"].broken or "")
    monkeypatch.undo()  # the rebuilt index is a new database: it works again
    held_rebuild.set()

    async def rebuilt() -> bool:
        return service.indexes.tiers["agent"].broken is None

    await eventually(rebuilt, "the rebuild")
    await service.indexes.queue.wait_idle()
    status, found = await search(client, "pear")
    assert status == 200 and [r["file"] for r in found["results"]] == ["AGENT.md"]


# -- 4. every error answer is the API's shape ---------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SidecarProcess]:
    root = tmp_path_factory.mktemp("daemon")
    proc = SidecarProcess(root / "agent", root / "crew").start()
    try:
        yield proc
    finally:
        proc.kill()


def raw_exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (no client library tidies them) and read the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                headers = dict(
                    line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:]
                )
                if len(body) >= int(headers.get("Content-Length", "-1")) >= 0:
                    break
    status_line, _, _ = data.partition(b"\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    headers = {k.lower(): v for k, v in (
        line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:]
    )}  # fmt: skip
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"FOO /memory/read HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"G(E)T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\x00evil\r\n\r\n",
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n",
        b"this is not http\r\n\r\n",
        b"DELETE /memory/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ],
    ids=[
        "unknown-method",
        "bad-method",
        "nul-in-host",
        "long-url",
        "long-header",
        "not-http",
        "wrong-method",
        "mcp-bad-accept",
        "mcp-get-without-session",
    ],
)
def test_every_error_answer_is_error_detail_json(
    daemon: SidecarProcess, request_bytes: bytes
) -> None:
    status, headers, body = raw_exchange(daemon.port, request_bytes)
    assert status >= 400
    assert headers.get("content-type", "").startswith("application/json"), (headers, body)
    answer = json.loads(body)
    assert set(answer) == {"error", "detail"} and all(isinstance(v, str) for v in answer.values())
    # a client's malformed request is answered and counted, not logged as our error
    assert '"level": "error"' not in daemon.log_path.read_text()


# -- what a hostile review of the above found ---------------------------------------------


async def test_a_failed_rebuild_is_tried_again_until_it_works(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from sidecar.index import jobs

    monkeypatch.setattr(jobs, "HEAL_RETRY_S", 0.05)
    agent, _ = tier_dirs
    status, _ = await status_of(
        client, "POST", "/memory/write", json={"file": "AGENT.md", "content": "- plum"}
    )
    assert status == 201
    store = service.indexes.tiers["agent"].store
    real_reset, attempts = store.reset, []

    def flaky_reset() -> None:  # the first attempt meets a full disk
        attempts.append(1)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("database or disk is full")
        real_reset()

    monkeypatch.setattr(store, "reset", flaky_reset)
    (agent / "index.sqlite").write_bytes(b"")  # truncated in place: no SQLite header
    _, health = await status_of(client, "GET", "/healthz")
    assert health["tiers"]["agent"]["state"] == "rebuilding"

    async def healed() -> bool:
        _, h = await status_of(client, "GET", "/healthz")
        return h["status"] == "ok"

    await eventually(healed, "the second rebuild attempt")
    assert len(attempts) == 2
    await service.indexes.queue.wait_idle()
    status, found = await search(client, "plum")
    assert status == 200 and [r["file"] for r in found["results"]] == ["AGENT.md"]
    assert await service.notes.write_health() == (True, None)  # MCP writes offered again


async def test_a_deleted_wal_is_damage_and_heals(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    for i in range(3):
        status, _ = await status_of(
            client, "POST", "/memory/write", json={"file": "AGENT.md", "content": f"- fig {i}"}
        )
        assert status == 201
    (agent / "index.sqlite-wal").unlink()
    for i in range(3):  # writes stay durable whatever the index does
        status, wrote = await status_of(
            client, "POST", "/memory/write", json={"file": "AGENT.md", "content": f"- date {i}"}
        )
        assert status == 201, wrote

    async def healed() -> bool:
        _, h = await status_of(client, "GET", "/healthz")
        status, found = await search(client, "date")
        return h["status"] == "ok" and status == 200 and found["count"] == 1

    await eventually(healed, "searches to find every write again")
    assert (agent / "AGENT.md").read_text().count("- date") == 3


async def test_both_tiers_rebuilding_is_a_503_and_the_block_still_answers(
    client: TestClient, service: MemoryService, held_rebuild: threading.Event
) -> None:
    for name in ("agent", "crew"):
        service.indexes.mark_broken(name, "test: damaged")
    status, err = await search(client, "anything", "both")
    assert (status, err["error"]) == (503, "index_rebuilding")
    async with client.get("/memory/context?query=anything") as resp:
        assert resp.status == 200 and "[AGENT MEMORY]" in await resp.text()
    held_rebuild.set()


def test_a_reset_index_is_read_afresh_by_every_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sidecar.index import sqlite as sqlite_module
    from sidecar.stores.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "index.sqlite")
    assert store.stats().total_files == 0
    real_connect, calls = sqlite_module.connect, []

    def failing_once(path: Path, *args: Any) -> Any:
        calls.append(path)
        if len(calls) == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(path, *args)

    store.reset()
    monkeypatch.setattr(sqlite_module, "connect", failing_once)
    with pytest.raises(sqlite3.OperationalError):
        store.stats()  # this thread's reconnect fails once...
    assert store.stats().total_files == 0  # ...and the next call reconnects
    assert store.generation == 1
    store.close()


def test_a_reset_index_drops_the_vectors_it_held(tmp_path: Path) -> None:
    import numpy as np

    from sidecar.retrieval.embedders.base import normalize
    from sidecar.retrieval.vector_sync import TierVectors
    from sidecar.stores.sqlite import SQLiteStore

    class Embedder:
        model_id, dim = "test:2", 2

        def embed(self, texts: list[str]) -> Any:
            return normalize(np.ones((len(texts), 2), dtype=np.float32))

        def close(self) -> None: ...

    store = SQLiteStore(tmp_path / "index.sqlite")
    item = indexer.parse_note("AGENT.md", b"- kiwi\n", indexer.FileState(7, 1, "x"), 650)
    store.replace_file(item)
    vectors = TierVectors(store, Embedder())
    vectors.sync(lambda: False)
    assert len(vectors.index) == 1 and vectors.embedded == 1
    store.reset()
    store.replace_file(item)  # the same chunk id and text as before the reset
    vectors.sync(lambda: False)
    assert vectors.embedded == 2  # embedded again, so its vector is stored in the new index
    assert store.get_vectors("test:2", [store.chunk_keys()[1]])
    store.close()


async def test_symlinks_are_not_listed_as_skipped(
    client: TestClient, service: MemoryService, tier_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    (tmp_path / "outside.md").write_text("- elsewhere\n")
    os.symlink(tmp_path / "outside.md", tier_dirs[0] / "linked.md")
    await service.indexes.queue.submit(file_job("linked.md"))
    _, info = await status_of(client, "GET", "/memory/status?scope=agent")
    assert info["skipped"] == []
    _, health = await status_of(client, "GET", "/healthz")
    assert health["status"] == "ok"


@pytest.mark.parametrize("origin", ["http://[::1", "http://[", "http://]:80", "http://[evil.com]"])
async def test_a_malformed_origin_is_refused_not_an_error(client: TestClient, origin: str) -> None:
    status, err = await status_of(client, "GET", "/memory/status", headers={"Origin": origin})
    assert (status, err["error"]) == (403, "forbidden_origin")


async def test_an_undecodable_body_is_a_400(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The client's mistake, answered; not an unhandled exception with a traceback in the
    log (aiohttp read the rest of the body after the answer and met the error again)."""
    with caplog.at_level(logging.ERROR):
        status, err = await status_of(
            client, "POST", "/memory/write", data=b"not gzip at all",
            headers={**JSON, "Content-Encoding": "gzip"},
        )  # fmt: skip
    assert (status, err["error"]) == (400, "bad_request")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_c1_controls_and_lone_carriage_returns_are_not_passed_on() -> None:
    from sidecar.disk.tiers import decode_text

    assert decode_text(b"a\xc2\x9b31mb\rc\r\nd\te") == "a\ufffd31mb\ufffdc\r\nd\te"


def test_a_member_passes_on_the_lead_s_retry_after() -> None:
    from sidecar.crew.client import LeadError

    err = LeadError(503, {"error": "index_rebuilding", "detail": "x", "retry_after": 2})
    api = err.to_api_error()
    assert (api.status, api.error, api.extra) == (503, "index_rebuilding", {"retry_after": 2})
