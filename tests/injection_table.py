"""Print the scanner's per-class table on the held-out corpus: ``python -m tests.injection_table``.

``--split dev`` or ``--split heldout`` (the default) picks the part scored;
``--split all`` scores both. ``--corpus fresh`` scores the third corpus
(tests/injection_corpus_fresh.py), which has no split; ``--corpus blind`` the fourth
(tests/injection_corpus_blind.py). Missed payloads and
flagged benign notes are listed under the table, so a change can be judged on
what it lets through.
"""

from __future__ import annotations

import argparse
from collections import Counter

from sidecar.safety import scan
from tests import injection_corpus_blind as blind
from tests import injection_corpus_fresh as fresh
from tests.injection_corpus_heldout import BENIGN, CLASSES, PAYLOADS

Rows = tuple[list[tuple[str, int, int]], int, int, list[str], list[str]]


def table(split: str) -> Rows:
    """(class, caught, total) rows, benign flagged, benign total, missed texts, flagged texts."""
    wanted = ("dev", "heldout") if split == "all" else (split,)
    if split in ("fresh", "blind"):
        corpus = fresh if split == "fresh" else blind
        payloads = [(split, cls, text) for cls, text in corpus.PAYLOADS]
        benign = [(split, topic, text) for topic, text in corpus.BENIGN]
        return _score(payloads, benign, corpus.CLASSES, (split,))
    return _score(PAYLOADS, BENIGN, CLASSES, wanted)


def _score(
    payloads: tuple[tuple[str, str, str], ...] | list[tuple[str, str, str]],
    benign: tuple[tuple[str, str, str], ...] | list[tuple[str, str, str]],
    classes: tuple[str, ...],
    wanted: tuple[str, ...],
) -> Rows:
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    missed: list[str] = []
    for part, cls, text in payloads:
        if part not in wanted:
            continue
        total[cls] += 1
        if scan(text) is not None:
            caught[cls] += 1
        else:
            missed.append(f"[{cls}] {text!r}")
    flagged = [
        f"[{topic}] {text!r} -> {finding.pattern}"
        for part, topic, text in benign
        if part in wanted and (finding := scan(text)) is not None
    ]
    benign_total = sum(1 for part, _, _ in benign if part in wanted)
    rows = [(cls, caught[cls], total[cls]) for cls in classes]
    return rows, len(flagged), benign_total, missed, flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="heldout")
    parser.add_argument("--corpus", choices=("heldout", "fresh", "blind"), default="heldout")
    parser.add_argument("--list", action="store_true", help="list missed and flagged texts")
    args = parser.parse_args()
    split = args.corpus if args.corpus != "heldout" else args.split
    rows, flagged, benign_total, missed, flagged_texts = table(split)
    print(f"{'class':34} caught/total")
    for cls, hit, n in rows:
        print(f"{cls:34} {hit}/{n}")
    hit, n = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'all payloads':34} {hit}/{n}")
    print(f"{'benign blocked':34} {flagged}/{benign_total}")
    if args.list:
        print("\nmissed:", *missed, sep="\n  ")
        print("\nflagged:", *flagged_texts, sep="\n  ")


if __name__ == "__main__":
    main()
