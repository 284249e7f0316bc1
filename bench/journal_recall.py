"""journal_recall: what episodic recall finds, on LoCoMo dev and on restated facts.

LoCoMo dev (read through the eval script in the --locomo folder, never copied):
each dialogue turn of a conversation becomes one ``conversation.turn`` event whose
summary is the script's corpus line ("Speaker: text", with the photo caption when
the turn has one), ``session_id`` the conversation and session, ``ts`` the session's
date and time, every date of a conversation shifted by one constant so that its
last session was yesterday, and ``refs.episodic`` so a hybrid daemon embeds it.
Each conversation gets its own daemons (sparse-only and hybrid), so conversations
never see each other. Every scored question (categories 1-4) is asked with
``POST /memory/recall`` (k = 10, ``mark: false``) under each ranking; a question's
recall@k is the share of its evidence turns among the top k hits. Nothing is
tuned on this data, so the per-conversation figures are the leave-one-out view.

Restated facts (``bench/restated_pairs.py``): pairs of an older and a newer
statement of the same fact among distractors; a pair counts when the newer ranks
above the older.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import restated_pairs
from bench.context import Context
from bench.daemon import Daemon
from bench.journal_speed import post_batches, recall, wait_journal
from bench.locomo_data import DEV_SAMPLES, Locomo
from bench.report import BenchResult, Figure, Table, at_least, progress

NAME = "journal_recall"
DESCRIPTION = "episodic recall on LoCoMo dev, restated facts"
RANKINGS = ("relevance", "updates", "importance", "linear")
DEFAULT = "updates"  # sidecar.journal.ranking.DEFAULT_RANKING, asked for by name
MODES = {"sparse": "none", "hybrid": "minilm"}  # label -> --embedder
K = 10
COST_TARGET = at_least(-0.01, ">= -0.01")
RESTATED_TARGET = at_least(0.90, ">= 0.90")
QUICK_CONVERSATIONS = 2
POST_BATCH = 500
MAX_SUMMARY = 2000
_SESSION = re.compile(r"^## Session (\d+) \((.*)\)$")


@dataclass(frozen=True, slots=True)
class Question:
    category: str
    text: str
    evidence: frozenset[str]  # dia_ids


@dataclass(slots=True)
class Conversation:
    sample_id: str
    events: list[dict[str, Any]]
    dia_ids: list[str]  # per event
    questions: list[Question]
    truncated: int = 0  # summaries cut to MAX_SUMMARY


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


def conversations(loc: Locomo, limit: int | None) -> list[Conversation]:
    """The dev conversations as journal events, from the eval script's own corpus."""
    module = loc.module
    now = time.time()
    out: list[Conversation] = []
    indexes = [i for i in DEV_SAMPLES if i < len(loc.samples)][:limit]
    for i in indexes:
        sample = loc.samples[i]
        corpus = module.build_corpus(sample, i)
        turns: list[tuple[str, int, dt.datetime, str]] = []
        for rel in sorted(corpus.files):
            session: tuple[int, dt.datetime] | None = None
            for number, line in enumerate(corpus.files[rel], start=1):
                m = _SESSION.match(line)
                if m:
                    session = (int(m[1]), module.parse_session_datetime(m[2]))
                    continue
                dia = corpus.line_dia.get((rel, number))
                if dia is not None and session is not None:
                    turns.append((dia, session[0], session[1], line))
        last = max(t[2] for t in turns).replace(tzinfo=dt.UTC).timestamp()
        shift = (now - 86400.0) - last  # the last session was yesterday
        conv = Conversation(corpus.sample_id, [], [], [])
        for dia, n, when, line in turns:
            if len(line) > MAX_SUMMARY:
                conv.truncated += 1
                line = line[:MAX_SUMMARY]
            conv.events.append(
                {
                    "type": "conversation.turn",
                    "summary": line,
                    "session_id": f"{corpus.sample_id}-s{n}",
                    "ts": _iso(when.replace(tzinfo=dt.UTC).timestamp() + shift),
                    "refs": {"episodic": True},
                }
            )
            conv.dia_ids.append(dia)
        conv.questions = [
            Question(f"{q.category}-{module.CATEGORY_NAMES[q.category]}", q.question, q.evidence)
            for q in module.load_questions(sample, i, corpus)
            if q.evidence  # the script leaves questions without evidence out of its means
        ]
        out.append(conv)
    return out


@dataclass(frozen=True, slots=True)
class Score:
    conversation: str
    category: str
    r5: float
    r10: float


@dataclass(slots=True)
class Oddities:
    """Answers that did not say what was asked for."""

    modes: set[str] = field(default_factory=set)
    rankings: set[tuple[str, str]] = field(default_factory=set)  # (asked, answered)
    unknown_ids: int = 0


def load(daemon: Daemon, events: list[dict[str, Any]], embedded: bool) -> list[str]:
    _, ids = post_batches(daemon.port, events, clients=1, batch=POST_BATCH)
    wait_journal(daemon, len(events), embedded=embedded, bench=NAME)
    return ids


def ask(
    daemon: Daemon, conv: Conversation, ids: list[str], odd: Oddities
) -> dict[str, list[Score]]:
    dia_of = dict(zip(ids, conv.dia_ids, strict=True))
    scores: dict[str, list[Score]] = {r: [] for r in RANKINGS}
    for q in conv.questions:
        for ranking in RANKINGS:
            body = recall(daemon.client, q.text, k=K, ranking=ranking)
            odd.modes.add(str(body.get("mode")))
            if body.get("ranking") != ranking:
                odd.rankings.add((ranking, str(body.get("ranking"))))
            hits = [h["id"] for h in body.get("hits", [])][:K]
            odd.unknown_ids += sum(h not in dia_of for h in hits)
            found = [dia_of.get(h) for h in hits]
            r5 = len(q.evidence.intersection(found[:5])) / len(q.evidence)
            r10 = len(q.evidence.intersection(found)) / len(q.evidence)
            scores[ranking].append(Score(conv.sample_id, q.category, r5, r10))
    return scores


def run_conversation(
    ctx: Context, tmp: Path, conv: Conversation, odd: dict[str, Oddities]
) -> dict[str, dict[str, list[Score]]]:
    """The hybrid daemon embeds in the background while the sparse one is asked."""
    work = tmp / conv.sample_id
    out: dict[str, dict[str, list[Score]]] = {}
    with ctx.daemon(work / "hybrid" / "agent", work / "hybrid", embedder="minilm") as hybrid:
        _, hybrid_ids = post_batches(hybrid.port, conv.events, clients=1, batch=POST_BATCH)
        with ctx.daemon(work / "sparse" / "agent", work / "sparse") as sparse:
            ids = load(sparse, conv.events, embedded=False)
            out["sparse"] = ask(sparse, conv, ids, odd["sparse"])
        wait_journal(hybrid, len(conv.events), embedded=True, bench=NAME)
        out["hybrid"] = ask(hybrid, conv, hybrid_ids, odd["hybrid"])
    return out


# -- restated facts ------------------------------------------------------------------------

RESTATED_RANKINGS = ("default", "relevance", "linear")


def restated(ctx: Context, tmp: Path) -> tuple[dict[str, dict[str, list[Any]]], dict[str, str]]:
    """Per mode and ranking, each pair's outcome; and the ranking the default answered as."""
    events, planted = restated_pairs.journal_events()
    out: dict[str, dict[str, list[Any]]] = {}
    default_is: dict[str, str] = {}
    for mode, embedder in MODES.items():
        work = tmp / f"restated-{mode}"
        with ctx.daemon(work / "agent", work, embedder=embedder) as daemon:
            ids = load(daemon, events, embedded=embedder != "none")
            out[mode] = {r: [] for r in RESTATED_RANKINGS}
            for i, pair in enumerate(restated_pairs.PAIRS):
                newer, older = ids[planted.newer[i]], ids[planted.older[i]]
                for ranking in RESTATED_RANKINGS:
                    extra = {} if ranking == "default" else {"ranking": ranking}
                    body = recall(daemon.client, pair.query, k=restated_pairs.RECALL_K, **extra)
                    if ranking == "default":
                        default_is[mode] = str(body.get("ranking"))
                    hits = [h["id"] for h in body.get("hits", [])]
                    out[mode][ranking].append(restated_pairs.outcome(i, hits, newer, older))
    return out, default_is


# -- report ----------------------------------------------------------------------------------


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def _r(scores: list[Score]) -> tuple[float, float]:
    return _mean([s.r5 for s in scores]), _mean([s.r10 for s in scores])


def _pair(scores: list[Score]) -> str:
    r5, r10 = _r(scores)
    return f"{r5:.3f}/{r10:.3f}" if scores else "-"


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, f"episodic recall@5/@{K} on LoCoMo dev, and restated facts")
    loc = ctx.locomo()  # skipped before starting anything if the folder is incomplete
    convs = conversations(loc, QUICK_CONVERSATIONS if ctx.quick else None)
    odd = {mode: Oddities() for mode in MODES}
    scores: dict[str, dict[str, list[Score]]] = {m: {r: [] for r in RANKINGS} for m in MODES}
    with ctx.tempdir(NAME) as tmp:
        for conv in convs:
            progress(
                NAME,
                f"{conv.sample_id}: {len(conv.events)} turns, "
                f"{len(conv.questions)} questions x {len(RANKINGS)} rankings x 2 modes",
            )
            got = run_conversation(ctx, tmp, conv, odd)
            for mode in MODES:
                for ranking in RANKINGS:
                    scores[mode][ranking] += got[mode][ranking]
        progress(
            NAME,
            f"restated facts: {len(restated_pairs.PAIRS)} pairs, "
            f"{restated_pairs.DISTRACTORS} distractors",
        )
        facts, default_is = restated(ctx, tmp)

    categories = sorted({s.category for s in scores["sparse"]["relevance"]})
    names = [c.sample_id for c in convs]
    figures: list[Figure] = []
    for mode in MODES:
        rel = _r(scores[mode]["relevance"])[1]
        for ranking in RANKINGS:
            figures.append(
                Figure(
                    f"{mode}: {ranking} recall@{K}",
                    _r(scores[mode][ranking])[1],
                    digits=3,
                    note=f"recall@5 {_r(scores[mode][ranking])[0]:.3f}",
                )
            )
        figures.append(
            Figure(
                f"{mode}: default ({DEFAULT}) minus relevance, recall@{K}",
                _r(scores[mode][DEFAULT])[1] - rel,
                digits=3,
                target=COST_TARGET,
            )
        )
        per_conv = [
            _r([s for s in scores[mode][DEFAULT] if s.conversation == n])[1]
            - _r([s for s in scores[mode]["relevance"] if s.conversation == n])[1]
            for n in names
        ]
        worst = min(range(len(names)), key=per_conv.__getitem__)
        figures.append(
            Figure(
                f"{mode}: default minus relevance, worst conversation",
                per_conv[worst],
                digits=3,
                note=names[worst],
            )
        )
    for mode in MODES:
        figures.append(
            Figure(
                f"{mode}: restated, newer above older (default ranking)",
                restated_pairs.share(facts[mode]["default"]),
                digits=3,
                target=RESTATED_TARGET,
                note=f"default answered as '{default_is.get(mode)}'",
            )
        )
        figures.append(
            Figure(
                f"{mode}: restated, newer above older (relevance)",
                restated_pairs.share(facts[mode]["relevance"]),
                digits=3,
            )
        )
    result.figures = figures

    n_q = len(scores["sparse"]["relevance"])
    result.tables.append(
        Table(
            f"recall@5/recall@{K} by mode, ranking and category ({n_q} questions)",
            ["mode / ranking", "n", "recall@5", f"recall@{K}", *categories],
            [
                [
                    f"{mode} / {ranking}",
                    str(len(scores[mode][ranking])),
                    *(f"{x:.3f}" for x in _r(scores[mode][ranking])),
                    *(
                        _pair([s for s in scores[mode][ranking] if s.category == c])
                        for c in categories
                    ),
                ]
                for mode in MODES
                for ranking in RANKINGS
            ],
        )
    )
    cols = [(m, r) for m in MODES for r in RANKINGS]
    rows = []
    per: dict[tuple[str, str], list[float]] = {c: [] for c in cols}
    for conv in convs:
        row = [conv.sample_id, str(len(conv.questions))]
        for m, r in cols:
            mine = [s for s in scores[m][r] if s.conversation == conv.sample_id]
            per[(m, r)].append(_r(mine)[1])
            row.append(_pair(mine))
        rows.append(row)
    for label, fn in (
        ("min recall@10", min),
        ("max recall@10", max),
        ("stdev recall@10", statistics.pstdev),
    ):
        rows.append([label, "", *(f"{fn(per[c]):.3f}" for c in cols)])
    result.tables.append(
        Table(
            f"per conversation, recall@5/recall@{K}",
            ["conversation", "n", *(f"{m} {r[:3]}" for m, r in cols)],
            rows,
        )
    )
    fact_rows = []
    for mode in MODES:
        for ranking in RESTATED_RANKINGS:
            outs = facts[mode][ranking]
            fact_rows.append(
                [
                    f"{mode} / {ranking}",
                    f"{restated_pairs.share(outs):.3f}",
                    restated_pairs.by_lean(outs),
                    str(sum(o.newer_rank is None for o in outs)),
                    str(sum(o.older_rank is None for o in outs)),
                    ", ".join(str(o.pair) for o in outs if not o.newer_first) or "-",
                ]
            )
    result.tables.append(
        Table(
            f"restated facts ({len(restated_pairs.PAIRS)} pairs, k={restated_pairs.RECALL_K})",
            [
                "mode / ranking",
                "newer first",
                "by the question's lean",
                "newer missing",
                "older missing",
                "pairs failed",
            ],
            fact_rows,
        )
    )

    truncated = sum(c.truncated for c in convs)
    result.notes += [
        f"conversations: {', '.join(names)}; {sum(len(c.events) for c in convs):,} turns; one "
        f"sparse-only and one hybrid daemon each; k={K}, mark false",
        "events: conversation.turn, refs.episodic, session dates shifted per conversation so "
        "the last session was yesterday",
        "table cells are recall@5/recall@10; categories as the eval script names them",
        "restated facts: questions sharing more words with the older / newer statement / "
        "as many: {older} / {newer} / {even}; a pair counts when the newer ranks above the "
        "older in the top {k} (a missing event ranks below every hit)".format(
            **restated_pairs.lexical_lean(), k=restated_pairs.RECALL_K
        ),
    ]
    if truncated:
        result.notes.append(f"{truncated} turn summaries cut to {MAX_SUMMARY} characters")
    for mode, o in odd.items():
        expected = "sparse-only" if MODES[mode] == "none" else "hybrid"
        if o.modes != {expected}:
            result.notes.append(f"!! {mode} daemon answered mode {sorted(o.modes)}")
        if o.rankings:
            result.notes.append(f"!! {mode}: asked/answered rankings differ: {sorted(o.rankings)}")
        if o.unknown_ids:
            result.notes.append(f"!! {mode}: {o.unknown_ids} hit ids not recorded in the run")
    result.details = {
        "questions": n_q,
        "by_mode_ranking": {
            f"{m}/{r}": dict(zip(("r5", "r10"), _r(scores[m][r]), strict=True)) for m, r in cols
        },
        "by_conversation": {
            f"{m}/{r}": dict(zip(names, per[(m, r)], strict=True)) for m, r in cols
        },
        "restated": {
            m: {
                r: [[o.pair, o.newer_rank, o.older_rank] for o in outs]
                for r, outs in facts[m].items()
            }
            for m in MODES
        },
        "restated_default_ranking": default_is,
    }
    return result
