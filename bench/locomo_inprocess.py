"""In-process LoCoMo retriever over the sidecar's own chunker, planner, store and fusion.

Used by ``locomo_eval.py --retriever bench/locomo_inprocess.py:factory`` to tune
chunking and ranking quickly; ``make bench`` measures the real daemon over HTTP
and runs this in every mode, so the README's comparison of fusions reproduces.

``--arg mode=``:

- ``sparse`` (default): BM25 alone;
- ``hybrid``: the shipped ranking (``sidecar.retrieval.fusion``), as the daemon runs it;
- ``dense``: the vector leg alone;
- ``rrf``: the textbook baseline, reciprocal rank fusion (k = 60) of each leg's
  top ``POOL``, which the shipped ranking replaced.

``--arg vector_cache=DIR`` keeps each sample's index under DIR, so a second
run in another mode looks its vectors up instead of embedding them again.
``--arg alpha=X`` sets the dense leg's share in hybrid (``modes.ALPHA``); ``--arg
target=X`` and ``--arg lead_in_cost=X`` set the chunker's target fraction of the cap and
the cost of cutting after a lead-in line, ``--arg context_chars=N`` the neighbouring
characters folded into each side of a chunk's indexed context (``chunking.CONTEXT_CHARS``,
0 = none) and ``--arg context_weight=X`` their BM25 weight (``sqlite_schema.CONTEXT_WEIGHT`` in
hybrid's pool, ``modes.SPARSE_CONTEXT_WEIGHT`` in sparse mode), ``--arg when_share=X``
what a chunk saying when gains for a question asking when (``modes.WHEN_SHARE``),
``--arg speaker_share=X`` what a chunk holding a line by someone the question names gains
(``modes.SPEAKER_SHARE``):
for the cross-validation of those constants (``bench/crossval.py``).
``--arg ablate=A,B`` turns date mechanisms off for an audit (``bench/robustness.py``):
``relative`` (relative expressions indexed as their month and day, ``dates.resolved``),
``canonical`` (dates in other forms, at index and query time, ``dates.canonical_dates``),
``heading`` (the section's month and day word in each chunk's context) and ``below``
(answers point at the whole chunk, heading lines included, not ``ranking.body_only``).
``--arg store=pgserver`` keeps each sample's index in a throwaway PostgreSQL cluster
(``pgserver``), one namespace per sample; ``--arg store=postgresql://...`` in that
server instead: the PostgreSQL store against the SQLite one on the same questions.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from sidecar.index import indexer
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.index.store import Hit, IndexStore
from sidecar.retrieval import modes, query
from sidecar.retrieval.embedders.minilm import MiniLMEmbedder
from sidecar.retrieval.modes import DENSE, HYBRID, POOL, SPARSE, SPARSE_CONTEXT_WEIGHT
from sidecar.retrieval.ranking import (
    RRF_K,
    body_only,
    lift,
    rank_tier,
    rrf_fuse,
    search_store,
)
from sidecar.retrieval.vector_sync import TierVectors
from sidecar.stores import open_store

RRF = "rrf"
MODES = (SPARSE, HYBRID, DENSE, RRF)


class InProcessRetriever:
    def __init__(
        self,
        max_chars: int = DEFAULT_MAX_CHARS,
        mode: str = SPARSE,
        threads: int = 1,
        vector_cache: str = "",
        alpha: str = "",
        target: str = "",
        lead_in_cost: str = "",
        context_chars: str = "",
        context_weight: str = "",
        when_share: str = "",
        speaker_share: str = "",
        store: str = "",
        ablate: str = "",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.below = _ablate(set(filter(None, ablate.split(","))))
        self.max_chars = int(max_chars)
        self.mode = mode
        if alpha:
            from sidecar.retrieval import fusion

            fusion.ALPHA = float(alpha)  # this process only: one evaluation run
        from sidecar.index import chunking, packing

        if when_share != "":
            modes.WHEN_SHARE = float(when_share)
        if speaker_share != "":
            modes.SPEAKER_SHARE = float(speaker_share)
        if target:
            packing._TARGET = float(target)
        if lead_in_cost:
            packing._LEAD_IN_COST = float(lead_in_cost)
        if context_chars != "":
            chunking.CONTEXT_CHARS = int(context_chars)
        self.sparse_weight = SPARSE_CONTEXT_WEIGHT
        if context_weight and mode == SPARSE:
            self.sparse_weight = float(context_weight)
        elif context_weight:
            from sidecar.stores import sqlite_schema

            sqlite_schema.CONTEXT_WEIGHT = float(context_weight)
        self._tmp = tempfile.TemporaryDirectory(prefix="locomo-idx-")
        self._server = None
        self._url = store
        if store == "pgserver":
            import pgserver

            self._server = pgserver.get_server(Path(self._tmp.name) / "pg", cleanup_mode="stop")
            self._url = self._server.get_uri()
        kind = "postgresql" if self._url else "sqlite"
        self.name = f"sidecar-inprocess(max_chars={self.max_chars}, mode={mode}, store={kind})"
        self._dir = Path(vector_cache) if vector_cache else Path(self._tmp.name)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._embedder = MiniLMEmbedder(int(threads)) if mode != SPARSE else None
        self._stores: dict[str, tuple[IndexStore, TierVectors | None]] = {}

    def index(self, memory_dir: str) -> None:
        key = str(memory_dir)
        if key in self._stores:
            self._stores.pop(key)[0].close()
        name = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()  # stable across runs
        store = open_store(self._url or self._dir / f"{name}.sqlite", f"locomo/{name}")
        store.replace_all(indexer.load_tree(Path(memory_dir), self.max_chars))
        vectors = None
        if self._embedder is not None:
            vectors = TierVectors(store, self._embedder)
            vectors.sync(lambda: False)
        self._stores[key] = (store, vectors)

    def __call__(self, memory_dir: str, text: str, k: int) -> list[tuple[str, int, int, str]]:
        store, vectors = self._stores[str(memory_dir)]
        planned = query.plan(text)
        if self._embedder is None:
            if planned is None:
                return []
            cued = planned.asks_when or bool(planned.names)
            depth = max(POOL, k) if cued else k
            hits = search_store(store, planned, depth, self.sparse_weight)[0]
            if cued:
                hits = lift(hits, planned.asks_when, planned.names)[:k]
            return [shown(h, self.below) for h in hits]
        vector = self._embedder.embed([text])[0]
        if self.mode == RRF:
            depth = max(POOL, k)
            legs = {leg: rank_tier(store, "agent", planned, depth, leg, vector, vectors)[0]
                    for leg in (SPARSE, DENSE)}  # fmt: skip
            results = rrf_fuse(legs, k, RRF_K)
        else:
            results = rank_tier(store, "agent", planned, k, self.mode, vector, vectors)[0]
        return [shown(r.hit, self.below) for r in results]

    def close(self) -> None:
        for store, _ in self._stores.values():
            store.close()
        if self._server is not None:
            self._server.cleanup()
        self._tmp.cleanup()


def shown(hit: Hit, below: bool = True) -> tuple[str, int, int, str]:
    """The lines a search answer points at (``ranking.body_only``), as the daemon shows them."""
    hit = body_only(hit) if below else hit
    return hit.path, hit.start_line, hit.end_line, hit.text


ABLATIONS = ("relative", "canonical", "heading", "below")


def _ablate(off: set[str]) -> bool:
    """Turn the named date mechanisms off in this process (one evaluation run); whether
    answers still point below heading lines."""
    unknown = off - set(ABLATIONS)
    if unknown:
        raise ValueError(f"ablate takes {', '.join(ABLATIONS)}, not {', '.join(sorted(unknown))}")
    from sidecar.index import chunking

    if "relative" in off:
        chunking.resolved = lambda text, when: ""
    if "canonical" in off:
        chunking.canonical_dates = query.canonical_dates = lambda text, when=None: ""
    if "heading" in off:
        heading_dates = chunking._heading_dates
        chunking._heading_dates = lambda heading, day: (heading_dates(heading, day)[0], "", "")
    return "below" not in off


def factory(**kwargs: str) -> InProcessRetriever:
    return InProcessRetriever(**kwargs)
