"""The journal's five health metrics, computed when asked (and snapshotted daily).

Each metric is 0-100, or ``None`` when there is nothing to measure it on (no
events, no vectors, no recall yet); the score is the weighted mean of those that
have a value, so an empty journal is not "red" and a sparse-only one is not
"green". Definitions (also in the README):

- freshness: ``100 x max(0, 1 - median age in days / 180)`` over events still in
  force (not superseded, not expired).
- coverage: embeddable events with a vector for the current model, as a percentage
  of embeddable events. Without an embedder it is 0 whenever any event should
  have a vector: sparse-only recall is a degraded state.
- coherence: ``100 x mean over embedded events of the cosine to their nearest other
  embedded event`` (the most recent ``SAMPLE`` events): how tightly events group.
- efficiency: ``100 x mean cosine of the hits returned`` by the last ``RECENT``
  recalls that had a query vector: whether recall returns close matches or noise.
- reachability: embedded events with at least one relation (either direction), as a
  percentage of embedded events.
"""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sidecar.journal.index import Filters

if TYPE_CHECKING:
    from sidecar.journal.tier import TierJournal

WEIGHTS = {"freshness": 25, "coverage": 25, "coherence": 20, "efficiency": 15, "reachability": 15}
SAMPLE = 2000
RECENT = 200
HISTORY_DAYS = 30


def band(score: float | None) -> str:
    if score is None:
        return "no data"
    return "red" if score < 50 else "yellow" if score < 75 else "green"


class RecallCosines:
    """Mean cosine of each recent recall's hits, for the efficiency metric."""

    def __init__(self) -> None:
        self.recent: deque[float] = deque(maxlen=RECENT)

    def add(self, cosines: list[float]) -> None:
        if cosines:
            self.recent.append(sum(cosines) / len(cosines))


def _freshness(tj: TierJournal, now: float) -> tuple[float | None, dict[str, Any]]:
    assert tj.index is not None
    where, args = Filters().sql(now)
    conn = tj.index.reader()
    (count,) = conn.execute(f"SELECT count(*) FROM events e WHERE {where}", args).fetchone()
    if not count:
        return None, {"events": 0, "median_age_days": None}
    (median_ts,) = conn.execute(
        f"SELECT e.ts FROM events e WHERE {where} ORDER BY e.ts LIMIT 1 OFFSET ?",
        [*args, count // 2],
    ).fetchone()
    days = max(0.0, now - median_ts) / 86400.0
    return 100.0 * max(0.0, 1.0 - days / 180.0), {
        "events": count,
        "median_age_days": round(days, 2),
    }


def compute(
    tj: TierJournal, cosines: RecallCosines, embedder_model: str | None, now: float
) -> dict[str, Any]:
    """Runs on a reader thread."""
    assert tj.index is not None
    metrics: dict[str, dict[str, Any]] = {}
    value, detail = _freshness(tj, now)
    metrics["freshness"] = {"value": value, **detail}
    conn = tj.index.reader()
    (embeddable,) = conn.execute("SELECT count(*) FROM events WHERE embeddable = 1").fetchone()
    vectors = tj.vectors if tj.vectors is not None and tj.vectors.model == embedder_model else None
    embedded = len(vectors) if vectors is not None else 0
    metrics["coverage"] = {
        "value": None if not embeddable else 100.0 * min(embedded, embeddable) / embeddable,
        "embeddable": embeddable,
        "embedded": embedded,
        "model": embedder_model,
    }
    coherence = None
    if vectors is not None and embedded >= 2:
        import numpy as np  # only with vectors: a sparse-only daemon never loads it

        _, matrix = vectors.matrix()
        sample = matrix[-SAMPLE:]
        sims = sample @ sample.T
        np.fill_diagonal(sims, -1.0)
        coherence = 100.0 * float(np.clip(sims.max(axis=1), 0.0, 1.0).mean())
    metrics["coherence"] = {"value": coherence, "sampled": min(embedded, SAMPLE)}
    recent = list(cosines.recent)
    metrics["efficiency"] = {
        "value": 100.0 * max(0.0, sum(recent) / len(recent)) if recent else None,
        "recalls": len(recent),
    }
    reach = None
    if vectors is not None and embedded:
        (linked,) = conn.execute(
            "SELECT count(*) FROM vectors v WHERE v.model = ? AND EXISTS "
            "(SELECT 1 FROM relations r WHERE r.src = v.id OR r.dst = v.id)",
            (vectors.model,),
        ).fetchone()
        reach = 100.0 * min(linked, embedded) / embedded
    metrics["reachability"] = {"value": reach, "embedded": embedded}
    counted = {n: m["value"] for n, m in metrics.items() if m["value"] is not None}
    weight = sum(WEIGHTS[n] for n in counted)
    score = sum(WEIGHTS[n] * v for n, v in counted.items()) / weight if weight else None
    for name, metric in metrics.items():
        metric["weight"] = WEIGHTS[name]
        if metric["value"] is not None:
            metric["value"] = round(metric["value"], 1)
    return {
        "scope": tj.tier.name,
        "score": None if score is None else round(score, 1),
        "band": band(score),
        "metrics": metrics,
        "computed_at": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
    }


def snapshot(report: dict[str, Any]) -> dict[str, Any]:
    """What a day's history row keeps: the score and each metric's value."""
    return {
        "score": report["score"],
        "band": report["band"],
        **{name: m["value"] for name, m in report["metrics"].items()},
    }


def tier_status(tj: TierJournal, stats: dict[str, Any], embedding: bool) -> dict[str, Any]:
    """The tier's journal in ``/memory/status``, from its index's ``stats``."""
    vectors = len(tj.vectors) if tj.vectors is not None else 0
    pending = max(0, stats["embeddable"] - vectors - len(tj.refused)) if embedding else 0
    body = {
        "indexing": False,
        "events": stats["events"],
        "bytes": stats["bytes"],
        "embeddable": stats["embeddable"],
        "embedded": vectors,
        "pending_embeddings": pending,
        "pending_scans": stats["unscanned"],
        "unparsed_lines": stats["unparsed_lines"],
        "problems": stats["problems"],
        "rejected_tails": [
            {"file": s.file, "line": s.line, "bytes": s.bytes} for s in tj.set_aside
        ],
        "episodic": "vector" if embedding else "sparse-only",
    }
    if tj.embed_error:
        body["embed_error"] = tj.embed_error
    return body


def reasons(tiers: dict[str, TierJournal]) -> list[str]:
    """Each reason the journals are degraded, for ``/healthz``."""
    out: list[str] = []
    for name, tj in tiers.items():
        if tj.failed:
            out.append(f"{name}: journal failed to open: {tj.failed}")
        elif not tj.ready.is_set():
            out.append(f"{name}: journal index catching up with the journal files")
        if tj.set_aside:
            out.append(
                f"{name}: {len(tj.set_aside)} torn journal line(s) set aside at "
                "start-up; /memory/status says where"
            )
        if tj.embed_error:
            out.append(f"{name}: journal events not embedded: {tj.embed_error}")
    return out
