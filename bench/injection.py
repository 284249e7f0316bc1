"""injection: what the prompt-injection scanner catches, per intent class, and what it keeps.

Runs :func:`sidecar.safety.scan` over the project corpus (tests/injection_corpus.py):
each payload is counted as caught when the scanner reports the category the
corpus expects, each benign note as kept when it passes untouched. Intent
payloads are reported per class (PAYLOAD_CLASSES), benign notes per topic
(BENIGN_TOPICS). Also times one scan of a 2 MB document of benign notes. Needs
no external data. The scan is also given as a ratio to a bare pass over the same
document (lower-casing it and one regex of five literals), which is timed in the
same run, so the ratio holds on a loaded machine. The corpus is the project's
own, so its rates are an upper bound: the held-out sets scored outside the
project are the real measure.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable

from bench.context import Context
from bench.report import BenchResult, Figure, Table, at_least, at_most, progress
from sidecar.safety import scan
from tests.injection_corpus import (
    BENIGN,
    BENIGN_TOPICS,
    CLASS_CATEGORY,
    INTENT_CLASSES,
    PAYLOAD_CLASSES,
    PAYLOADS,
)

NAME = "injection"
DESCRIPTION = "injection scanner: caught per class, benign kept"
TWO_MB = 2 * 1024 * 1024
ORIGINAL = "(original corpus)"
_BARE = re.compile(r"ignore|curl|wget|password|token")


def _bare(text: str) -> int:
    """The least any scanner does: read the text once, lower-cased, for a few words."""
    return len(_BARE.findall(text.lower()))


def _best(fn: Callable[[str], object], text: str, runs: int) -> float:
    """Best of ``runs`` CPU times (s) of ``fn(text)``: other processes' load does not count."""
    samples = []
    for _ in range(runs):
        started = time.process_time()
        fn(text)
        samples.append(time.process_time() - started)
    return min(samples)


def _document(size: int) -> str:
    """Benign notes under their own headings, repeated up to ``size`` characters."""
    notes = [f"## Note {i}: {name}\n\n{text}\n" for i, (name, text) in enumerate(BENIGN)]
    body = "\n".join(n.replace("\ufeff", "") for n in notes)
    return (body * (size // len(body) + 1))[:size]


def _rate_row(label: str, hit: int, total: int) -> list[str]:
    return [label, f"{hit}/{total}", f"{100 * hit / total:.1f}%" if total else "n/a"]


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "injection scanner: caught per intent class, benign kept per topic")
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    missed: list[str] = []
    for pid, category, text in PAYLOADS:
        cls = PAYLOAD_CLASSES.get(text, ORIGINAL)
        total[cls] += 1
        finding = scan(text)
        if finding is not None and finding.category == category:
            caught[cls] += 1
        else:
            missed.append(pid)
    kept: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    flagged: list[str] = []
    for bid, text in BENIGN:
        topic = BENIGN_TOPICS.get(text, ORIGINAL)
        seen[topic] += 1
        finding = scan(text)
        if finding is None:
            kept[topic] += 1
        else:
            flagged.append(f"{bid} ({finding.pattern})")
    progress(NAME, f"{len(PAYLOADS)} payloads, {len(BENIGN)} benign notes scanned")

    document = _document(TWO_MB)
    runs = 2 if ctx.quick else 5
    scan_ms = _best(scan, document, runs) * 1000
    bare_ms = _best(_bare, document, runs) * 1000

    classes = [*INTENT_CLASSES, ORIGINAL]
    all_caught, all_total = sum(caught.values()), sum(total.values())
    intent_caught = sum(caught[c] for c in INTENT_CLASSES)
    intent_total = sum(total[c] for c in INTENT_CLASSES)
    all_kept, all_seen = sum(kept.values()), sum(seen.values())
    result.figures = [
        Figure("payloads caught", 100 * all_caught / all_total, "%", 1, at_least(100, ">= 100 %")),
        Figure("intent payloads caught", 100 * intent_caught / intent_total, "%", 1),
        Figure("benign kept", 100 * all_kept / all_seen, "%", 1, at_least(100, ">= 100 %")),
        Figure("scan of 2 MB benign notes (best)", scan_ms, "ms", 0, at_most(1000, "<= 1000 ms")),
        Figure("scan / bare pass over the same 2 MB", scan_ms / bare_ms, "x", 1),
    ]
    result.tables.append(
        Table(
            "payloads caught (right category), per intent class",
            ["class", "caught/total", "rate"],
            [
                *(_rate_row(c, caught[c], total[c]) for c in classes),
                _rate_row("all", all_caught, all_total),
            ],
        )
    )
    topics = [*sorted(t for t in seen if t != ORIGINAL), ORIGINAL]
    result.tables.append(
        Table(
            "benign notes kept, per topic",
            ["topic", "kept/total", "rate"],
            [
                *(_rate_row(t, kept[t], seen[t]) for t in topics),
                _rate_row("all", all_kept, all_seen),
            ],
        )
    )
    for cls, category in CLASS_CATEGORY.items():
        result.notes.append(f"{cls} is expected as category {category}")
    if missed:
        result.notes.append(f"missed: {', '.join(missed)}")
    if flagged:
        result.notes.append(f"benign flagged: {', '.join(flagged)}")
    result.details = {
        "caught": dict(caught),
        "total": dict(total),
        "kept": dict(kept),
        "benign": dict(seen),
        "missed": missed,
        "flagged": flagged,
        "scan_2mb_ms": scan_ms,
        "bare_2mb_ms": bare_ms,
    }
    return result
