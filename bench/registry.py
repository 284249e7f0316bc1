"""Every benchmark ``python -m bench`` knows, in the order it runs and prints them.

A benchmark is one module of this package that declares ``NAME`` (what ``--only`` takes),
``DESCRIPTION`` (one line, shown in its table's title when it is skipped or fails) and
``run(ctx: Context) -> BenchResult``. Adding one is that module and its name below; the
shared harness (``bench.harness``) times it, catches its failure, and writes its figures to
the results file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from bench.context import Context
from bench.report import BenchResult

MODULES = (
    "retrieval", "crossval", "latency", "hybrid_speed", "indexing", "cold_start", "freshness",
    "memory", "writes", "crew", "embed_lead", "prompt_block", "dense", "injection",
    "journal_speed", "journal_recall", "learnings", "lifecycle_journal", "facts", "extraction",
    "robustness", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6",
    "hooks", "sessions", "lifecycle", "pg_store", "ui", "pg_failover",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Benchmark:
    name: str
    description: str
    run: Callable[[Context], BenchResult]


def load() -> dict[str, Benchmark]:
    """Each module's benchmark by its ``NAME``; a module missing one of the three names, or
    a name taken twice, is a mistake to fix before anything runs."""
    found: dict[str, Benchmark] = {}
    for module_name in MODULES:
        module = importlib.import_module(f"bench.{module_name}")
        missing = [a for a in ("NAME", "DESCRIPTION", "run") if not hasattr(module, a)]
        if missing:
            raise TypeError(f"bench/{module_name}.py must declare {', '.join(missing)}")
        if module.NAME in found:
            raise ValueError(f"two benchmarks are named {module.NAME!r}")
        found[module.NAME] = Benchmark(module.NAME, module.DESCRIPTION, module.run)
    return found
