"""heldout: knowledge updates and lessons on sets written by someone who never saw the ranking.

Both sets were written after the ranking's design was set, without reading the ranking
code or the project's own sets (issue 33), and are meant to be scored once per ranking
change, never tuned against.

- **Updates** (``bench/data/updates_heldout.json``): pairs of an older journal event and a
  later one replacing it, among distractors (same subjects, other subjects, and later
  unrelated events sharing the question's words, so "newest first" overall is wrong).
  Scored as the restated pairs are (``bench/restated_pairs.py``): a pair counts when its
  newer event ranks above its older one in ``POST /memory/recall`` (k = 50; an event
  missing from the hits ranks below every hit), and whether the newer is in the top 5.
  Sanity: questions answered by an older event that was never updated must keep it first.
- **Lessons** (``bench/data/lessons_heldout.json``, the format of the learnings ranking
  set): per topic, is the prominent lesson first (ahead of a wordier weak entry, its own
  near-duplicate and a retired entry), and, on the opposite topics, does the exact but
  unreinforced answer beat a prominent entry on a neighbouring task; retired entries
  shown; nDCG@5 against relevance alone.

Each is run sparse and hybrid, and beside a plain BM25 over the same texts (an in-memory
FTS5 table with the sidecar's tokenizer, the query's terms OR-ed) as the floor.

The first sets (v1) have been scored and are now development data; so has the second
(``updates_heldout2.json``, ``lessons_heldout2.json``, written later by someone else, on
other topics, same format), scored by the ``heldout2`` part (``bench/heldout2.py``). The
third (``*_heldout3.json``, ``bench/heldout3.py``) was written blind to both and to the
ranking, on other domains again; the fourth (``*_heldout4.json``, ``bench/heldout4.py``) blind
to all three and to the ranking, on fourteen further domains; the fifth (``*_heldout5.json``,
``bench/heldout5.py``) blind to all four, on sixteen more; the sixth (``*_heldout6.json``,
``bench/heldout6.py``) blind to all five, on twenty more. Each later version runs through
``run_version``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import learnings, restated_pairs
from bench.context import REPO, Context
from bench.journal_speed import post_batches, recall, wait_journal
from bench.report import BenchResult, Figure, Table, at_least, at_most, progress
from sidecar.index.sqlite import TOKENIZER
from sidecar.retrieval.query import terms as query_terms

NAME = "heldout"
DESCRIPTION = "held-out knowledge updates and lessons, written blind to ranking"
UPDATES = REPO / "bench" / "data" / "updates_heldout.json"
LESSONS = REPO / "bench" / "data" / "lessons_heldout.json"
UPDATES2 = REPO / "bench" / "data" / "updates_heldout2.json"
LESSONS2 = REPO / "bench" / "data" / "lessons_heldout2.json"
UPDATES3 = REPO / "bench" / "data" / "updates_heldout3.json"
LESSONS3 = REPO / "bench" / "data" / "lessons_heldout3.json"
UPDATES4 = REPO / "bench" / "data" / "updates_heldout4.json"
LESSONS4 = REPO / "bench" / "data" / "lessons_heldout4.json"
UPDATES5 = REPO / "bench" / "data" / "updates_heldout5.json"
LESSONS5 = REPO / "bench" / "data" / "lessons_heldout5.json"
UPDATES6 = REPO / "bench" / "data" / "updates_heldout6.json"
LESSONS6 = REPO / "bench" / "data" / "lessons_heldout6.json"
MODES = {"sparse": "none", "hybrid": "minilm"}
RECALL_RANKINGS = ("default", "relevance")
LESSON_RANKINGS = ("default", "relevance")
TOP = 5
NEWER_TARGET = at_least(0.80, ">= 0.80 (goal 0.90)")
RETIRED_TARGET = at_most(0, "0")
GAIN_TARGET = at_least(0.0, ">= relevance")


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def bare_bm25(texts: Sequence[str], queries: Sequence[str], limit: int) -> dict[str, list[int]]:
    """Per query, indexes of ``texts`` in plain FTS5 BM25 order: the floor any ranking
    starts from."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{TOKENIZER}')")
    conn.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", list(enumerate(texts)))
    out = {}
    for q in queries:
        match = " OR ".join(f'"{w}"' for w in query_terms(q))
        rows = conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (match, limit)
        ).fetchall()
        out[q] = [r[0] for r in rows]
    conn.close()
    return out


# -- updates ---------------------------------------------------------------------------------


def _shifted_ts(ts: str, shift: dt.timedelta) -> str:
    return (dt.datetime.fromisoformat(ts) + shift).isoformat(timespec="seconds")


def update_events(data: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every event of the set, dated so its ``now`` is today; and where each named one is:
    ``o:<pair>``, ``n:<pair>`` and ``s:<sanity>`` map to positions in the list."""
    shift = dt.date.today() - dt.date.fromisoformat(data["now"])
    delta = dt.timedelta(days=shift.days)
    rows: list[tuple[str, dict[str, Any]]] = []
    for pair in data["pairs"]:
        rows.append((f"o:{pair['key']}", pair["older"]))
        rows.append((f"n:{pair['key']}", pair["newer"]))
    rows += [(f"s:{s['key']}", s["event"]) for s in data["sanity"]]
    rows += [("", d) for d in data["distractors"]]
    rows.sort(key=lambda r: r[1]["ts"])  # recorded in time order, as a journal would be
    events = [
        {
            "type": e["type"],
            "summary": e["summary"],
            "ts": _shifted_ts(e["ts"], delta),
            "refs": {"episodic": True},
        }
        for _, e in rows
    ]
    return events, {tag: i for i, (tag, _) in enumerate(rows) if tag}


def lean(pair: dict[str, Any]) -> str:
    p = restated_pairs.Pair(pair["older"]["summary"], pair["newer"]["summary"], pair["query"])
    return restated_pairs.lean(p)


def score_updates(
    data: dict[str, Any], ranked: dict[str, list[str]], ids: list[str], where: dict[str, int]
) -> dict[str, Any]:
    """``ranked`` maps each question to its hit ids, best first."""
    pairs, sanity = data["pairs"], data["sanity"]
    outs = []
    for i, pair in enumerate(pairs):
        newer, older = ids[where[f"n:{pair['key']}"]], ids[where[f"o:{pair['key']}"]]
        outs.append(restated_pairs.outcome(i, ranked[pair["query"]], newer, older))
    by_lean: dict[str, list[int]] = {"older": [0, 0], "even": [0, 0], "newer": [0, 0]}
    for pair, o in zip(pairs, outs, strict=True):
        by_lean[lean(pair)][0] += o.newer_first
        by_lean[lean(pair)][1] += 1
    sane = [ranked[s["query"]][:1] == [ids[where[f"s:{s['key']}"]]] for s in sanity]
    return {
        "newer_first": restated_pairs.share(outs),
        "newer_top5": sum(o.newer_rank is not None and o.newer_rank <= TOP for o in outs),
        "by_lean": {k: f"{v[0]}/{v[1]}" for k, v in by_lean.items()},
        "sanity_hit1": sum(sane),
        "missed": [p["key"] for p, o in zip(pairs, outs, strict=True) if not o.newer_first],
        "sanity_missed": [s["key"] for s, ok in zip(sanity, sane, strict=True) if not ok],
    }


def _questions(data: dict[str, Any]) -> list[str]:
    return [p["query"] for p in data["pairs"]] + [s["query"] for s in data["sanity"]]


def updates(ctx: Context, tmp: Path, data: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    events, where = update_events(data)
    out: dict[str, dict[str, Any]] = {}
    texts = [e["summary"] for e in events]
    positions = [str(i) for i in range(len(events))]
    bare = {
        q: [str(i) for i in hits]
        for q, hits in bare_bm25(texts, _questions(data), restated_pairs.RECALL_K).items()
    }
    out["bare BM25"] = score_updates(data, bare, positions, where)
    for mode, embedder in MODES.items():
        progress(name, f"updates, {mode}: {len(events)} events, {len(_questions(data))} questions")
        work = tmp / f"updates-{mode}"
        with ctx.daemon(work / "agent", work, embedder=embedder) as daemon:
            _, ids = post_batches(daemon.port, events, clients=1, batch=500)
            wait_journal(daemon, len(events), embedded=embedder != "none", bench=name)
            for ranking in RECALL_RANKINGS:
                extra = {} if ranking == "default" else {"ranking": ranking}
                ranked = {}
                for q in _questions(data):
                    body = recall(daemon.client, q, k=restated_pairs.RECALL_K, **extra)
                    ranked[q] = [h["id"] for h in body.get("hits", [])]
                out[f"{mode}/{ranking}"] = score_updates(data, ranked, ids, where)
    return out


# -- lessons ---------------------------------------------------------------------------------


def score_lessons(data: dict[str, Any], ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Counts per kind of task, and each task missed with what came first instead
    (``kp03>k011``; ``-`` when nothing was shown), so a miss can be read without a rerun."""
    retired = {e["key"] for e in data["entries"] if e["status"] == "retired"}
    first = {q["kind"]: 0 for q in data["queries"]}
    missed: list[str] = []
    for q in data["queries"]:
        shown = ranked[q["key"]][:1]
        first[q["kind"]] += shown == [q["answer"]]
        if shown != [q["answer"]]:
            missed.append(f"{q['key']}>{shown[0] if shown else '-'}")
    return {
        "prominent_first": first.get("prominent", 0),
        "exact_first": first.get("exact", 0),
        "missed": missed,
        "retired_shown": sum(k in retired for hits in ranked.values() for k in hits),
        "ndcg": statistics.fmean(
            learnings.ndcg(ranked[q["key"]], q["relevant"], TOP) for q in data["queries"]
        ),
    }


def lessons(ctx: Context, tmp: Path, data: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    keys = [e["key"] for e in data["entries"]]
    texts = [e["text"] for e in data["entries"]]
    found = bare_bm25(texts, [q["query"] for q in data["queries"]], TOP)
    bare = {q["key"]: [keys[i] for i in found[q["query"]]] for q in data["queries"]}
    out = {"bare BM25": score_lessons(data, bare)}
    for mode, embedder in MODES.items():
        progress(name, f"lessons, {mode}: {len(texts)} entries, {len(data['queries'])} tasks")
        work = tmp / f"lessons-{mode}"
        agent, crew = work / "agent", work / "crew"
        learnings.write_set(data, agent, crew)
        with ctx.daemon(agent, work, crew_dir=crew, embedder=embedder) as daemon:
            if embedder != "none":
                learnings.wait_embedded(daemon)
            for ranking in LESSON_RANKINGS:
                ranked = {}
                for q in data["queries"]:
                    body = {"query": q["query"], "scope": "both", "limit": TOP}
                    if ranking != "default":
                        body["ranking"] = ranking
                    status, answer = daemon.client.json("POST", learnings.SEARCH, body)
                    if status != 200:
                        raise RuntimeError(f"learnings search answered {status}: {answer}")
                    ranked[q["key"]] = [h["id"] for h in answer["hits"]]
                out[f"{mode}/{ranking}"] = score_lessons(data, ranked)
    return out


# -- report ----------------------------------------------------------------------------------


def smoke(upd: dict[str, Any], les: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A few questions of each kind over a slice of the events: shows the files load and
    score without spending the one scoring a held-out set gets (its figures mean nothing)."""
    upd = {**upd, "pairs": upd["pairs"][:3], "sanity": upd["sanity"][:1]}
    upd["distractors"] = upd["distractors"][:20]
    prominent = [q for q in les["queries"] if q["kind"] == "prominent"][:2]
    exact = [q for q in les["queries"] if q["kind"] == "exact"][:1]
    return upd, {**les, "queries": prominent + exact}


def run(ctx: Context) -> BenchResult:
    return run_set(ctx, NAME, load(UPDATES), load(LESSONS))


def run_version(ctx: Context, name: str, version: str, updates: Path, lessons: Path) -> BenchResult:
    """A later held-out version (``v2``, ``v3``, ...), or with ``--quick`` its smoke slice,
    whose figures only show that the files load and score."""
    upd, les = load(updates), load(lessons)
    if ctx.quick:
        upd, les = smoke(upd, les)
        title = f"held-out set {version}, SMOKE slice (--quick): checks loading only, not a score"
    else:
        title = f"held-out set {version}: updates and lessons (written blind to the ranking)"
    return run_set(ctx, name, upd, les, title)


def run_set(
    ctx: Context, name: str, upd: dict[str, Any], les: dict[str, Any], title: str = ""
) -> BenchResult:
    title = title or "held-out updates and lessons (written blind to the ranking)"
    result = BenchResult(name, title)
    with ctx.tempdir(name) as tmp:
        u = updates(ctx, tmp, upd, name)
        lr = lessons(ctx, tmp, les, name)
    _update_figures(result, upd, u)
    _lesson_figures(result, les, lr)
    result.details = {"updates": u, "lessons": lr}
    return result


def _update_figures(result: BenchResult, data: dict[str, Any], u: dict[str, Any]) -> None:
    n, n_sane = len(data["pairs"]), len(data["sanity"])
    for mode in MODES:
        default, rel = u[f"{mode}/default"], u[f"{mode}/relevance"]
        result.figures.append(
            Figure(
                f"updates, {mode}: newer above older (default ranking)",
                default["newer_first"],
                digits=3,
                target=NEWER_TARGET,
                note=f"relevance alone {rel['newer_first']:.3f}, "
                f"bare BM25 {u['bare BM25']['newer_first']:.3f}; {n} pairs",
            )
        )
        result.figures.append(
            Figure(
                f"updates, {mode}: sanity questions with their older answer first",
                default["sanity_hit1"],
                digits=0,
                target=at_least(rel["sanity_hit1"], f">= relevance ({rel['sanity_hit1']})"),
                note=f"of {n_sane}",
            )
        )
    leans = {k: sum(lean(p) == k for p in data["pairs"]) for k in ("older", "even", "newer")}
    result.tables.append(
        Table(
            f"updates: {n} pairs, {len(data['distractors'])} distractors, "
            f"k={restated_pairs.RECALL_K}",
            [
                "mode / ranking",
                "newer above older",
                "newer in top 5",
                "by lean",
                "sanity hit@1",
                "sanity missed",
            ],
            [
                [
                    name,
                    f"{s['newer_first']:.3f}",
                    f"{s['newer_top5']}/{n}",
                    ", ".join(f"{k} {v}" for k, v in s["by_lean"].items()),
                    f"{s['sanity_hit1']}/{n_sane}",
                    " ".join(s["sanity_missed"]) or "-",
                ]
                for name, s in u.items()
            ],
        )
    )
    result.notes.append(
        "updates: questions sharing more words with the older / newer statement / neither: "
        f"{leans['older']} / {leans['newer']} / {leans['even']}"
    )


def _lesson_figures(result: BenchResult, data: dict[str, Any], les: dict[str, Any]) -> None:
    kinds = {k: sum(q["kind"] == k for q in data["queries"]) for k in ("prominent", "exact")}
    need = math.ceil(10 / 12 * kinds["prominent"])
    for mode in MODES:
        d, rel = les[f"{mode}/default"], les[f"{mode}/relevance"]
        result.figures.append(
            Figure(
                f"lessons, {mode}: prominent lesson first",
                d["prominent_first"],
                digits=0,
                target=at_least(need, f">= {need} of {kinds['prominent']}"),
                note=f"relevance alone {rel['prominent_first']}, "
                f"bare BM25 {les['bare BM25']['prominent_first']}",
            )
        )
        result.figures.append(
            Figure(
                f"lessons, {mode}: exact low-importance answer first",
                d["exact_first"],
                digits=0,
                target=at_least(rel["exact_first"], f">= relevance ({rel['exact_first']})"),
                note=f"of {kinds['exact']}; bare BM25 {les['bare BM25']['exact_first']}",
            )
        )
        result.figures.append(
            Figure(
                f"lessons, {mode}: retired entries shown (top {TOP}, every task)",
                d["retired_shown"],
                digits=0,
                target=RETIRED_TARGET,
                note=f"relevance alone {rel['retired_shown']}",
            )
        )
        result.figures.append(
            Figure(
                f"lessons, {mode}: nDCG@{TOP}, default minus relevance alone",
                d["ndcg"] - rel["ndcg"],
                digits=3,
                target=GAIN_TARGET,
                note=f"{d['ndcg']:.3f} vs {rel['ndcg']:.3f}",
            )
        )
    result.tables.append(
        Table(
            f"lessons: {kinds['prominent']} prominent + {kinds['exact']} exact-answer tasks, "
            f"{len(data['entries'])} entries",
            [
                "mode / ranking",
                "prominent first",
                "exact first",
                "retired shown",
                f"nDCG@{TOP}",
                "missed (task>first shown)",
            ],
            [
                [
                    name,
                    f"{s['prominent_first']}/{kinds['prominent']}",
                    f"{s['exact_first']}/{kinds['exact']}",
                    str(s["retired_shown"]),
                    f"{s['ndcg']:.3f}",
                    " ".join(s["missed"]) or "-",
                ]
                for name, s in les.items()
            ],
        )
    )
    result.notes.append(
        "lessons: the bare BM25 row indexes every entry, retired ones too (it knows no status)"
    )
