"""Durable writes: injected OS faults, a really full disk, stale temps, path attacks, races.

Faults are injected by replacing ``durable.os`` with a proxy that forwards to the
real ``os`` except for the one call under test, so only durable.py sees the fault
(the event loop, SQLite and the test itself keep the real calls). Every fake records
that it fired, so a test cannot pass because the fault never happened.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import select
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from sidecar.config import Settings
from sidecar.disk import durable
from sidecar.errors import ApiError
from sidecar.index import indexer
from sidecar.index.queue import FILE, WRITE, JobKey
from sidecar.notes import write_job
from sidecar.service import MemoryService
from tests.conftest import eventually, fill

REPO = Path(__file__).resolve().parent.parent
DAY = "daily/2026-11-21.md"
OLD = b"# Agent\n- prefers tabs\n"


class FakeOs:
    """The ``os`` module as durable.py sees it, with some functions replaced."""

    def __init__(self, **overrides: Callable[..., Any]) -> None:
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def is_dir(fd: int) -> bool:
    return stat.S_ISDIR(os.fstat(fd).st_mode)


def oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class Fault:
    """One injected failure of one OS call made by durable.py."""

    def __init__(self, call: str, code: int) -> None:
        self.call, self.code = call, code
        self.fired = 0
        self.temp_existed = False  # a temp file was on disk when the fault hit

    def _fire(self, temp_exists: bool) -> OSError:
        self.fired += 1
        self.temp_existed = self.temp_existed or temp_exists
        return oserror(self.code)

    def fake_os(self) -> FakeOs:
        if self.call == "file_fsync":

            def fsync(fd: int) -> None:
                if is_dir(fd):
                    return os.fsync(fd)
                assert fd_path(fd).endswith(durable.TMP_SUFFIX), "fsync of a non-temp file"
                raise self._fire(temp_exists=True)

            return FakeOs(fsync=fsync)
        if self.call == "dir_fsync":

            def dir_fsync(fd: int) -> None:
                if not is_dir(fd):
                    return os.fsync(fd)
                raise self._fire(temp_exists=False)

            return FakeOs(fsync=dir_fsync)
        if self.call == "rename":

            def rename(src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
                exists = stat.S_ISREG(os.stat(src, dir_fd=src_dir_fd).st_mode)
                raise self._fire(temp_exists=exists)

            return FakeOs(rename=rename)
        if self.call == "write":
            calls = 0

            def write(fd: int, data: Any) -> int:
                # A disk filling up: the first write gets half in, the next one fails.
                nonlocal calls
                calls += 1
                if calls == 1 and len(data) > 1:
                    return os.write(fd, data[: len(data) // 2])
                raise self._fire(temp_exists=fd_path(fd).endswith(durable.TMP_SUFFIX))

            return FakeOs(write=write)
        if self.call == "open_temp":

            def open_(path: str | Path, flags: int, *args: Any, **kw: Any) -> int:
                if os.fspath(path).endswith(durable.TMP_SUFFIX):
                    raise self._fire(temp_exists=False)
                return os.open(path, flags, *args, **kw)

            return FakeOs(open=open_)
        raise ValueError(self.call)

    def inject(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(durable, "os", self.fake_os())


def temps(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob(f"*{durable.TMP_SUFFIX}"))


def snapshot(root: Path) -> dict[str, object]:
    """Everything below ``root`` but the derived indexes (notes, journal, learnings: their
    WAL files change on reads too): file bytes, link targets, directories."""
    tree: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if ".sqlite" in p.name:
            continue
        if p.is_symlink():
            tree[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            tree[rel] = "dir"
        else:
            tree[rel] = p.read_bytes()
    return tree


def agent_root(service: MemoryService) -> Path:
    return service.indexes.tiers["agent"].tier.root


# Failures before the rename: (call, errno) -> the API error the service answers with.
BEFORE_RENAME = {
    "file_fsync-EIO": ("file_fsync", errno.EIO, 500, "write_failed"),
    "rename-EIO": ("rename", errno.EIO, 500, "write_failed"),
    "rename-EXDEV": ("rename", errno.EXDEV, 500, "write_failed"),
    "write-ENOSPC": ("write", errno.ENOSPC, 507, "disk_full"),
    "write-EDQUOT": ("write", errno.EDQUOT, 507, "disk_full"),
    "file_fsync-ENOSPC": ("file_fsync", errno.ENOSPC, 507, "disk_full"),
    "open_temp-EROFS": ("open_temp", errno.EROFS, 503, "read_only"),
    "open_temp-EACCES": ("open_temp", errno.EACCES, 500, "write_failed"),
}


# -- durable.write_file under faults ------------------------------------------------------


@pytest.mark.parametrize("case", list(BEFORE_RENAME), ids=list(BEFORE_RENAME))
def test_failure_before_rename_leaves_target_byte_identical(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call, code, _, _ = BEFORE_RENAME[case]
    target = tmp_path / "AGENT.md"
    target.write_bytes(OLD)
    inode = target.stat().st_ino
    fault = Fault(call, code)
    fault.inject(monkeypatch)

    with pytest.raises(OSError) as info:
        durable.write_file(tmp_path, "AGENT.md", lambda old: (old or b"") + b"- new\n" * 100)

    assert info.value.errno == code
    assert not isinstance(info.value, durable.NotDurable)
    assert fault.fired == 1
    assert fault.temp_existed == (call != "open_temp")  # so the cleanup below was needed
    assert target.read_bytes() == OLD
    assert target.stat().st_ino == inode  # not even replaced by an identical copy
    assert sorted(os.listdir(tmp_path)) == ["AGENT.md"]

    monkeypatch.setattr(durable, "os", os)  # the disk recovers: the next write works
    durable.write_file(tmp_path, "AGENT.md", lambda old: (old or b"") + b"- after\n")
    assert target.read_bytes() == OLD + b"- after\n"


@pytest.mark.parametrize("case", list(BEFORE_RENAME), ids=list(BEFORE_RENAME))
def test_failed_write_of_new_file_leaves_no_file(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call, code, _, _ = BEFORE_RENAME[case]
    fault = Fault(call, code)
    fault.inject(monkeypatch)
    with pytest.raises(OSError):
        durable.write_file(tmp_path, "daily/2026-11-21.md", lambda old: b"first entry\n")
    assert fault.fired == 1
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []


def test_directory_fsync_failure_is_not_durable_but_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "AGENT.md"
    target.write_bytes(OLD)
    fault = Fault("dir_fsync", errno.EIO)
    fault.inject(monkeypatch)

    with pytest.raises(durable.NotDurable) as info:
        durable.write_file(tmp_path, "AGENT.md", lambda old: (old or b"") + b"- new\n")

    assert isinstance(info.value, OSError)
    assert info.value.errno == errno.EIO
    assert fault.fired == 1
    assert target.read_bytes() == OLD + b"- new\n"
    assert sorted(os.listdir(tmp_path)) == ["AGENT.md"]


def test_new_directory_is_made_durable_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that had to create ``daily/`` must fsync the tier root as well: until the
    new directory's own entry is on disk, a power loss can take the directory, and the
    file the write already acknowledged, with it."""
    synced: list[tuple[int, int]] = []

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            synced.append((st.st_dev, st.st_ino))
        os.fsync(fd)

    monkeypatch.setattr(durable, "os", FakeOs(fsync=fsync))
    durable.write_file(tmp_path, DAY, lambda old: b"first entry\n")

    root, daily = tmp_path.stat(), (tmp_path / "daily").stat()
    assert (daily.st_dev, daily.st_ino) in synced
    assert (root.st_dev, root.st_ino) in synced, "the new daily/ was never fsynced into root"


def test_build_raising_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "daily").mkdir()
    target = tmp_path / "daily" / "2026-11-21.md"
    target.write_bytes(OLD)
    before = snapshot(tmp_path)
    seen: list[bytes | None] = []

    def build(current: bytes | None) -> bytes:
        seen.append(current)
        raise RuntimeError("over the cap")

    with pytest.raises(RuntimeError, match="over the cap"):
        durable.write_file(tmp_path, "daily/2026-11-21.md", build)
    with pytest.raises(RuntimeError, match="over the cap"):
        durable.write_file(tmp_path, "daily/2026-11-22.md", build)

    assert seen == [OLD, None]
    assert snapshot(tmp_path) == before


def test_successful_write_keeps_permissions_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "AGENT.md"
    target.write_bytes(OLD)
    target.chmod(0o600)
    outcome = durable.write_file(tmp_path, "AGENT.md", lambda old: (old or b"") + b"- x\n")
    assert (outcome.old, outcome.new) == (OLD, OLD + b"- x\n")
    assert target.read_bytes() == OLD + b"- x\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["AGENT.md"]


# -- the same faults through Notes.write ---------------------------------------------------


@pytest.mark.parametrize("case", list(BEFORE_RENAME), ids=list(BEFORE_RENAME))
async def test_service_maps_failure_and_keeps_target(
    case: str, service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    call, code, status, error = BEFORE_RENAME[case]
    root = agent_root(service)
    await service.notes.write("agent", "AGENT.md", OLD.decode(), "replace")
    target = root / "AGENT.md"
    assert target.read_bytes() == OLD
    fault = Fault(call, code)
    fault.inject(monkeypatch)

    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", "AGENT.md", "- new fact", "append")

    assert (info.value.status, info.value.error) == (status, error), info.value.detail
    assert fault.fired == 1
    assert target.read_bytes() == OLD
    assert temps(root) == []
    read = await service.notes.read("agent", "AGENT.md")
    assert read["content"] == OLD.decode().rstrip("\n")

    monkeypatch.setattr(durable, "os", os)  # neither lock is left held
    await asyncio.wait_for(service.notes.write("agent", "AGENT.md", "- later", "append"), 10)
    assert target.read_bytes() == OLD + b"- later\n"


@pytest.mark.parametrize("case", list(BEFORE_RENAME), ids=list(BEFORE_RENAME))
async def test_service_failed_new_file_leaves_no_file(
    case: str, service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    call, code, status, error = BEFORE_RENAME[case]
    root = agent_root(service)
    fault = Fault(call, code)
    fault.inject(monkeypatch)
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", DAY, "first entry", "append")
    assert (info.value.status, info.value.error) == (status, error)
    assert fault.fired == 1
    assert os.listdir(root / "daily") == []
    with pytest.raises(ApiError) as missing:
        await service.notes.read("agent", DAY)
    assert missing.value.status == 404


async def test_service_directory_fsync_failure_is_not_durable(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = agent_root(service)
    await service.notes.write("agent", "AGENT.md", OLD.decode(), "replace")
    fault = Fault("dir_fsync", errno.EIO)
    fault.inject(monkeypatch)

    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", "AGENT.md", "- new fact", "append")

    assert (info.value.status, info.value.error) == (500, "not_durable")
    assert fault.fired == 1
    assert (root / "AGENT.md").read_bytes() == OLD + b"- new fact\n"
    assert temps(root) == []


async def found(service: MemoryService, word: str) -> list[str]:
    response = await service.search.search(word, "agent", 10, "sparse")
    return [r.hit.path for r in response.results]


@pytest.mark.parametrize("case", ["file_fsync-EIO", "rename-EIO", "write-ENOSPC"])
async def test_failed_write_is_never_searchable(
    case: str, service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index update is staged while the fsync runs; a failed write must roll it back."""
    call, code, _, _ = BEFORE_RENAME[case]
    await service.notes.write("agent", "AGENT.md", OLD.decode(), "replace")
    fault = Fault(call, code)
    fault.inject(monkeypatch)
    with pytest.raises(ApiError):
        await service.notes.write("agent", "AGENT.md", "- the quokka fact", "append")
    assert fault.fired == 1
    assert await found(service, "quokka") == []
    assert await found(service, "tabs") == ["AGENT.md"]  # the old text is still there

    monkeypatch.setattr(durable, "os", os)
    body = await service.notes.write("agent", "AGENT.md", "- the quokka fact", "append")
    assert body["indexed"] is True
    assert await found(service, "quokka") == ["AGENT.md"]


async def test_not_durable_write_is_in_place_and_searchable(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.notes.write("agent", "AGENT.md", OLD.decode(), "replace")
    Fault("dir_fsync", errno.EIO).inject(monkeypatch)
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", "AGENT.md", "- the wombat fact", "append")
    assert info.value.error == "not_durable"
    # The file holds the new text, so the index must too.
    assert await found(service, "wombat") == ["AGENT.md"]


async def test_index_failure_leaves_the_write_standing(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("index is wedged")

    monkeypatch.setattr(indexer, "index_written", broken)
    # The watcher's own reindex of the file must fail too, or it could clear the error
    # before write_health() looks.
    monkeypatch.setattr(indexer, "sync_file", broken)
    body = await service.notes.write("agent", DAY, "- the numbat fact", "append")
    assert body["indexed"] is False
    assert "index is wedged" in body["warning"]
    assert (agent_root(service) / DAY).read_bytes() == b"- the numbat fact\n"
    ok, why = await service.notes.write_health()
    assert not ok and "index is wedged" in (why or "")

    monkeypatch.undo()
    body = await service.notes.write("agent", DAY, "- the bilby fact", "append")
    assert body["indexed"] is True
    assert await found(service, "numbat") == [DAY]  # the whole file was indexed again
    assert (await service.notes.write_health())[0]


async def test_service_cap_exceeded_writes_nothing(service: MemoryService) -> None:
    root = agent_root(service)
    await service.notes.write("agent", "AGENT.md", OLD.decode(), "replace")
    before = snapshot(root)
    too_big = "x" * (service.settings.caps.core + 1)

    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", "AGENT.md", too_big, "append")
    assert (info.value.status, info.value.error) == (422, "cap_exceeded")
    assert info.value.extra["current_entries"] == OLD.decode()

    daily_too_big = "y" * (service.settings.caps.daily + 1)
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", DAY, daily_too_big, "append")
    assert (info.value.status, info.value.error) == (422, "cap_exceeded")

    assert snapshot(root) == before
    assert temps(root) == []


# -- a really full disk -----------------------------------------------------------------


async def test_really_full_filesystem_is_disk_full_and_changes_nothing(
    small_fs: Path, tier_dirs: tuple[Path, Path]
) -> None:
    agent = small_fs / "agent"
    settings = Settings(
        agent_dir=agent,
        crew_dir=tier_dirs[1],
        role="lead",
        reconcile_interval=3600,
        embedder="none",
    )
    svc = MemoryService(settings)
    await svc.start()
    try:
        await svc.indexes.queue.wait_idle()
        await svc.notes.write("agent", "AGENT.md", OLD.decode(), "replace")
        filler = small_fs / "filler"
        fill(filler)

        with pytest.raises(ApiError) as info:
            await svc.notes.write("agent", "AGENT.md", "- new fact " * 50, "append")
        assert (info.value.status, info.value.error) == (507, "disk_full")
        assert (agent / "AGENT.md").read_bytes() == OLD
        with pytest.raises(ApiError) as info:
            await svc.notes.write("agent", DAY, "first entry " * 50, "append")
        assert (info.value.status, info.value.error) == (507, "disk_full")
        assert not (agent / DAY).exists()
        assert temps(agent) == []

        filler.unlink()  # space again: writing works again
        await svc.notes.write("agent", "AGENT.md", "- new fact", "append")
        assert (agent / "AGENT.md").read_bytes() == OLD + b"- new fact\n"
    finally:
        await svc.stop()


# -- stale temp files -----------------------------------------------------------------------


STALE = (".AGENT.md.0123456789ab.sidecar-tmp", "daily/.2026-11-21.md.a1b2c3d4e5f6.sidecar-tmp")
KEPT = (
    "AGENT.md",
    ".notes.md",
    "notes.tmp",
    "daily/.2026-11-21.md.tmp",
    "daily/2026-11-21.md",
    ".AGENT.md.sidecar-tmp",  # no random part: not ours
    ".AGENT.md.0123456789ab.sidecar-tmp.orig",
)


def plant(root: Path, outside: Path) -> dict[str, object]:
    """Stale temps and look-alikes below ``root``; return a snapshot of ``outside``."""
    (root / "daily").mkdir(parents=True, exist_ok=True)
    for rel in (*STALE, *KEPT):
        (root / rel).write_bytes(f"content of {rel}\n".encode())
    outside.mkdir()
    victim = outside / ".AGENT.md.fedcba987654.sidecar-tmp"
    victim.write_bytes(b"not the sidecar's\n")
    os.symlink(outside, root / "linked")  # a symlinked directory must not be walked
    os.symlink(victim, root / ".CREW.md.00000000abcd.sidecar-tmp")  # nor a link followed
    return snapshot(outside)


def test_remove_stale_temps_removes_only_its_own(tmp_path: Path) -> None:
    root = tmp_path / "tier"
    outside_before = plant(root, tmp_path / "outside")

    removed = durable.remove_stale_temps(root)

    assert sorted(removed) == sorted(STALE)
    for rel in STALE:
        assert not (root / rel).exists()
    for rel in KEPT:
        assert (root / rel).read_bytes() == f"content of {rel}\n".encode()
    assert snapshot(tmp_path / "outside") == outside_before


def test_temp_names_durable_leaves_are_recognised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write killed after creating its temp (here: rename and cleanup both fail)."""
    (tmp_path / "AGENT.md").write_bytes(OLD)
    fault = Fault("rename", errno.EIO)

    def unlink(*args: Any, **kw: Any) -> None:
        raise oserror(errno.EIO)

    rename = fault.fake_os().rename
    monkeypatch.setattr(durable, "os", FakeOs(rename=rename, unlink=unlink))
    with pytest.raises(OSError):
        durable.write_file(tmp_path, "AGENT.md", lambda old: b"new\n")
    with pytest.raises(OSError):
        durable.write_file(tmp_path, DAY, lambda old: b"new\n")
    monkeypatch.setattr(durable, "os", os)
    left = temps(tmp_path)
    assert len(left) == 2

    assert sorted(durable.remove_stale_temps(tmp_path)) == left
    assert temps(tmp_path) == []
    assert (tmp_path / "AGENT.md").read_bytes() == OLD


async def test_service_start_removes_stale_temps(settings: Settings, tmp_path: Path) -> None:
    agent, crew = settings.agent_dir, settings.crew_dir
    outside_before = plant(agent, tmp_path / "outside")
    (crew / "topics" / ".deploys.md.00ff00ff00ff.sidecar-tmp").write_bytes(b"half a file")
    (crew / "topics" / "deploys.md").write_bytes(b"# Deploys\n")

    svc = MemoryService(settings)
    await svc.start()
    try:
        for rel in STALE:
            assert not (agent / rel).exists(), rel
        for rel in KEPT:
            assert (agent / rel).read_bytes() == f"content of {rel}\n".encode()
        assert temps(crew) == []
        assert (crew / "topics" / "deploys.md").read_bytes() == b"# Deploys\n"
        assert snapshot(tmp_path / "outside") == outside_before
    finally:
        await svc.stop()


# -- path attacks through MemoryService.write -----------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.md").write_bytes(b"secret\n")
    return out


@pytest.mark.parametrize(
    "file",
    [
        "../AGENT.md",
        "daily/../../outside/secret.md",
        "../outside/secret.md",
        "/etc/passwd",
        "/tmp/AGENT.md",
        "daily\\2026-11-21.md",
        "..\\outside\\secret.md",
        "AGENT.md\x00",
        "daily/2026-11-21.md\x00.txt",
        "C:/AGENT.md",
    ],
)
async def test_path_attacks_are_forbidden(
    file: str, service: MemoryService, tmp_path: Path, outside: Path
) -> None:
    before = snapshot(tmp_path)
    for mode in ("append", "replace"):
        with pytest.raises(ApiError) as info:
            await service.notes.write("agent", file, "pwned", mode)
        assert (info.value.status, info.value.error) == (403, "forbidden_path")
    assert snapshot(tmp_path) == before


async def test_absolute_path_into_the_tier_is_forbidden(
    service: MemoryService, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", str(agent_root(service) / "AGENT.md"), "x", "append")
    assert (info.value.status, info.value.error) == (403, "forbidden_path")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("mode", ["append", "replace"])
async def test_symlinked_leaf_is_forbidden(
    mode: str, service: MemoryService, outside: Path
) -> None:
    root = agent_root(service)
    os.symlink(outside / "secret.md", root / "AGENT.md")
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", "AGENT.md", "pwned", mode)
    assert (info.value.status, info.value.error) == (403, "forbidden_path")
    assert (outside / "secret.md").read_bytes() == b"secret\n"
    assert os.readlink(root / "AGENT.md") == str(outside / "secret.md")
    assert temps(root) == []


async def test_dangling_symlinked_leaf_creates_nothing_outside(
    service: MemoryService, outside: Path
) -> None:
    root = agent_root(service)
    os.symlink(outside / "new.md", root / "daily" / "2026-11-21.md")
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", DAY, "pwned", "append")
    assert (info.value.status, info.value.error) == (403, "forbidden_path")
    assert sorted(os.listdir(outside)) == ["secret.md"]


async def test_symlinked_parent_directory_is_forbidden(
    service: MemoryService, outside: Path
) -> None:
    root = agent_root(service)
    (root / "daily").rmdir()
    os.symlink(outside, root / "daily")
    with pytest.raises(ApiError) as info:
        await service.notes.write("agent", DAY, "pwned", "append")
    assert (info.value.status, info.value.error) == (403, "forbidden_path")
    assert sorted(os.listdir(outside)) == ["secret.md"]
    assert (outside / "secret.md").read_bytes() == b"secret\n"


async def test_directory_swapped_for_symlink_mid_write_stays_inside(
    service: MemoryService, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``daily`` becomes a symlink out of the tier after the write opened the directory
    and before it creates its temp file: the write must not follow it."""
    root = agent_root(service)
    real_read = durable._read_current
    swaps = 0

    def swap_then_read(dir_fd: int, name: str) -> tuple[bytes | None, int]:
        nonlocal swaps
        swaps += 1
        (root / "daily").rename(root / "daily.real")
        os.symlink(outside, root / "daily")
        return real_read(dir_fd, name)

    monkeypatch.setattr(durable, "_read_current", swap_then_read)
    try:
        await service.notes.write("agent", DAY, "entry", "append")
    except ApiError as exc:
        assert exc.status in (403, 500), exc.detail
        assert os.listdir(root / "daily.real") == []
    else:  # it landed in the directory it had opened
        assert (root / "daily.real" / "2026-11-21.md").read_bytes() == b"entry\n"
    assert swaps == 1
    assert (root / "daily").is_symlink()
    assert sorted(os.listdir(outside)) == ["secret.md"]
    assert (outside / "secret.md").read_bytes() == b"secret\n"


async def test_leaf_swapped_for_symlink_mid_write_leaves_outside_alone(
    service: MemoryService, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = agent_root(service)
    (root / "AGENT.md").write_bytes(OLD)
    real_read = durable._read_current
    swaps = 0

    def read_then_swap(dir_fd: int, name: str) -> tuple[bytes | None, int]:
        nonlocal swaps
        swaps += 1
        got = real_read(dir_fd, name)
        (root / "AGENT.md").unlink()
        os.symlink(outside / "secret.md", root / "AGENT.md")
        return got

    monkeypatch.setattr(durable, "_read_current", read_then_swap)
    try:
        await service.notes.write("agent", "AGENT.md", "- new", "append")
    except ApiError as exc:
        assert exc.status in (403, 500), exc.detail
    else:  # the link itself was replaced, never written through
        assert not (root / "AGENT.md").is_symlink()
        assert (root / "AGENT.md").read_bytes() == OLD + b"- new\n"
    assert swaps == 1
    assert (outside / "secret.md").read_bytes() == b"secret\n"
    assert sorted(os.listdir(outside)) == ["secret.md"]


# -- concurrency ---------------------------------------------------------------------------


async def test_fifty_concurrent_http_appends_all_land_once(
    client: TestClient, service: MemoryService
) -> None:
    async def append(n: int) -> int:
        body = {"scope": "agent", "file": DAY, "content": f"entry {n}", "mode": "append"}
        resp = await client.post("/memory/write", json=body)
        assert resp.status == 201, await resp.text()
        return (await resp.json())["bytes_written"]

    written = await asyncio.gather(*(append(n) for n in range(50)))

    lines = (agent_root(service) / DAY).read_text().splitlines()
    assert Counter(lines) == Counter(f"entry {n}" for n in range(50))
    assert sum(written) == (agent_root(service) / DAY).stat().st_size
    assert temps(agent_root(service)) == []


async def test_concurrent_service_appends_keep_submission_order(service: MemoryService) -> None:
    await asyncio.gather(
        *(service.notes.write("agent", DAY, f"entry {n}", "append") for n in range(50))
    )
    lines = (agent_root(service) / DAY).read_text().splitlines()
    assert lines == [f"entry {n}" for n in range(50)]


def read_line(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> bytes:
    """One line from a child's unbuffered stdout, or fail after ``timeout`` seconds."""
    assert proc.stdout is not None
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            raise AssertionError("the child process said nothing in time")
        chunk = os.read(proc.stdout.fileno(), 1)
        if not chunk:
            raise AssertionError(f"the child process exited: {line!r}")
        line += chunk
    return line.rstrip(b"\n")


def test_appends_from_two_processes_all_land_once(tmp_path: Path) -> None:
    """Each process reads, appends and renames under the directory's flock; without it,
    one would overwrite the other's appends."""
    count = 150
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writer = [sys.executable, str(REPO / "tests" / "crash_writer.py"), "append", str(tmp_path)]
    pipes: dict[str, Any] = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "bufsize": 0}
    procs = [
        subprocess.Popen([*writer, DAY, tag, str(count)], env=env, **pipes) for tag in ("a", "b")
    ]
    try:
        for proc in procs:
            assert read_line(proc) == b"ready"
        for proc in procs:  # both start together
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        for proc in procs:
            assert read_line(proc, timeout=60) == b"done"
            assert proc.wait(10) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    lines = (tmp_path / DAY).read_text().splitlines()
    assert Counter(lines) == Counter(f"{t} {i}" for t in "ab" for i in range(count))
    for tag in "ab":  # each process's own appends stay in its order
        assert [ln for ln in lines if ln.startswith(tag)] == [f"{tag} {i}" for i in range(count)]
    assert temps(tmp_path) == []


async def test_write_health_checks_every_tier_against_one_configuration(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A settings change mid-check must not yield a verdict that mixes old and new limits."""
    real = write_job.disk_problem
    seen: list[int] = []

    def checking(root: Path, min_free: int) -> str | None:
        seen.append(min_free)
        service.notes.settings = dataclasses.replace(service.settings, min_free_bytes=1 << 62)
        return real(root, min_free)

    monkeypatch.setattr(write_job, "disk_problem", checking)
    assert await service.notes.write_health() == (True, None)
    assert len(seen) == 2 and len(set(seen)) == 1  # both tiers, one limit
    ok, why = await service.notes.write_health()
    assert not ok and (why or "").startswith("agent: only")


async def test_a_write_abandoned_while_queued_writes_nothing_and_spoils_no_later_write(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that gives up (an MCP cancel, a dropped connection) before its write has
    started must not have it land later, nor hand its fate to the next write."""
    release = threading.Event()
    real_sync = indexer.sync_file

    def blocking(store: Any, root: Path, rel: str, *rest: Any) -> Any:
        if rel == "blocker.md":
            release.wait(10)
        return real_sync(store, root, rel, *rest)

    monkeypatch.setattr(indexer, "sync_file", blocking)
    service.indexes.queue.submit(JobKey("agent", FILE, "blocker.md"))
    try:
        first = asyncio.create_task(
            service.notes.write("agent", DAY, "- the abandoned note", "append")
        )
        await eventually(lambda: _queued(service, WRITE), "the first write to queue")
        first.cancel()
        await asyncio.wait([first])
        assert not service.indexes.queue.pending("agent", WRITE)  # withdrawn, not merely orphaned
        second = asyncio.create_task(service.notes.write("agent", DAY, "- the kept note", "append"))
        await eventually(lambda: _queued(service, WRITE), "the second write to queue")
    finally:
        release.set()
    assert (await second)["indexed"] is True
    with pytest.raises(asyncio.CancelledError):
        await first
    assert (agent_root(service) / DAY).read_bytes() == b"- the kept note\n"
    assert await found(service, "abandoned") == []


async def _queued(service: MemoryService, kind: str) -> bool:
    return service.indexes.queue.pending("agent", kind)
