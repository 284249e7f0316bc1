"""``sidecar doctor``: what a running daemon retrieves with, what it lacks, and why."""

from __future__ import annotations

import argparse
import urllib.error
import urllib.request

from sidecar.daemon_client import client_command, error_detail, get_json, unreachable
from sidecar.retrieval.embedders.factory import HOW_TO_ENABLE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(sub, "doctor", cmd_doctor, "report retrieval mode, model and pending "
                       "embeddings; exit 1 if degraded", json_help=None)  # fmt: skip
    p.add_argument("--metrics", action="store_true",
                   help="also list every metric /metrics serves, with its meaning")  # fmt: skip


def cmd_doctor(args: argparse.Namespace) -> int:
    """Exit 0 only when the daemon is healthy and hybrid; 1 when anything is degraded."""
    base = args.url.rstrip("/")
    try:
        health = get_json(f"{base}/healthz")
    except urllib.error.HTTPError as exc:  # something answered, but refused us
        print(f"sidecar at {base}: answered HTTP {exc.code}: {error_detail(exc)}")
        return 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"sidecar: {unreachable(base, getattr(exc, 'reason', exc))}")
        return 1
    retrieval = health.get("retrieval", "sparse-only")
    embedder = health.get("embedder") or {}
    print(f"sidecar at {base}: {health.get('status')} (role {health.get('role')})")
    print(f"retrieval: {retrieval}")
    print(f"model: {embedder.get('model') or 'none'}")
    print(f"episodic: {health.get('episodic', 'sparse-only')}")
    for key, what in (("consolidation", "episodes into facts"),
                      ("extraction", "ended sessions into learnings")):  # fmt: skip
        part = health.get(key) or {}
        detail = part.get("model") or part.get("reason") or ""
        print(f"{key} ({what}): {part.get('state', 'off')}" + (f", {detail}" if detail else ""))
    for tier in health.get("tiers", {}):
        try:
            status = get_json(f"{base}/memory/status?scope={tier}")
        except (urllib.error.URLError, OSError, ValueError):
            continue
        print(
            f"{tier}: {status.get('total_chunks')} chunks, "
            f"{status.get('pending', 0)} waiting for embeddings"
        )
    for reason in health.get("reasons", []):
        print(f"degraded: {reason}")
    print(f"metrics: Prometheus text format at {base}/metrics (loopback only; scrape it from "
          "inside the container, e.g. an agent or node exporter sidecar)")  # fmt: skip
    if args.metrics:
        _list_metrics(base)
    if retrieval != "hybrid":
        why = embedder.get("error") or embedder.get("reason")
        if why:
            print(f"why sparse-only: {why}")
        print(HOW_TO_ENABLE)
    return 0 if health.get("status") == "ok" and retrieval == "hybrid" else 1


def _list_metrics(base: str) -> None:
    """Every metric family the daemon serves, with its HELP line: read live, so the list
    cannot drift from what a scrape gets."""
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
            text = resp.read().decode("utf-8")
    except (urllib.error.URLError, OSError) as exc:
        print(f"metrics: unreadable ({getattr(exc, 'reason', exc)})")
        return
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        name = family.name + ("_total" if family.type == "counter" else "")
        print(f"  {name} ({family.type}): {family.documentation}")
