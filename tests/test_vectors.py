"""The in-memory vector matrix and the sparse/dense fusion, on small exact inputs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from sidecar.index.store import Hit
from sidecar.retrieval import fusion
from sidecar.retrieval.embedders.base import normalize
from sidecar.retrieval.ranking import Result, dense_fill_last, rrf_fuse
from sidecar.retrieval.vector_sync import from_blob, texts_to_embed, to_blob
from sidecar.retrieval.vectors import VectorIndex


def unit(*xs: float) -> np.ndarray:
    return normalize(np.array([xs], dtype=np.float32))[0]


def test_top_k_is_exact_and_best_first() -> None:
    rng = np.random.default_rng(7)
    rows = normalize(rng.standard_normal((1000, 16)))
    index = VectorIndex(16)
    index.upsert(list(range(1000, 2000)), [f"h{i}" for i in range(1000)], rows)
    query = normalize(rng.standard_normal((1, 16)))[0]
    ids, scores, keys = index.top_k(query, 10)
    expected = np.argsort(-(rows @ query))[:10] + 1000
    assert ids.tolist() == expected.tolist()
    assert keys == [f"h{i - 1000}" for i in ids.tolist()]  # the text each score came from
    assert np.all(np.diff(scores) <= 0)
    assert len(index.top_k(query, 5000)[0]) == 1000  # k beyond n: everything, sorted


def test_remove_fills_the_hole_and_keeps_ids_straight() -> None:
    index = VectorIndex(2)
    index.upsert([1, 2, 3], ["a", "b", "c"], np.stack([unit(1, 0), unit(0, 1), unit(1, 1)]))
    index.remove([1, 99])  # an unknown id is ignored
    assert len(index) == 2
    assert index.keys() == {2: "b", 3: "c"}
    ids, _, keys = index.top_k(unit(1, 0.1), 2)
    assert (ids.tolist(), keys) == ([3, 2], ["c", "b"])
    ids, scores, _ = index.top_k(unit(0, 1), 3)  # each id still has its own row
    assert ids.tolist() == [2, 3]
    assert scores.tolist() == pytest.approx([1.0, 0.7071], abs=1e-4)


def test_upsert_replaces_a_row_and_grows_past_its_capacity() -> None:
    index = VectorIndex(2)
    n = 1000  # several doublings of the initial capacity
    index.upsert(list(range(n)), ["x"] * n, np.tile(unit(1, 0), (n, 1)))
    index.upsert([5], ["y"], np.stack([unit(0, 1)]))
    assert len(index) == n
    assert index.keys()[5] == "y"
    assert index.top_k(unit(0, 1), 1)[0].tolist() == [5]


def test_searches_during_updates_never_see_a_torn_matrix() -> None:
    index = VectorIndex(8)
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn() -> None:
        i = 0
        while not stop.is_set():
            index.upsert([i], [str(i)], normalize(np.ones((1, 8))))
            if i % 3 == 0:
                index.remove([i - 1])
            i += 1

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(2000):
            ids, scores, keys = index.top_k(normalize(np.ones((1, 8)))[0], 5)
            if len(ids) and not np.allclose(scores, 1.0, atol=1e-5):
                errors.append(AssertionError(scores))
            if keys != [str(i) for i in ids.tolist()]:  # upserts key each row by its id
                errors.append(AssertionError((ids, keys)))
    finally:
        stop.set()
        thread.join()
    assert errors == []


def test_texts_to_embed_adds_lines_only_when_there_are_several() -> None:
    assert texts_to_embed("one line") == ["one line"]
    assert texts_to_embed("a\n\n b \n") == ["a\n\n b \n", "a", " b "]


def test_blob_round_trip() -> None:
    rows = normalize(np.arange(12, dtype=np.float32).reshape(3, 4) + 1)
    assert np.array_equal(from_blob(to_blob(rows), 4), rows)


def hit(name: str, score: float) -> Hit:
    return Hit(f"{name}.md", 1, 1, "", name, score, key=name)


def test_dense_score_mixes_best_line_and_whole_chunk() -> None:
    query = unit(1, 0)
    blob = to_blob(np.stack([unit(0, 1), unit(1, 0), unit(-1, 0)]))  # chunk, line 1, line 2
    assert fusion.dense_score(query, blob) == pytest.approx(
        fusion.LINE_MIX * 1.0 + (1 - fusion.LINE_MIX) * 0.0
    )
    single = to_blob(np.stack([unit(1, 1)]))
    assert fusion.dense_score(query, single) == pytest.approx(0.7071, abs=1e-4)


def test_rerank_reorders_the_pool_and_reports_both_ranks() -> None:
    sparse = [hit("a", 10.0), hit("b", 9.0), hit("c", 1.0)]
    dense = {"a": 0.0, "b": 0.9, "c": 0.8}
    ranked = fusion.rerank(sparse, dense, [], 10)
    # b: .5*.9 + .5*.9 = .9; a: .5*1 + 0 = .5; c: .5*.1 + .5*.8 = .45
    assert [r.hit.key for r in ranked] == ["b", "a", "c"]
    assert [r.score for r in ranked] == pytest.approx([0.9, 0.5, 0.45])
    assert ranked[0].ranks == {"sparse": 2, "dense": 1}
    assert ranked[2].ranks == {"sparse": 3, "dense": 2}


def test_rerank_gives_tied_dense_scores_distinct_ranks_in_bm25_order() -> None:
    sparse = [hit("a", 10.0), hit("b", 9.0), hit("c", 8.0)]
    ranked = fusion.rerank(sparse, {"a": 0.5, "b": 0.5, "c": 0.9}, [], 10)
    assert {r.hit.key: r.ranks["dense"] for r in ranked} == {"c": 1, "a": 2, "b": 3}


def test_rerank_keeps_bm25_share_for_chunks_without_a_vector() -> None:
    sparse = [hit("new", 10.0), hit("old", 8.0)]
    ranked = fusion.rerank(sparse, {"old": 0.1}, [], 10)
    assert [r.hit.key for r in ranked] == ["new", "old"]
    assert ranked[0].score == pytest.approx(1.0)
    assert "dense" not in ranked[0].ranks


def test_dense_hits_fill_below_every_bm25_hit_and_never_repeat() -> None:
    sparse = [hit("a", 2.0)]
    fill = [(hit("a", 0.0), 0.99), (hit("z", 0.0), 0.98), (hit("y", 0.0), 0.5),
            (hit("junk", 0.0), fusion.NOTES_FILL_MIN_COSINE - 0.01)]  # fmt: skip
    ranked = fusion.rerank(sparse, {"a": -1.0}, fill, 3)
    assert [r.hit.key for r in ranked] == ["a", "z", "y"]
    assert ranked[1].ranks == {"dense": 2}
    assert ranked[0].score > ranked[1].score > ranked[2].score
    only_dense = fusion.rerank([], {}, fill, 10)
    assert [r.hit.key for r in only_dense] == ["a", "z", "y"]  # never one below the floor
    assert only_dense[0].score == pytest.approx(0.99)


def test_across_tiers_dense_fills_come_after_every_bm25_hit() -> None:
    def result(source: str, name: str, ranks: dict[str, int] | None) -> Result:
        return Result(source, hit(name, 0.0), 0.0, ranks=ranks)

    agent = [result("agent", "fill", {"dense": 1})]
    crew = [result("crew", f"c{i}", {"sparse": i, "dense": 3}) for i in range(1, 4)]
    fused = dense_fill_last(rrf_fuse({"agent": agent, "crew": crew}, 10))
    assert [r.hit.key for r in fused] == ["c1", "c2", "c3", "fill"]
    proxied = [result("crew", "lead", None)]  # rendered by a lead: no ranks, not a fill
    assert [r.hit.key for r in dense_fill_last([*agent, *proxied])] == ["lead", "fill"]


def test_across_tiers_a_tie_goes_to_the_hit_its_tier_scored_higher() -> None:
    """Each tier's best hit scores 1/61 in the fusion; "which database do we use?" once
    put an agent note sharing only "use" above the crew's decision on the database."""
    weak = Result("agent", hit("tabs", 0.0), 0.31, ranks={"sparse": 1})
    strong = Result("crew", hit("database", 0.0), 0.87, ranks={"sparse": 1})
    fused = rrf_fuse({"agent": [weak], "crew": [strong]}, 10)
    assert [r.hit.key for r in fused] == ["database", "tabs"]
    assert fused[0].score == fused[1].score  # still a tie in the fused score itself
    assert [r.hit.key for r in rrf_fuse({"agent": [weak], "crew": [strong]}, 1)] == ["database"]
    # Ranked differently (a member's crew by BM25 alone, its own tier hybrid), the two
    # scores are on different scales: the tier order decides, as it did before.
    raw_bm25 = Result("crew", hit("bm25", 0.0), 7.5, ranks={"sparse": 1})
    mixed = Result("agent", hit("mixed", 0.0), 0.9, ranks={"sparse": 1, "dense": 1})
    assert [r.hit.key for r in rrf_fuse({"agent": [mixed], "crew": [raw_bm25]}, 10)] == [
        "mixed",
        "bm25",
    ]


def test_across_tiers_the_pieces_of_one_long_line_stay_separate_hits() -> None:
    """A line over the chunk cap is cut into pieces that share its line range; fused by
    file and lines they were summed into one hit that outranked every other tier."""
    pieces = [Result("agent", Hit("daily.md", 4, 4, "", f"piece {i}", 1.0, f"p{i}"), 1.0,
                     ranks={"sparse": i}) for i in range(1, 5)]  # fmt: skip
    crew = [
        Result("crew", Hit("kafka.md", 1, 4, "", "brokers", 2.0, "k"), 2.0, ranks={"sparse": 1})
    ]
    fused = rrf_fuse({"agent": pieces, "crew": crew}, 10)
    assert [r.hit.key for r in fused] == ["k", "p1", "p2", "p3", "p4"]
    assert max(r.score for r in fused) == pytest.approx(1 / 61)


class _Clock:
    """monotonic() for vector_sync: moves only when a store read says it took time."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _KeysStore:
    """Just what ``TierVectors.lag`` reads, with a chosen cost per read."""

    generation = 0

    def __init__(self, clock: _Clock, cost: float) -> None:
        self.clock, self.cost, self.keys, self.reads = clock, cost, {1: "a", 2: "b"}, 0

    def chunk_keys(self) -> dict[int, str]:
        self.reads += 1
        self.clock.now += self.cost
        return dict(self.keys)


@pytest.mark.parametrize("cost", [0.001, 0.5])
def test_lag_is_exact_where_counting_is_cheap_and_bounded_where_it_is_not(
    monkeypatch: pytest.MonkeyPatch, cost: float
) -> None:
    from sidecar.retrieval import vector_sync

    clock = _Clock()
    monkeypatch.setattr(vector_sync.time, "monotonic", clock)

    class Embedder:
        model_id, dim = "test:2", 2

    store = _KeysStore(clock, cost)
    tier = vector_sync.TierVectors(store, Embedder())  # type: ignore[arg-type]
    assert tier.lag() == 2 and store.reads == 1
    store.keys[3] = "c"  # a chunk appears
    slow = cost > vector_sync.LAG_EXACT_S
    # a cheap count is taken again at once; a costly one is reused for a while...
    assert tier.lag() == (2 if slow else 3) and store.reads == (1 if slow else 2)
    clock.now += vector_sync.LAG_REUSE * cost + 0.01
    # ...and never for longer than ten times what it cost
    assert tier.lag() == 3 and store.reads == (2 if slow else 3)
