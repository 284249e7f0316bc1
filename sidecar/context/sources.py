"""Where the memory block's sections come from: the tiers' core and daily files and the
operator's model, read as they are on disk. The daemon and a block built without it
(``sidecar.context.offline``) read them with the same functions."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

from sidecar.context.block import Section
from sidecar.disk.tiers import decode_text, read_confined
from sidecar.operators.identity import model_paths

_DAILY = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")


def _read(root: Path, rel: str) -> str | None:
    got = read_confined(root, rel)
    return decode_text(got[0]).strip("\n") if got else None


def _dailies(root: Path) -> list[str]:
    try:
        return sorted((p.name for p in (root / "daily").iterdir() if _DAILY.match(p.name)),
                      reverse=True)  # fmt: skip
    except (FileNotFoundError, NotADirectoryError):
        return []


def _daily_sections(root: Path, today: date, kind: str, memory_exists: bool) -> list[Section]:
    """Today's log, then the most recent earlier one; say so when today's is missing."""
    name = f"{today.isoformat()}.md"
    out: list[Section] = []
    text = _read(root, f"daily/{name}")
    if text is not None:
        out.append(Section(f"daily/{name}", f"{kind}: {today.isoformat()} (today)", text))
    elif memory_exists:
        out.append(Section(f"daily/{name}", f"{kind}: {today.isoformat()} (today)",
                           "(nothing logged yet today)"))  # fmt: skip
    earlier = next((d for d in _dailies(root) if d < name), None)
    if earlier is not None:
        body = _read(root, f"daily/{earlier}")
        if body is not None:
            out.append(Section(f"daily/{earlier}", f"{kind}: {earlier[:-3]}", body))
    return out


def agent_sections(root: Path, today: date) -> list[Section]:
    core = _read(root, "AGENT.md")
    sections = [Section("AGENT.md", "AGENT.md (long-term memory)", core)] if core else []
    sections += _daily_sections(root, today, "Daily log", bool(core) or bool(_dailies(root)))
    if not sections:
        sections.append(Section("AGENT.md", "AGENT.md (long-term memory)", "(no memory yet)"))
    return sections


def crew_sections(root: Path, today: date) -> list[Section]:
    core = _read(root, "CREW.md")
    sections = [Section("CREW.md", "CREW.md (crew-wide knowledge)", core)] if core else []
    return sections + _daily_sections(root, today, "Crew daily log", bool(sections))


def operator_sections(crew_root: Path, user_id: str | None, workspace_id: str | None
                      ) -> list[Section]:  # fmt: skip
    """The opener's own model, under its name or the one it had before the secret."""
    if not user_id or workspace_id is None:
        return []
    for rel in model_paths(crew_root, user_id, workspace_id):
        body = _read(crew_root, rel)
        if body:
            return [Section(rel, "how this operator likes to work", body)]
    return []


def learning_section(entry: dict[str, Any]) -> Section:
    """A learning as the block shows it, whether the index or the files gave it."""
    where = f"{entry['tier']} {entry['type']} learning, {entry['file']}"
    return Section(f"learnings:{entry['id']}", where, entry["text"])
