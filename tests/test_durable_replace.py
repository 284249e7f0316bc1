"""A durable replace never overwrites bytes it did not read (issue 29, item 7).

The other writer is a real separate process (``sh -c 'printf ... >>'``, as an editor
or a script would append) run at the one moment that matters: while the replace is
building, after it read the file and before its rename. No timing is involved: the
build itself starts the writer and waits for it to finish.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sidecar.disk import durable
from sidecar.notes.files import CORE, MemoryFile
from sidecar.service import MemoryService


def hand_append(path: Path, line: str) -> None:
    """Append a line the way a person or another program would: no lock, no rename."""
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$1" >> "$2"', "sh", line, str(path)], check=True)


def test_a_change_made_while_building_is_kept_and_built_on(tmp_path: Path) -> None:
    target = tmp_path / "AGENT.md"
    target.write_bytes(b"# Agent\n")
    seen: list[bytes | None] = []
    discarded: list[int] = []

    def build(current: bytes | None) -> bytes:
        seen.append(current)
        if len(seen) == 1:
            hand_append(target, "- appended by hand")
        return (current or b"").replace(b"# Agent", b"# Agent notes")

    outcome = durable.write_file(tmp_path, "AGENT.md", build, discarded=lambda: discarded.append(1))

    assert seen == [b"# Agent\n", b"# Agent\n- appended by hand\n"]
    assert discarded == [1]
    assert target.read_bytes() == b"# Agent notes\n- appended by hand\n"
    assert outcome.old == b"# Agent\n- appended by hand\n"
    assert not list(tmp_path.glob(f"*{durable.TMP_SUFFIX}"))


def test_a_file_created_while_building_is_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "AGENT.md"
    calls: list[bytes | None] = []

    def build(current: bytes | None) -> bytes:
        calls.append(current)
        if len(calls) == 1:
            hand_append(target, "- made by hand")
        return (current or b"") + b"- ours\n"

    durable.write_file(tmp_path, "AGENT.md", build)
    assert target.read_bytes() == b"- made by hand\n- ours\n"


def test_a_file_that_never_holds_still_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "MAX_ATTEMPTS", 3)
    target = tmp_path / "AGENT.md"
    target.write_bytes(b"# Agent\n")
    calls = 0

    def build(current: bytes | None) -> bytes:
        nonlocal calls
        calls += 1
        hand_append(target, f"- edit {calls}")
        return b"replaced\n"

    with pytest.raises(durable.KeptChanging, match="kept changing"):
        durable.write_file(tmp_path, "AGENT.md", build)
    assert calls == 3
    assert target.read_bytes() == b"# Agent\n- edit 1\n- edit 2\n- edit 3\n"
    assert not list(tmp_path.glob(f"*{durable.TMP_SUFFIX}"))


async def test_the_index_holds_the_bytes_that_were_placed(service: MemoryService) -> None:
    """Notes.commit stages the index update while the write syncs: a build that is
    dropped must not leave its bytes in the index, and the rebuilt ones must be there."""
    root = service.indexes.tiers["agent"].tier.root
    target = root / "AGENT.md"
    target.write_bytes(b"# Agent\n- the kettle is blue\n")
    calls = 0

    def build(current: bytes | None) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 1:
            hand_append(target, "- the teapot is green")
        return (current or b"").replace(b"blue", b"orange")

    done, _ = await service.notes.commit(MemoryFile("agent", "AGENT.md", CORE), build)

    assert calls == 2
    assert done.index_error is None
    assert target.read_bytes() == b"# Agent\n- the kettle is orange\n- the teapot is green\n"
    found = await service.search.search("teapot", "agent", 10, "sparse")
    assert [r.hit.path for r in found.results] == ["AGENT.md"]
    state = service.indexes.tiers["agent"].store.file_state("AGENT.md")
    assert state is not None and state.size == target.stat().st_size
