"""robustness: LoCoMo dev rewritten at run time, standing in for conversations never seen.

The unseen half of LoCoMo is written by the same method but not in the same words: a
ranking mechanism fitted to how the dev conversations say when something happened, or to
how their questions are worded, loses its gain there. Each transform below rewrites the
dev conversations in memory (the data is read from the --locomo folder; the rewritten copy
lives in a temporary folder for the run only) and keeps every turn on its own line, so the
evidence is where it was:

- ``relative``: relative expressions in the turns in other common forms ("yesterday" ->
  "the other day", "last Friday" -> "this past Friday", "two days ago" -> "a couple of
  days ago"), from a small table of everyday English (``RELATIVE_FORMS``);
- ``reworded``: questions with common words in a synonym ("bought" -> "purchased",
  ``SYNONYMS``) and "When did" asked two other ways in turn ("At what point did", "On
  what date did");
- ``shifted``: every session moved by ``SHIFT`` (100 days and 5 h 17 min), with the dates
  the turns and questions write moved alike: other months, weekdays and years.

Each retriever is scored on the original and on each transform: the FTS5 chunk baseline of
the evaluation script, the sidecar's sparse and hybrid rankings, and hybrid with one date
mechanism off (``locomo_inprocess`` ``ablate``, ``when_share=0``). A mechanism whose gain
over its ablation holds on the original but not under a transform was fitted to a form.
On the original, each mechanism's per-conversation temporal gain is also shown with its
on/off choice made on the other four conversations (the leave-one-out audit).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.locomo_data import DEV_SAMPLES, subprocess_env
from bench.report import BenchResult, Figure, Table, progress

NAME = "robustness"
DESCRIPTION = "LoCoMo dev with relative dates, questions and session times rewritten"
RETRIEVER = "bench/locomo_inprocess.py:factory"
BASELINE = "fts5-chunks-porter"
TEMPORAL = "2-temporal"
SHIFT = dt.timedelta(days=100, hours=5, minutes=17)

_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# Everyday English for the same relative times, none of them LoCoMo's choice of words.
RELATIVE_FORMS: tuple[tuple[str, str], ...] = (
    (r"yesterday", "the other day"),
    (r"last night", "the other night"),
    (r"last weekend", "this past weekend"),
    (r"last week", "a week ago"),
    (rf"last ({_WEEKDAYS})", r"this past \1"),
    (r"(?:two|2) days ago", "a couple of days ago"),
    (r"(?:three|four|3|4) days ago", "a few days ago"),
    (r"(?:two|2) weeks ago", "a couple of weeks back"),
    (r"last month", "a few weeks ago"),
    (r"next month", "in a few weeks"),
    (r"last year", "about a year ago"),
    (r"this weekend", "this coming weekend"),
    (r"next week", "in a week or so"),
    (r"last summer", "this past summer"),
    (r"(\w+) years ago", r"\1 years back"),
    (r"recently", "not long ago"),
    (r"lately", "these past few weeks"),
    (r"this month", "later this month"),
    (r"this week", "earlier this week"),
)
_RELATIVE = [(re.compile(rf"\b{p}\b", re.I), r) for p, r in RELATIVE_FORMS]

# Common words and a synonym, in both directions where both are common.
SYNONYMS = {
    "go": "head", "went": "headed", "visit": "stop by", "visited": "stopped by",
    "buy": "purchase", "bought": "purchased", "start": "begin", "started": "began",
    "meet": "get together with", "met": "got together with", "join": "become part of",
    "joined": "became part of", "attend": "go to", "attended": "went to", "trip": "journey",
    "kids": "children", "children": "kids", "friends": "pals", "friend": "pal",
    "class": "course", "job": "position", "car": "vehicle", "house": "home", "dog": "pup",
    "movie": "film", "concert": "gig", "give": "deliver", "gave": "delivered",
    "speech": "talk", "event": "gathering", "party": "celebration", "family": "relatives",
    "mother": "mom", "mom": "mother", "father": "dad", "dad": "father",
    "vacation": "holiday", "sign": "enroll", "signed": "enrolled", "get": "obtain",
    "got": "received", "make": "create", "made": "created", "lose": "misplace",
    "lost": "misplaced", "win": "earn", "won": "earned", "finish": "complete",
    "finished": "completed", "take": "do", "took": "did", "read": "go through",
    "plan": "intend", "planning": "intending", "new": "fresh", "big": "large",
}  # fmt: skip
_SYNONYM = re.compile(rf"\b({'|'.join(SYNONYMS)})\b", re.I)
_OPENER = re.compile(r"^When (did|is|was|will|has|does|do|are|were)\b")
OPENERS = ("At what point {verb}", "On what date {verb}", "When {verb}")

_MONTH_NAMES = [dt.date(2000, m, 1).strftime("%B") for m in range(1, 13)]
_MONTH = "|".join(_MONTH_NAMES)
_SESSION_TIME = re.compile(
    rf"(\d{{1,2}}):(\d{{2}})\s*([ap]m)\s+on\s+(\d{{1,2}})\s+({_MONTH}),?\s+(\d{{4}})", re.I
)
# One pass over every written date, so a date moved is never read again.
_WRITTEN = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?P<s1>st|nd|rd|th)? (?P<m1>{_MONTH})(?P<c1>,?) (?P<y1>\d{{4}})"
    rf"|(?P<m2>{_MONTH}) (?P<d2>\d{{1,2}})(?P<s2>st|nd|rd|th)?(?P<c2>,?) (?P<y2>\d{{4}})"
    rf"|(?P<m3>{_MONTH})(?P<c3>,?) (?P<y3>\d{{4}}))\b"
)
_MONTH_ALONE = re.compile(rf"\b({'|'.join(m for m in _MONTH_NAMES if m != 'May')})\b")


def _cased(found: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if found[:1].isupper() else replacement


def relative_forms(text: str) -> str:
    """``text`` with its relative expressions written in ``RELATIVE_FORMS``' other forms."""
    for pattern, replacement in _RELATIVE:
        text = pattern.sub(lambda m, r=replacement: _cased(m[0], m.expand(r)), text)
    return text


def reworded(question: str, turn: int) -> str:
    """The question in synonyms, its "When did" asked the ``turn``-th other way."""
    text = _SYNONYM.sub(lambda m: _cased(m[0], SYNONYMS[m[0].lower()]), question)
    opener = OPENERS[turn % len(OPENERS)]
    return _OPENER.sub(lambda m: opener.format(verb=m[1]), text)


def _month(name: str) -> int:
    return _MONTH_NAMES.index(name.capitalize()) + 1


def _moved(day: dt.date) -> dt.date:
    return (dt.datetime.combine(day, dt.time(12)) + SHIFT).date()


def shifted(text: str) -> str:
    """``text`` with each date it writes moved by ``SHIFT`` ("8 May, 2023" -> "16 August,
    2023"; "May 2023" by its 15th; a month alone by the months ``SHIFT`` spans)."""

    def moved(m: re.Match[str]) -> str:
        try:
            if m["d1"]:
                day = _moved(dt.date(int(m["y1"]), _month(m["m1"]), int(m["d1"])))
                return f"{day.day}{m['s1'] or ''} {day:%B}{m['c1']} {day.year}"
            if m["d2"]:
                day = _moved(dt.date(int(m["y2"]), _month(m["m2"]), int(m["d2"])))
                return f"{day:%B} {day.day}{m['s2'] or ''}{m['c2']} {day.year}"
        except ValueError:
            return m[0]
        day = _moved(dt.date(int(m["y3"]), _month(m["m3"]), 15))
        return f"{day:%B}{m['c3']} {day.year}"

    months = round(SHIFT.days / 30.44)
    out, at = [], 0
    for m in _WRITTEN.finditer(text):
        out += [_MONTH_ALONE.sub(lambda a: _later(a[1], months), text[at : m.start()]), moved(m)]
        at = m.end()
    out.append(_MONTH_ALONE.sub(lambda a: _later(a[1], months), text[at:]))
    return "".join(out)


def _later(month: str, months: int) -> str:
    return _MONTH_NAMES[(_month(month) - 1 + months) % 12]


def session_time(text: str) -> str:
    """A session's "1:56 pm on 8 May, 2023" moved by ``SHIFT``, in the same form."""
    m = _SESSION_TIME.search(text)
    if m is None:
        return text
    hour = int(m[1]) % 12 + (12 if m[3].lower() == "pm" else 0)
    at = dt.datetime(int(m[6]), _month(m[5]), int(m[4]), hour, int(m[2])) + SHIFT
    clock = f"{(at.hour - 1) % 12 + 1}:{at.minute:02d} {'pm' if at.hour >= 12 else 'am'}"
    return text[: m.start()] + f"{clock} on {at.day} {at:%B}, {at.year}" + text[m.end() :]


def transform(sample: dict[str, Any], name: str) -> dict[str, Any]:
    """A rewritten copy of one LoCoMo sample (``name``: a key of ``TRANSFORMS``)."""
    out = copy.deepcopy(sample)
    conv = out["conversation"]
    for key, value in conv.items():
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
            for turn in value:
                if name == "relative":
                    turn["text"] = relative_forms(str(turn["text"]))
                elif name == "shifted":
                    turn["text"] = shifted(str(turn["text"]))
        elif name == "shifted" and re.fullmatch(r"session_\d+_date_time", key):
            conv[key] = session_time(str(value))
    for i, qa in enumerate(out["qa"]):
        if name == "reworded":
            qa["question"] = reworded(str(qa["question"]), i)
        elif name == "shifted":
            qa["question"] = shifted(str(qa["question"]))
    return out


TRANSFORMS = ("original", "relative", "reworded", "shifted")
# label: (retriever, args); the ablations are hybrid with one mechanism off.
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "fts5": (BASELINE, {}),
    "sparse": (RETRIEVER, {"mode": "sparse"}),
    "sparse, no when lift": (RETRIEVER, {"mode": "sparse", "when_share": "0"}),
    "hybrid": (RETRIEVER, {"mode": "hybrid"}),
    "hybrid, no when lift": (RETRIEVER, {"mode": "hybrid", "when_share": "0"}),
    "hybrid, no relative dates": (RETRIEVER, {"mode": "hybrid", "ablate": "relative"}),
    "hybrid, no canonical dates": (RETRIEVER, {"mode": "hybrid", "ablate": "canonical"}),
    "hybrid, no heading month": (RETRIEVER, {"mode": "hybrid", "ablate": "heading"}),
    "hybrid, no speaker lift": (RETRIEVER, {"mode": "hybrid", "speaker_share": "0"}),
    "hybrid, answers at headings": (RETRIEVER, {"mode": "hybrid", "ablate": "below"}),
}
QUICK_VARIANTS = ("fts5", "sparse", "hybrid", "hybrid, no when lift")
# Scored under every transform; the other variants on the original only (the audit).
TRANSFORMED_VARIANTS = (
    "fts5", "sparse", "sparse, no when lift", "hybrid", "hybrid, no when lift",
    "hybrid, no relative dates",
)  # fmt: skip
# Each transform's corpus and its chunks' vectors are kept here between runs: a chunk is
# embedded once, whatever run next needs it (vectors are looked up by the chunk's text).
CACHE = Path(tempfile.gettempdir()) / "sidecar-bench-robustness"

Rows = dict[int, dict[str, tuple[float, int]]]  # conversation -> category -> (recall, n)


def evaluate(ctx: Context, data: Path, retriever: str, args: dict[str, str], tmp: Path,
             samples: list[int]) -> Rows:  # fmt: skip
    """Per conversation and category budgeted recall of one retriever over ``data``."""
    dump = tmp / "dump.jsonl"
    corpus = "original" if data.stem == "reworded" else data.stem  # only questions differ
    cmd = [sys.executable, str(ctx.locomo().script), "--data", str(data), "--samples",
           ",".join(map(str, samples)), "--retriever", retriever, "--corpus-dir",
           str(CACHE / f"corpus-{corpus}"), "--dump", str(dump)]  # fmt: skip
    if args.get("mode") == "hybrid":
        cmd += ["--arg", f"vector_cache={CACHE / f'vectors-{corpus}'}", "--arg", "threads=2"]
    for key, value in args.items():
        cmd += ["--arg", f"{key}={value}"]
    done = subprocess.run(cmd, cwd=ctx.repo, env=subprocess_env(ctx.repo), capture_output=True,
                          text=True, timeout=3600, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"locomo_eval.py {retriever} {args}: {done.stderr[-800:]}")
    return per_category(dump.read_text().splitlines())


def per_category(lines: list[str]) -> Rows:
    """Sum each conversation's question recalls by category ("all" is every question)."""
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
    order: list[str] = []
    for line in lines:
        row = json.loads(line)
        sample = str(row["sample"])
        if sample not in order:
            order.append(sample)
        for category in (f"{row['category']}-", "all"):
            cell = sums[sample][category]
            cell[0] += row["recall_budget"]
            cell[1] += 1
    return {i: {_category(c): (s / n, int(n)) for c, (s, n) in sums[sample].items()}
            for i, sample in enumerate(order)}  # fmt: skip


def _category(prefix: str) -> str:
    names = {"1-": "1-multi-hop", "2-": TEMPORAL, "3-": "3-open-domain", "4-": "4-single-hop"}
    return names.get(prefix, prefix)


def overall(rows: Rows, category: str, skip: int | None = None) -> float:
    """Recall over the conversations (all but ``skip``), weighted by their questions."""
    cells = [r[category] for i, r in rows.items() if i != skip and category in r]
    return sum(v * n for v, n in cells) / max(1, sum(n for _, n in cells))


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, DESCRIPTION)
    loc = ctx.locomo()
    samples = list(DEV_SAMPLES)[: 2 if ctx.quick else None]
    labels = QUICK_VARIANTS if ctx.quick else tuple(VARIANTS)
    scores: dict[str, dict[str, Rows]] = {}
    with ctx.tempdir(NAME) as tmp:
        for name in TRANSFORMS:
            data = tmp / f"{name}.json"
            rewritten = [loc.samples[i] if name == "original" else transform(loc.samples[i], name)
                         for i in samples]  # fmt: skip
            data.write_text(json.dumps(rewritten))
            for label in labels:
                if name != "original" and label not in TRANSFORMED_VARIANTS:
                    continue
                progress(NAME, f"{name}: {label}")
                retriever, args = VARIANTS[label]
                scores.setdefault(label, {})[name] = evaluate(
                    ctx, data, retriever, args, tmp, list(range(len(samples)))
                )
    _report(result, scores, labels)
    return result


def _report(
    result: BenchResult, scores: dict[str, dict[str, Rows]], labels: tuple[str, ...]
) -> None:
    for category in (TEMPORAL, "all"):
        rows = []
        for label in labels:
            cells = [
                f"{c:.3f} ({c - overall(scores['fts5'][t], category):+.3f})"
                if (c := _score(scores[label], t, category)) is not None
                else "-"
                for t in TRANSFORMS
            ]
            rows.append([label, *cells])
        result.tables.append(
            Table(
                f"{category}: budgeted recall (gain over fts5) by transform",
                ["retriever", *TRANSFORMS],
                rows,
            )
        )
    for label in labels:
        whole = label.split(",")[0]
        if whole == label or whole not in labels:
            continue
        for t in TRANSFORMS:
            if t in scores[label]:
                gain = overall(scores[whole][t], TEMPORAL) - overall(scores[label][t], TEMPORAL)
                result.figures.append(
                    Figure(f"temporal gain of {whole} over '{label}', {t}", gain, digits=3)
                )
    result.tables.append(_audit(scores, labels))


def _score(rows: dict[str, Rows], transform_name: str, category: str) -> float | None:
    return overall(rows[transform_name], category) if transform_name in rows else None


def _audit(scores: dict[str, dict[str, Rows]], labels: tuple[str, ...]) -> Table:
    """Leave-one-conversation-out: each mechanism on or off as the other four conversations
    chose (all categories), and its temporal gain on the held one over off."""
    rows = []
    for label in labels:
        whole = label.split(",")[0]
        if whole == label or whole not in labels:
            continue
        on, off = scores[whole]["original"], scores[label]["original"]
        gains: list[float] = []
        cells: list[str] = []
        for held in on:
            keep = overall(on, "all", skip=held) >= overall(off, "all", skip=held)
            gains.append((on if keep else off)[held][TEMPORAL][0] - off[held][TEMPORAL][0])
            cells.append(f"{gains[-1]:+.3f} {'on' if keep else 'off'}")
        spread = f"{max(gains) - min(gains):.3f}"
        rows.append([label, *cells, spread])
    folds = len(next(iter(scores["fts5"].values())))
    return Table(
        "temporal gain of each mechanism per held-out conversation (on/off chosen on the others)",
        ["retriever, mechanism off", *(f"conv {i}" for i in range(folds)), "spread"],
        rows,
    )
