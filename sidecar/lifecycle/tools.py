"""memory.maintain: archive old history now (or, with dry_run, say what would go)."""

from __future__ import annotations

from typing import Any

from sidecar.lifecycle import ops
from sidecar.mcp_results import answer, tool

MAINTAIN = "memory.maintain"


def summary(name: str, tier: dict[str, Any], dry_run: bool) -> str:
    """One tier's pass in a line: what the daily step moved, and the bytes it left."""
    daily = tier["steps"].get("daily", {})
    if "error" in daily:
        return f"{name}: daily logs: failed: {daily['error']}"
    moved = sum(daily.get(k, 0) for k in ("archived", "replaced", "merged"))
    verb = "would archive" if dry_run else "archived"
    what = f"{daily.get('due', 0)} daily log(s) due" if dry_run else f"{moved} daily log(s)"
    line = (f"{name}: {verb} {what} older than {daily.get('older_than')}; active "
            f"{tier['active_bytes_before']} -> {tier['active_bytes_after']} bytes, archived "
            f"{tier['archived_bytes']} bytes")  # fmt: skip
    distil = daily.get("distillation")
    if dry_run and isinstance(distil, dict) and "days_pending" in distil:
        line += (f"; would distil {distil['next_job_days']} of {distil['days_pending']} "
                 "day(s) not yet distilled")  # fmt: skip
    return line


def render(body: dict[str, Any], args: dict[str, Any]) -> str:
    lines = [summary(n, t, body["dry_run"]) for n, t in body["tiers"].items()]
    for name, tier in body["tiers"].items():
        for step, result in tier["steps"].items():
            lines += [f"{name}: {step}: {p}" for p in result.get("problems", [])]
    return "\n".join(lines) or "no tier is maintained here"


TOOLS = (
    tool(
        MAINTAIN,
        "Archive old history now",
        "Run memory maintenance now: daily logs past the retention window move to "
        "archive/daily/ (still readable and searchable), freeing room in the tier. Writes "
        "that hit the tier's cap do this by themselves; dry_run answers what would move.",
        ops.MAINTAIN.schema(),
        answer(ops.MAINTAIN, render),
        "memory sidecar unavailable — no maintenance ran",
        writes=True,
        idempotent=True,
    ),
)
