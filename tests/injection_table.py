"""Print the scanner's per-class table on the held-out corpus: ``python -m tests.injection_table``.

``--split dev`` or ``--split heldout`` (the default) picks the part scored;
``--split all`` scores both. Missed payloads and flagged benign notes are listed
under the table, so a change can be judged on what it lets through.
"""

from __future__ import annotations

import argparse
from collections import Counter

from sidecar.safety import scan
from tests.injection_corpus_heldout import BENIGN, CLASSES, PAYLOADS


def table(split: str) -> tuple[list[tuple[str, int, int]], int, int, list[str], list[str]]:
    """(class, caught, total) rows, benign flagged, benign total, missed texts, flagged texts."""
    wanted = ("dev", "heldout") if split == "all" else (split,)
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    missed: list[str] = []
    for part, cls, text in PAYLOADS:
        if part not in wanted:
            continue
        total[cls] += 1
        if scan(text) is not None:
            caught[cls] += 1
        else:
            missed.append(f"[{cls}] {text!r}")
    flagged = [
        f"[{topic}] {text!r} -> {finding.pattern}"
        for part, topic, text in BENIGN
        if part in wanted and (finding := scan(text)) is not None
    ]
    benign_total = sum(1 for part, _, _ in BENIGN if part in wanted)
    rows = [(cls, caught[cls], total[cls]) for cls in CLASSES]
    return rows, len(flagged), benign_total, missed, flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="heldout")
    parser.add_argument("--list", action="store_true", help="list missed and flagged texts")
    args = parser.parse_args()
    rows, flagged, benign_total, missed, flagged_texts = table(args.split)
    print(f"{'class':32} caught/total")
    for cls, hit, n in rows:
        print(f"{cls:32} {hit}/{n}")
    hit, n = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'all payloads':32} {hit}/{n}")
    print(f"{'benign blocked':32} {flagged}/{benign_total}")
    if args.list:
        print("\nmissed:", *missed, sep="\n  ")
        print("\nflagged:", *flagged_texts, sep="\n  ")


if __name__ == "__main__":
    main()
