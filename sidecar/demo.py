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

_LEARNINGS = """---
id: 5b0c6f1e-2d4a-4f7e-9a51-0c3e8d7b2a10
type: corrective
domain: task
importance: 0.8
reinforcement_count: 3
last_reinforced: '{day}'
status: active
---
The staging deploy fails with a TLS handshake error unless the VPN is up: run
`vpn up staging` first.

---
id: 9e4f2a7c-6b1d-4c3e-8f20-5d9a1b7e3c44
type: procedural
domain: task
importance: 0.5
reinforcement_count: 0
last_reinforced: '{day}'
status: active
---
Run `make migrate` from `services/api` after pulling a branch that adds migrations.
"""

_CREW_LEARNINGS = """---
id: 1f7d3b9a-4e2c-4a8b-b6d1-7c0e9f2a5b38
type: directive
domain: team
importance: 0.9
reinforcement_count: 5
last_reinforced: '{day}'
status: active
institutional: true
---
Never force-push to main: the release bot rebuilds from it.
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
        agent / "learnings" / "deploys.md": _LEARNINGS.format(day=yesterday),
        crew / "learnings" / "git.md": _CREW_LEARNINGS.format(day=yesterday),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(text, encoding="utf-8")
    return agent, crew
