"""Shared fixtures: real tier folders, a real service, a real aiohttp server on loopback."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.service import MemoryService
from tests.llm_stub import LLMStub

# Sidecar processes the tests start are sparse-only too, unless a test says otherwise.
os.environ.setdefault("SIDECAR_EMBEDDER", "none")
# ...and keep daily logs of any date in daily/, unless a test is about archiving them.
os.environ.setdefault("SIDECAR_DAILY_RETENTION_DAYS", "100000")


async def eventually(
    check: Callable[[], Awaitable[bool]], what: str = "condition", within: float = 10.0
) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after ``within`` seconds."""
    try:
        async with asyncio.timeout(within):
            while not await check():  # noqa: ASYNC110 - polling a condition is the point
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out after {within}s waiting for {what}") from None


@pytest.fixture
def tier_dirs(tmp_path: Path) -> tuple[Path, Path]:
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    (agent / "daily").mkdir(parents=True)
    (crew / "topics").mkdir(parents=True)
    return agent, crew


@pytest.fixture
def settings(tier_dirs: tuple[Path, Path]) -> Settings:
    agent, crew = tier_dirs
    # Sparse-only unless a test is about dense retrieval: loading the model costs time.
    # Daily logs of any date stay in daily/ unless a test is about archiving them.
    return Settings(
        agent_dir=agent, crew_dir=crew, role="lead", reconcile_interval=3600, embedder="none",
        daily_retention_days=100_000,
    )  # fmt: skip


@pytest.fixture
async def stub() -> AsyncIterator[LLMStub]:
    """An OpenAI-compatible model server on loopback (a module with another stub overrides it)."""
    server = await LLMStub().start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def service(settings: Settings) -> AsyncIterator[MemoryService]:
    svc = MemoryService(settings)
    await svc.start()
    await svc.indexes.queue.wait_idle()
    try:
        yield svc
    finally:
        await svc.stop()


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(create_app(service), host="127.0.0.1")) as c:
        yield c


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (the tests run as root in the container)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)


def fill(path: Path) -> None:
    """Write to ``path`` until the filesystem holding it is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        block = b"\0" * 4096
        while True:
            try:
                os.write(fd, block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                break
    finally:
        os.close(fd)
    assert os.statvfs(path).f_bavail == 0


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """One PostgreSQL cluster for the whole session, started by the first test asking."""
    from tests.pg_server import cluster

    with cluster() as url:
        yield url
