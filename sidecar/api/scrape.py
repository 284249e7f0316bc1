"""``GET /metrics``: Prometheus text format, loopback only like the rest of the API.

Two kinds of figure. Events (requests, latencies, fsyncs, builds, rejections,
injection blocks) are counted where they happen, into ``sidecar.metrics``.
States (queue depth, the oldest job's age, embedder state and lag, lead
reachability, free disk) are read from the service at scrape time, on the event
loop that owns them, so a scrape never shows a stale or half-updated reading.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sidecar.metrics import HTTP_REQUESTS, REGISTRY
from sidecar.service import MemoryService
from sidecar.web import Handler

INDEX_STATES = ("ready", "indexing", "rebuilding")


@dataclass(slots=True)
class Reading:
    """The service's state at one scrape, by tier."""

    queue_depth: dict[str, int] = field(default_factory=dict)
    oldest_job_s: dict[str, float] = field(default_factory=dict)
    index_state: dict[str, str] = field(default_factory=dict)
    build_done: dict[str, tuple[int, int]] = field(default_factory=dict)  # files done, total
    embedding_lag: dict[str, int] = field(default_factory=dict)
    disk_free: dict[str, int] = field(default_factory=dict)
    embedder_up: int = 0
    lead_reachable: int | None = None  # members only
    degraded: int = 0


class _ReadingCollector(Collector):
    def __init__(self, reading: Reading) -> None:
        self.reading = reading

    def collect(self) -> Iterator[Metric]:
        r = self.reading
        yield _by_tier(
            "sidecar_reindex_queue_depth", "Index jobs waiting or running.", r.queue_depth
        )
        yield _by_tier(
            "sidecar_reindex_queue_oldest_job_age_seconds",
            "How long the oldest waiting index job has waited (0 when none waits).",
            r.oldest_job_s,
        )
        states = GaugeMetricFamily(
            "sidecar_index_state",
            "1 for the state each tier's index is in (ready, indexing, rebuilding).",
            labels=["tier", "state"],
        )
        for tier, current in r.index_state.items():
            for state in INDEX_STATES:
                states.add_metric([tier, state], 1.0 if state == current else 0.0)
        yield states
        done = GaugeMetricFamily(
            "sidecar_index_build_files",
            "Files indexed so far by the build in progress, and its total.",
            labels=["tier", "count"],
        )
        for tier, (files_done, files_total) in r.build_done.items():
            done.add_metric([tier, "done"], files_done)
            done.add_metric([tier, "total"], files_total)
        yield done
        yield _by_tier(
            "sidecar_embedding_lag_chunks",
            "Chunks searchable by their words but not yet by meaning (no vector yet).",
            r.embedding_lag,
        )
        yield _by_tier("sidecar_disk_free_bytes", "Free space on each tier's disk.", r.disk_free)
        yield GaugeMetricFamily(
            "sidecar_embedder_up",
            "1 while the embedder is loaded and working (hybrid search), else 0 (sparse only).",
            value=r.embedder_up,
        )
        yield GaugeMetricFamily(
            "sidecar_degraded", "1 while /healthz says degraded, else 0.", value=r.degraded
        )
        if r.lead_reachable is not None:
            yield GaugeMetricFamily(
                "sidecar_lead_reachable",
                "1 while this member's crew lead answers, else 0.",
                value=r.lead_reachable,
            )


def _by_tier(name: str, documentation: str, values: dict[str, float] | dict[str, int]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=["tier"])
    for tier, value in values.items():
        family.add_metric([tier], float(value))
    return family


async def read_state(service: MemoryService) -> Reading:
    """Everything the gauges show, read on the event loop (free disk on a thread)."""
    reading = Reading()
    indexes = service.indexes
    reasons: list[str] = []
    for name, info in indexes.health(reasons).items():
        reading.queue_depth[name] = info["queue_depth"]
        reading.index_state[name] = info["state"]
        reading.oldest_job_s[name] = indexes.queue.oldest_age(name) or 0.0
        progress = indexes.tiers[name].progress
        if progress is not None and progress.state == "building":
            reading.build_done[name] = (progress.files_done, progress.files_total)
    vectors = service.embeddings.vectors
    if vectors is not None:
        for name, tier in vectors.tiers.items():  # exact, as /memory/status counts it
            try:
                reading.embedding_lag[name] = await service.indexes.read(tier.lag)
            except Exception:  # the store is out of reach: the last count, not a failed scrape
                reading.embedding_lag[name] = tier.pending
    reading.embedder_up = int(service.embeddings.retrieval() == "hybrid")
    if service.lead is not None:
        reading.lead_reachable = int(bool(service.lead.reachable))
    reading.degraded = int(bool(reasons) or reading.lead_reachable == 0)
    roots = {name: state.tier.root for name, state in indexes.tiers.items()}
    reading.disk_free = await asyncio.to_thread(_free_bytes, roots)
    return reading


def _free_bytes(roots: dict[str, Path]) -> dict[str, int]:
    free = {}
    for name, root in roots.items():
        try:
            free[name] = shutil.disk_usage(root).free
        except OSError:  # the folder vanished: no figure rather than a wrong one
            continue
    return free


def render(reading: Reading) -> bytes:
    state = CollectorRegistry(auto_describe=False)
    state.register(_ReadingCollector(reading))
    return generate_latest(REGISTRY) + generate_latest(state)


@web.middleware
async def count_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count every answer by route template, so ids in paths stay one series."""
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except asyncio.CancelledError:
        status = 499  # the client hung up before the answer was done (nginx's code for it)
        raise
    finally:
        HTTP_REQUESTS.labels(route=route, method=request.method, status=str(status)).inc()


def add_routes(app: web.Application, service: MemoryService) -> None:
    async def metrics(request: web.Request) -> web.Response:
        body = render(await read_state(service))
        response = web.Response(body=body)
        response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
        response.charset = "utf-8"
        return response

    app.router.add_get("/metrics", metrics)
