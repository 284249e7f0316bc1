"""Latency samples and their percentiles, standard library only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def percentile(samples: Sequence[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * pct / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Latency:
    """Percentiles of a list of durations, in milliseconds."""

    n: int
    p50: float
    p90: float
    p99: float
    mean: float
    max: float

    @classmethod
    def of_seconds(cls, samples: Sequence[float]) -> Latency:
        ms = [s * 1000.0 for s in samples]
        if not ms:
            return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan)
        return cls(
            n=len(ms),
            p50=percentile(ms, 50),
            p90=percentile(ms, 90),
            p99=percentile(ms, 99),
            mean=sum(ms) / len(ms),
            max=max(ms),
        )

    def row(self, label: str) -> list[str]:
        return [
            label,
            str(self.n),
            *(f"{v:.2f}" for v in (self.p50, self.p90, self.p99, self.mean, self.max)),
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "p50_ms": round(self.p50, 4),
            "p90_ms": round(self.p90, 4),
            "p99_ms": round(self.p99, 4),
            "mean_ms": round(self.mean, 4),
            "max_ms": round(self.max, 4),
        }


LATENCY_HEADERS = ["", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms", "max ms"]
