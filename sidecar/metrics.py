"""The daemon's Prometheus metrics that code records as things happen.

Counters and histograms live here, in one registry of their own, so any layer
can record into them without importing the layers above it. Figures that are a
reading of current state (queue depth, embedder state, free disk) are not kept
here: ``api/scrape.py`` reads them from the service at scrape time, so they
can never go stale.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

P = ParamSpec("P")
T = TypeVar("T")

# A ``_created`` series beside every counter doubles the output for a figure
# (the process start) that Prometheus already has from its own scrape.
disable_created_metrics()
REGISTRY = CollectorRegistry(auto_describe=True)

# Most calls take milliseconds; a slow disk or a cold embedder takes seconds.
_LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
_BUILD_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)

HTTP_REQUESTS = Counter(
    "sidecar_http_requests",
    "HTTP requests answered, by route template, method and status code "
    "(499: the client hung up first).",
    ["route", "method", "status"],
    registry=REGISTRY,
)
OPERATION_SECONDS = Histogram(
    "sidecar_operation_duration_seconds",
    "Time to answer a memory operation (write, search, read, context), from any transport.",
    ["operation"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
FSYNC_SECONDS = Histogram(
    "sidecar_fsync_duration_seconds",
    "Time one fsync of a memory file, journal or folder took.",
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
INDEX_BUILDS = Counter(
    "sidecar_index_builds",
    "Full index builds and rebuilds of a tier, by why they ran (cold, reindex, heal).",
    ["tier", "kind"],
    registry=REGISTRY,
)
INDEX_BUILD_SECONDS = Histogram(
    "sidecar_index_build_duration_seconds",
    "Time a full index build of a tier took, until every file was searchable.",
    ["tier"],
    buckets=_BUILD_BUCKETS,
    registry=REGISTRY,
)
REJECTED_INPUTS = Counter(
    "sidecar_rejected_inputs",
    "Requests refused for their input (status 4xx), by the error code given to the client.",
    ["reason"],
    registry=REGISTRY,
)
INJECTION_BLOCKS = Counter(
    "sidecar_injection_blocks",
    "Text withheld or refused because the injection scanner flagged it, by category.",
    ["category"],
    registry=REGISTRY,
)
LIFECYCLE_RUNS = Counter(
    "sidecar_lifecycle_runs",
    "Maintenance steps run on a tier (daily logs, journal), by outcome (ok, failed).",
    ["tier", "step", "outcome"],
    registry=REGISTRY,
)
LIFECYCLE_LAST_RUN = Gauge(
    "sidecar_lifecycle_last_run_timestamp_seconds",
    "When the last maintenance pass of a tier ended (Unix time).",
    ["tier"],
    registry=REGISTRY,
)
LIFECYCLE_BYTES = Gauge(
    "sidecar_lifecycle_bytes",
    "Bytes of each kind of history in a tier after its last maintenance pass, active "
    "(counted against the tier's caps) or archived (against the archive's).",
    ["tier", "kind", "state"],
    registry=REGISTRY,
)


def timed(operation: str) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Time every call of an async method into the operation histogram, failed ones too:
    a request that times out slowly is exactly what an operator wants to see."""
    histogram = OPERATION_SECONDS.labels(operation=operation)

    def wrap(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(fn)
        async def timed_call(*args: P.args, **kwargs: P.kwargs) -> T:
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - started)

        return timed_call

    return wrap
