"""A small real index of LoCoMo-style daily transcripts, for ranking tests."""

from __future__ import annotations

from pathlib import Path

from sidecar.index import indexer
from sidecar.index.store import IndexStore
from sidecar.stores import open_store


def transcript_store(tmp_path: Path, days: dict[str, str]) -> IndexStore:
    """An agent-tier index of ``daily/<day>.md`` files, plus ten days of unrelated talk so
    the words the tested files share are rare enough to weigh."""
    daily = tmp_path / "memory" / "daily"
    daily.mkdir(parents=True)
    for day, text in days.items():
        (daily / f"{day}.md").write_text(text)
    for day in range(10, 20):
        (daily / f"2023-07-{day}.md").write_text(f"## Talk {day}\nCaroline: Pottery class {day}.\n")
    store = open_store(tmp_path / "index.sqlite", "agent")
    store.replace_all(indexer.load_tree(tmp_path / "memory", 400))
    return store


def files(results: list) -> list[str]:
    """The paths of ranked results, in order."""
    return [r.hit.path for r in results]
