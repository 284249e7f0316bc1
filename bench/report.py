"""Figures, their targets, and the tables the suite prints.

A benchmark is a measurement, not a test: every figure is printed, and a figure
that has a target also says whether the target is met.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

_STARTED = time.monotonic()


def progress(bench: str, message: str) -> None:
    """One progress line on stderr, so stdout holds only the tables."""
    elapsed = time.monotonic() - _STARTED
    print(f"[{elapsed:6.1f}s] {bench}: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Target:
    op: str  # "<=" or ">="
    limit: float
    label: str  # how the target is shown, e.g. "<= 300 ms"

    def met(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit


def at_most(limit: float, label: str) -> Target:
    return Target("<=", limit, label)


def at_least(limit: float, label: str) -> Target:
    return Target(">=", limit, label)


@dataclass(slots=True)
class Figure:
    label: str
    value: float | None  # None when the measurement could not be taken
    unit: str = ""
    digits: int = 2
    target: Target | None = None
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None or self.value is None:
            return None
        return self.target.met(self.value)

    def shown(self) -> str:
        if self.value is None:
            return "n/a"
        text = f"{self.value:,.{self.digits}f}"
        return f"{text} {self.unit}" if self.unit else text

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "value": self.value,
            "unit": self.unit,
            "target": self.target.label if self.target else None,
            "met": self.met,
            "note": self.note,
        }


@dataclass(slots=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "headers": self.headers, "rows": self.rows}


@dataclass(slots=True)
class BenchResult:
    name: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # JSON only
    seconds: float = 0.0
    error: str | None = None
    skipped: str | None = None  # why it did not run (its data is absent); not a failure

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "seconds": round(self.seconds, 2),
            "error": self.error,
            "skipped": self.skipped,
            "figures": [f.to_json() for f in self.figures],
            "tables": [t.to_json() for t in self.tables],
            "notes": self.notes,
            "details": self.details,
        }


def _status(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "NOT MET")


def render_grid(headers: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-align the first column, right-align the rest."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        parts = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return (indent + "  ".join(parts)).rstrip()

    rule = indent + "  ".join("-" * w for w in widths)
    return [line(headers), rule, *(line(r) for r in rows)]


def render(result: BenchResult) -> str:
    if result.skipped:
        return f"== {result.name}: skipped: {result.skipped} =="
    out = [f"== {result.name}: {result.title}  ({result.seconds:.1f} s) =="]
    if result.figures:
        rows = [
            [f.label, f.shown(), f.target.label if f.target else "", _status(f.met), f.note]
            for f in result.figures
        ]
        out += render_grid(["figure", "value", "target", "status", "note"], rows)
    for table in result.tables:
        out += ["", f"  {table.title}", *render_grid(table.headers, table.rows)]
    out += [f"  * {n}" for n in result.notes]
    if result.error:
        out.append(f"  !! benchmark failed: {result.error}")
    return "\n".join(out)


def render_summary(results: list[BenchResult]) -> str:
    rows = [
        [f"{r.name}: {f.label}", f.shown(), f.target.label, _status(f.met)]
        for r in results
        for f in r.figures
        if f.target is not None
    ]
    rows += [[f"{r.name}: (benchmark failed)", "n/a", "", "ERROR"] for r in results if r.error]
    rows += [[f"{r.name}: (skipped, data absent)", "n/a", "", "SKIPPED"]
             for r in results if r.skipped]  # fmt: skip
    lines = ["== summary of targets =="]
    lines += render_grid(["figure", "value", "target", "status"], rows) if rows else ["  (none)"]
    return "\n".join(lines)
