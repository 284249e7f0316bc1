"""Direct edits become searchable through real inotify events, with no API call."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sidecar.service import MemoryService
from tests.conftest import eventually


async def found(service: MemoryService, query: str, scope: str = "agent") -> list[str]:
    response = await service.search.search(query, scope, 10)
    return [f"{r.hit.path}:{r.hit.start_line}" for r in response.results]


async def test_shell_append_becomes_searchable(
    service: MemoryService, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    with open(agent / "AGENT.md", "a", encoding="utf-8") as fh:  # echo "..." >> AGENT.md
        fh.write("## Preference\nUser likes the aubergine theme.\n")

    async def visible() -> bool:
        return await found(service, "aubergine") == ["AGENT.md:1"]

    await eventually(visible, what="appended line to be searchable")


async def test_editor_atomic_rename_becomes_searchable(
    service: MemoryService, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    target = agent / "daily" / "2026-11-20.md"
    target.write_text("# Day\nold words only\n")
    await eventually(lambda: _has(service, "old"), what="first version")
    tmp = agent / "daily" / ".2026-11-20.md.swp"
    tmp.write_text("# Day\nfresh cardamom notes\n")
    os.replace(tmp, target)
    await eventually(lambda: _has(service, "cardamom"), what="renamed-in version")
    assert await found(service, "old") == []


async def test_directory_moved_in_and_removed(
    service: MemoryService, tier_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    crew = tier_dirs[1]
    outside = tmp_path / "staging" / "topics"
    outside.mkdir(parents=True)
    (outside / "a1b2.md").write_text("# Operator\nprefers pistachio summaries\n")
    (outside / "nested").mkdir()
    (outside / "nested" / "deep.md").write_text("# Deep\npistachio deep note\n")
    shutil.rmtree(crew / "topics")
    shutil.move(str(outside), str(crew / "topics"))
    await eventually(lambda: _count(service, "pistachio", "crew", 2), "moved-in directory indexed")
    shutil.rmtree(crew / "topics")
    await eventually(lambda: _count(service, "pistachio", "crew", 0), what="directory removal")


async def test_deleted_file_leaves_the_index(
    service: MemoryService, tier_dirs: tuple[Path, Path]
) -> None:
    agent, _ = tier_dirs
    (agent / "daily" / "2026-11-01.md").write_text("ephemeral quince entry\n")
    await eventually(lambda: _has(service, "quince"), what="file indexed")
    (agent / "daily" / "2026-11-01.md").unlink()
    await eventually(lambda: _count(service, "quince", "agent", 0), what="file removal")


async def test_symlinks_and_hidden_dirs_stay_out(
    service: MemoryService, tier_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    agent, _ = tier_dirs
    secret = tmp_path / "secret.md"
    secret.write_text("the launch code is tangerine\n")
    (agent / "link.md").symlink_to(secret)
    (agent / ".git").mkdir()
    (agent / ".git" / "notes.md").write_text("tangerine in a hidden dir\n")
    # A plain file written afterwards proves the events before it were processed.
    (agent / "marker.md").write_text("marker guava\n")
    await eventually(lambda: _has(service, "guava"), what="marker indexed")
    await service.indexes.queue.wait_idle()
    assert await found(service, "tangerine") == []


async def _has(service: MemoryService, word: str) -> bool:
    return bool(await found(service, word))


async def _count(service: MemoryService, word: str, scope: str, n: int) -> bool:
    return len(await found(service, word, scope)) == n
