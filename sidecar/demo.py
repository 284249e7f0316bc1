"""Example memory for ``make run``: a few files an agent and its crew might have written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

_AGENT_MD = """# Agent memory

## User preferences
- Prefers terse commit subjects (at most 70 characters).
- Wants CHANGELOG entries in the same pull request, never as a follow-up.

## Project context
- The API service lives in `services/api`; migrations run with `make migrate`.
"""

_DAILY = """# {day}

## Auth middleware refactor
- Compared option A (session cookies) and option B (signed JWT); chose option B.
- Left a TODO to rotate signing keys monthly.
"""

_CREW_MD = """# Crew memory

## Decisions
### Database
- PostgreSQL 16 for all new databases; driver pgx v5.
- ADR-007 in the repository has the full context.

## Conventions
- Tailwind for styling, never inline styles.
"""

_TOPIC = """# Deployment

## Kubernetes
- Every service ships a Helm chart under `deploy/charts/`.
- Production rollouts happen Tuesday to Thursday only.
"""


def seed(base: Path) -> tuple[Path, Path]:
    """Create ``base/agent`` and ``base/crew`` with example files, keeping existing ones."""
    agent, crew = base / "agent", base / "crew"
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    files = {
        agent / "AGENT.md": _AGENT_MD,
        agent / "daily" / f"{yesterday}.md": _DAILY.format(day=yesterday),
        crew / "CREW.md": _CREW_MD,
        crew / "topics" / "deployment.md": _TOPIC,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(text, encoding="utf-8")
    return agent, crew
