"""The memory block without the daemon: built from the tiers' files, so that a sidecar
that is down never leaves an agent without its memory.

It holds what the files hold (both tiers' core and daily notes, the standing directives
in their learnings, the operator's model), scanned and laid out by the same functions
the daemon uses; it has no search hits, recalled events or facts, which need the
daemon's indexes. Its first line says it was built offline: memory text cannot forge
that line, since the block shows any bracketed capitals from memory in parentheses.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from sidecar.context import sources
from sidecar.context.block import (
    DEFAULT_BUDGET,
    MAX_BUDGET,
    MIN_BUDGET,
    MemoryBlock,
    assemble,
)
from sidecar.errors import ApiError
from sidecar.learnings.standing import read_standing
from sidecar.operators.identity import check_id

# Where ``sidecar serve`` keeps the tiers unless told otherwise (its --agent-dir and
# --crew-dir defaults, read from the same variables).
AGENT_DIR = "~/.memory"
CREW_DIR = "/crew/shared/.memory"
NOTICE = (
    "[MEMORY OFFLINE] Built from the memory files without the sidecar daemon: no search "
    "hits, recalled events or facts, and the memory tools fail while the daemon is down.\n"
)


def tier_dirs() -> tuple[Path, Path]:
    """The agent and crew tier roots the daemon would use (``SIDECAR_AGENT_DIR``,
    ``SIDECAR_CREW_DIR``, else its defaults)."""
    agent = os.environ.get("SIDECAR_AGENT_DIR") or AGENT_DIR
    crew = os.environ.get("SIDECAR_CREW_DIR") or CREW_DIR
    return Path(agent).expanduser(), Path(crew).expanduser()


def build(
    agent_dir: Path,
    crew_dir: Path,
    budget: int = DEFAULT_BUDGET,
    user_id: str | None = None,
    workspace_id: str | None = None,
    problems: list[str] | None = None,
) -> MemoryBlock:
    """The block from the files, within ``budget`` characters, notice included; what did
    not parse in the learnings files goes to ``problems`` (the entries that did are shown).

    Raises ValueError for a budget out of range or an operator id the daemon would
    refuse, with a sentence the caller can show."""
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise ValueError(f"the budget must be from {MIN_BUDGET} to {MAX_BUDGET} characters")
    if user_id and workspace_id is None:
        raise ValueError("a user id needs a workspace id: the operator model is kept per "
                         "user and workspace")  # fmt: skip
    for name, value in (("user_id", user_id), ("workspace_id", workspace_id)):
        if value is not None:
            try:
                check_id(name, value)
            except ApiError as exc:
                raise ValueError(exc.detail) from None
    today = datetime.now(UTC).date()
    standing = []
    for tier, root in (("agent", agent_dir), ("crew", crew_dir)):
        wrong: list[str] = []
        standing += [{**meta, "tier": tier} for meta in read_standing(root, wrong)]
        if problems is not None:
            problems += [f"{tier} {line}" for line in wrong]
    out = assemble(
        sources.agent_sections(agent_dir, today),
        sources.crew_sections(crew_dir, today),
        sources.operator_sections(crew_dir, user_id, workspace_id),
        [],
        budget - len(NOTICE),
        institutional=[sources.learning_section(e) for e in standing],
    )
    return MemoryBlock(budget, NOTICE + out.text, out.sections)
