"""The distillation ledger: which daily logs are distilled, and each batch's plan.

``archive/daily/.distilled.jsonl`` in the tier, append-only JSON lines of two kinds:

- ``{"kind": "plan", "job", "at", "days", "sha256", "core_base", "core_unreadable",
  "answer", "cost"}``: a batch's checked answer, written before any of it is applied;
- ``{"kind": "day", "day", "job", "at", "sha256"}``: one a day, once every part of its
  batch is applied.

A plan whose days never followed was cut short by a crash: the next pass applies it
again from the ledger, with no new model call, and every part of it knows whether it
already happened (``distill.py``). A line that does not fit is ignored and reported; a
plan ignored so leaves its days to be distilled afresh.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.disk import jsonl
from sidecar.lifecycle import distill_prompt as dp

LEDGER = "archive/daily/.distilled.jsonl"
MAX_ID_CHARS = 64


@dataclass
class Ledger:
    done: set[str] = field(default_factory=set)  # days distilled
    unfinished: list[dict[str, Any]] = field(default_factory=list)  # plans, in order
    problems: list[str] = field(default_factory=list)


def read(root: Path, core_cap: int) -> Ledger:
    """What the ledger says (empty if there is none yet); OSError or UnsafePath if it
    cannot be read, and then nothing may be distilled: it could be distilled twice."""
    ledger = Ledger()
    plans: dict[str, dict[str, Any]] = {}
    try:
        lines = list(jsonl.read_lines(root, LEDGER))
    except FileNotFoundError:
        return ledger
    for line in lines:
        record = line.record or {}
        why = line.error or _problem(record, core_cap)
        if why is not None:
            ledger.problems.append(f"{LEDGER} line {line.number} ignored: {why}")
        elif record["kind"] == "plan":
            plans[record["job"]] = record
        else:
            ledger.done.add(record["day"])
    ledger.unfinished = [p for p in plans.values() if not set(p["days"]) <= ledger.done]
    return ledger


def _problem(r: dict[str, Any], core_cap: int) -> str | None:
    if r.get("kind") == "day":
        return None if isinstance(r.get("day"), str) else "a day line without a 'day' string"
    if r.get("kind") != "plan":
        return "'kind' is neither plan nor day"
    job, days, sha = r.get("job"), r.get("days"), r.get("sha256")
    if not isinstance(job, str) or not 0 < len(job) <= MAX_ID_CHARS:
        return f"a plan's 'job' must be 1 to {MAX_ID_CHARS} characters"
    if not isinstance(days, list) or not days or not all(isinstance(d, str) for d in days):
        return "a plan's 'days' must be a non-empty list of files"
    if not isinstance(sha, dict) or not all(isinstance(sha.get(d), str) for d in days):
        return "a plan's 'sha256' must name each of its days"
    for name in ("core_base", "core_unreadable"):
        if not isinstance(r.get(name), str | None):
            return f"a plan's {name!r} must be a string or null"
    if not isinstance(r.get("cost", {}), dict) or not isinstance(r.get("excerpted", []), list):
        return "a plan's 'cost' must be an object and its 'excerpted' a list"
    answer = r.get("answer")
    from jsonschema import Draft202012Validator  # on a plan read, not in every idle daemon

    errors = list(Draft202012Validator(dp.schema(core_cap)).iter_errors(answer))
    found = [e.message for e in errors[:1]] or dp.check(answer)
    return f"a plan's answer does not fit the schema ({found[0]})" if found else None


def append(root: Path, *records: dict[str, Any]) -> None:
    """Whole lines appended durably (the folder made if need be)."""
    append_lines(root, LEDGER, *records)


def append_lines(root: Path, rel: str, *records: dict[str, Any]) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    jsonl.append(root, rel, data.encode())
