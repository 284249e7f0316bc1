"""The PostgreSQL store's vectors: float32 blobs in ``bytea`` always, and with pgvector
each blob's whole-chunk row as a ``vector`` too, found through an HNSW index.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from sidecar.stores.pg_connect import Conn, Connections


class Vectors:
    """One namespace's vectors; ``transaction`` is the store's (writers take turns)."""

    def __init__(
        self,
        db: Connections,
        namespace: str,
        transaction: Callable[[], AbstractContextManager[Conn]],
    ) -> None:
        self._db = db
        self.namespace = namespace
        self._transaction = transaction
        self._dims: dict[str, int] = {}  # model id -> vector width, once a query told it
        self._hnsw: set[int] = set()  # widths whose HNSW index this process has ensured

    def get(self, model_id: str, keys: Iterable[str]) -> dict[str, bytes]:
        rows = self._db.rows(
            "SELECT hash, vec FROM vectors WHERE namespace = %s AND model_id = %s "
            "AND hash = ANY(%s)",
            (self.namespace, model_id, list(keys)),
        )
        return {h: bytes(v) for h, v in rows}

    def put(self, model_id: str, items: Iterable[tuple[str, bytes]]) -> None:
        rows = [(self.namespace, model_id, key, blob) for key, blob in items]
        if not rows:
            return
        dims = self._dims.get(model_id) if self._db.pgvector else None
        with self._transaction() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO vectors (namespace, model_id, hash, vec) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (namespace, model_id, hash) DO UPDATE SET vec = excluded.vec",
                rows,
            )
            if dims is not None:
                self._set_embeddings(cur, model_id, dims, [(k, b) for _, _, k, b in rows])

    def _set_embeddings(
        self, cur: psycopg.Cursor[Any], model_id: str, dims: int, blobs: list[tuple[str, bytes]]
    ) -> None:
        """Each blob's whole-chunk row (its first) as a pgvector value, for the HNSW index."""
        cur.executemany(
            "UPDATE vectors SET dims = %s, embedding = %s::vector "
            "WHERE namespace = %s AND model_id = %s AND hash = %s",
            [(dims, _literal(first_row(b, dims)), self.namespace, model_id, k)
             for k, b in blobs if len(b) >= 4 * dims],
        )  # fmt: skip

    def nearest(self, model_id: str, query: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The ``k`` stored texts whose whole-chunk vector is closest to ``query`` (unit
        length), as (content hash, cosine), best first: by the HNSW index in PostgreSQL
        with pgvector, else scored here from the bytea column."""
        dims = len(query)
        if not self._db.pgvector:
            return self._nearest_here(model_id, query, k)
        if self._dims.get(model_id) != dims:
            self._prepare_pgvector(model_id, dims)
        sql = (
            f"SELECT hash, 1 - (embedding::vector({dims}) <=> %(q)s::vector({dims})) AS sim "
            "FROM vectors WHERE namespace = %(ns)s AND model_id = %(m)s "
            f"AND dims = {dims} ORDER BY embedding::vector({dims}) <=> %(q)s::vector({dims}) "
            "LIMIT %(k)s"
        )
        params = {"q": _literal(query), "ns": self.namespace, "m": model_id, "k": k}
        with self._db.conn() as conn, conn.transaction():
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(sql, params).fetchall()
            if len(rows) < k:
                # The index is shared by every namespace and filtered after the scan, which
                # gives up after hnsw.max_scan_tuples of other namespaces' rows: a small
                # namespace beside a big one finds too few. Score its own rows exactly
                # (through the namespace's b-tree index; few rows, or fewer than k).
                conn.execute("SET LOCAL enable_indexscan = off")
                rows = conn.execute(sql, params).fetchall()
        return sorted(((h, float(sim)) for h, sim in rows), key=lambda r: -r[1])

    def _prepare_pgvector(self, model_id: str, dims: int) -> None:
        """Learn the model's width from a query: make sure an HNSW index for that width
        exists, and fill the pgvector column of vectors stored before it was known."""
        if dims not in self._hnsw:
            with self._db.conn() as conn:
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS vectors_hnsw_{dims} ON vectors "
                    f"USING hnsw ((embedding::vector({dims})) vector_cosine_ops) "
                    f"WHERE dims = {dims}"
                )
            self._hnsw.add(dims)
        self._dims[model_id] = dims
        with self._transaction() as conn, conn.cursor() as cur:
            todo = conn.execute(
                "SELECT hash, vec FROM vectors WHERE namespace = %s AND model_id = %s "
                "AND (dims IS NULL OR dims <> %s)",
                (self.namespace, model_id, dims),
            ).fetchall()
            self._set_embeddings(cur, model_id, dims, [(h, bytes(v)) for h, v in todo])

    def _nearest_here(
        self, model_id: str, query: Sequence[float], k: int
    ) -> list[tuple[str, float]]:
        import numpy as np  # only a store without pgvector scores vectors in process

        rows = self._db.rows(
            "SELECT hash, vec FROM vectors WHERE namespace = %s AND model_id = %s",
            (self.namespace, model_id),
        )
        dims = len(query)
        rows = [(h, v) for h, v in rows if len(v) >= 4 * dims]
        if not rows:
            return []
        matrix = np.stack([np.frombuffer(bytes(v), np.float32, dims) for _, v in rows])
        sims = matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-sims)[:k]
        return [(rows[i][0], float(sims[i])) for i in order]

    def prune(self, model_id: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM vectors AS v WHERE v.namespace = %(ns)s AND (v.model_id <> %(m)s "
                "OR NOT EXISTS (SELECT 1 FROM chunks AS c "
                "WHERE c.namespace = %(ns)s AND c.hash = v.hash))",
                {"ns": self.namespace, "m": model_id},
            )


def _literal(vector: Iterable[float]) -> str:
    """A vector in pgvector's text form."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def first_row(blob: bytes, dims: int) -> list[float]:
    """The whole-chunk vector of a stored blob (its first float32 row)."""
    return array.array("f", blob[: 4 * dims]).tolist()
