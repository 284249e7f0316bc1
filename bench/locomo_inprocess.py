"""In-process LoCoMo retriever over the sidecar's own chunker, query planner and store.

Used by ``locomo_eval.py --retriever bench/locomo_inprocess.py:factory`` to tune
chunking and ranking quickly; ``make bench`` measures the real daemon over HTTP.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sidecar import indexer, query, sqlite_store
from sidecar.chunking import DEFAULT_MAX_CHARS
from sidecar.search import search_store


class InProcessRetriever:
    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.max_chars = int(max_chars)
        self.name = f"sidecar-inprocess(max_chars={self.max_chars})"
        self._tmp = tempfile.TemporaryDirectory(prefix="locomo-idx-")
        self._stores: dict[str, sqlite_store.SQLiteStore] = {}

    def index(self, memory_dir: str) -> None:
        key = str(memory_dir)
        if key in self._stores:
            self._stores.pop(key).close()
        path = Path(self._tmp.name) / f"{len(self._stores)}-{abs(hash(key))}.sqlite"
        store = sqlite_store.SQLiteStore(path)
        store.replace_all(indexer.load_tree(Path(memory_dir), self.max_chars))
        self._stores[key] = store

    def __call__(self, memory_dir: str, text: str, k: int) -> list[tuple[str, int, int, str]]:
        planned = query.plan(text)
        if planned is None:
            return []
        hits, _ = search_store(self._stores[str(memory_dir)], planned, k)
        return [(h.path, h.start_line, h.end_line, h.text) for h in hits]

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._tmp.cleanup()


def factory(**kwargs: str) -> InProcessRetriever:
    return InProcessRetriever(**kwargs)
