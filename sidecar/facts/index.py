"""Each tier's facts folded from ``facts/log.jsonl`` into memory, with BM25 and vectors.

The log is the truth; this is rebuilt from it at every start (10k facts fold in a
fraction of a second) and kept in step as jobs append. Full text is an in-memory
FTS5 table over the sentence and its keywords; vectors, which cost a model call,
are cached by text in ``facts.sqlite`` beside the tier so a restart embeds nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.facts import log as facts_log
from sidecar.facts.log import CATEGORIES, MAX_ID_CHARS
from sidecar.index.sqlite import TOKENIZER, Database, is_query_error
from sidecar.journal.events import epoch, iso
from sidecar.journal.ranking import Candidate, relevance

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

CACHE_FILENAME = "facts.sqlite"
# 1: the cache on the SQLite base (versioned: a cache of another version is dropped)
CACHE_VERSION = 1
_CACHE_SCHEMA = f"""
CREATE TABLE vectors (model TEXT, key TEXT, vec BLOB, PRIMARY KEY (model, key)) WITHOUT ROWID;
PRAGMA user_version = {CACHE_VERSION};
"""
MAX_PROBLEMS = 50  # listed in status; the rest are counted


@dataclass(slots=True)
class Fact:
    id: str
    category: str
    fact: str
    keywords: list[str]
    sources: list[str]
    valid_at: float
    created_at: float
    invalid_at: float | None = None
    replaced_by: str | None = None
    replaces: str | None = None
    job: str | None = None
    reason: str | None = None  # why it was invalidated
    seen: set[str] = field(default_factory=set, repr=False)  # ``sources``, to look ids up

    def __post_init__(self) -> None:
        self.seen = set(self.sources)

    def add_sources(self, ids: list[str]) -> None:
        """Episodes that reinforced the fact, each counted once: a set lookup, since a
        list's made a log of many reinforcements fold in quadratic time."""
        fresh = [e for e in dict.fromkeys(ids) if e not in self.seen]
        self.sources += fresh
        self.seen.update(fresh)

    def valid(self, at: float | None = None) -> bool:
        """True now (no ``at``), or was true at ``at``."""
        if at is None:
            return self.invalid_at is None
        return self.valid_at <= at and (self.invalid_at is None or at < self.invalid_at)

    @property
    def embed_text(self) -> str:
        """The reference's embedding input: the category biases the vector to its domain."""
        return f"{self.category}: {self.fact} {' '.join(self.keywords)}".strip()

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id, "category": self.category, "fact": self.fact,
            "keywords": self.keywords,
            "source_episode_ids": self.sources[-facts_log.MAX_SOURCES_SHOWN :],
            "sources": len(self.sources), "valid_at": iso(self.valid_at),
            "invalid_at": iso(self.invalid_at) if self.invalid_at is not None else None,
            "created_at": iso(self.created_at),
        }  # fmt: skip
        for name in ("replaced_by", "replaces", "reason"):
            if getattr(self, name):
                body[name] = getattr(self, name)
        return body


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(slots=True)
class Fold:
    """What the log says, as of ``offset`` bytes."""

    facts: dict[str, Fact] = field(default_factory=dict)
    consolidated: set[str] = field(default_factory=set)  # episode ids
    jobs: list[dict[str, Any]] = field(default_factory=list)  # the "consolidated" records
    evidence: dict[str, str] = field(default_factory=dict)  # job -> its journal event
    offset: int = 0
    lines: int = 0  # whole lines up to ``offset``, so problems name the right line
    problems: list[dict[str, Any]] = field(default_factory=list)  # the first that did not fold
    unparsed: int = 0  # every line that did not fold, or was kept with a default

    def problem(self, line: int, error: str) -> None:
        """One more line that did not fit: counted, and listed while few (a log of blank
        lines is a problem a byte, and status answers, and memory holds, only the first)."""
        self.unparsed += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"line": line, "error": error})


class FactsIndex:
    """One tier's facts. Folding happens on the facts worker; searches on search threads."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fold = Fold()
        self._lock = threading.Lock()
        self._fts = sqlite3.connect(":memory:", check_same_thread=False)
        self._fts.execute(
            f"CREATE VIRTUAL TABLE fts USING fts5(id UNINDEXED, fact, keywords, "
            f"tokenize='{TOKENIZER}')"
        )
        self._cache = Database(
            root / CACHE_FILENAME,
            _CACHE_SCHEMA,
            CACHE_VERSION,
            "SELECT count(*) FROM vectors",
            what="facts vector cache",
            source="the facts log",
        )
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}  # fact id -> unit vector

    # -- folding (the facts worker) ----------------------------------------------------

    def load(self) -> None:
        """Fold whatever the log holds past what is folded already."""
        with self._lock:
            for line in facts_log.read(self.root, self.fold.offset, self.fold.lines + 1):
                self.fold.offset, self.fold.lines = line.end, line.number
                if line.record is None:
                    self.fold.problem(line.number, str(line.error))
                    continue
                self._apply(line.record, line.number)

    def _apply(self, r: dict[str, Any], number: int) -> None:
        """One record. A value that does not fit its field (a hand edit, a model's answer
        from before the limits) is read as its default and listed; no line stops the fold."""
        f, defaults = self.fold, Defaults()
        try:
            kind = r.get("kind")
            if kind == "fact":
                fact = _fact(r, defaults)
                self._fts.execute(  # first: text SQLite cannot take (a lone surrogate) raises
                    "INSERT INTO fts(id, fact, keywords) VALUES (?, ?, ?)",
                    (fact.id, fact.fact, " ".join(fact.keywords)),
                )
                f.facts[fact.id] = fact
            elif kind == "reinforce":
                fact = f.facts[r["id"]]
                ids = defaults.strings(r, "episode_ids")
                fact.add_sources(ids)
            elif kind == "invalidate":
                fact = f.facts[r["id"]]
                if fact.invalid_at is None:
                    at = epoch(r.get("at"))
                    fact.invalid_at = at if at is not None else defaults.note(
                        "at", "is not a timestamp from 1970 to 9999", fact.valid_at, "valid_at"
                    )  # fmt: skip
                    fact.replaced_by = defaults.text(r, "replaced_by")
                    fact.reason = defaults.text(r, "reason", facts_log.MAX_REASON_CHARS)
            elif kind == "consolidated":
                f.consolidated.update(defaults.strings(r, "episode_ids"))
                tokens = {n: defaults.tokens(r, n) for n in ("prompt_tokens", "answer_tokens")}
                job = {**r, **tokens}
                event = job.pop("event", None) and defaults.text(r, "event")
                if event:  # the journal event of its supports links (``evidence``)
                    job.update(event=event, supports=defaults.strings(r, "supports"),
                               facts=defaults.strings(r, "facts"))  # fmt: skip
                    if isinstance(r.get("job"), str):
                        f.evidence[r["job"]] = event
                f.jobs.append(job)
            else:
                raise ValueError(f"unknown kind {str(kind)[:40]!r}")
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            f.problem(number, f"{type(exc).__name__}: {exc}"[:300])
            return
        if defaults:
            f.problem(number, "kept, read as default: " + "; ".join(defaults))

    # -- vectors --------------------------------------------------------------------------

    def missing_vectors(self, model: str) -> list[Fact]:
        """Facts without a vector, after taking what the cache already holds."""
        import numpy as np

        want = [fact for fid, fact in self.fold.facts.items() if fid not in self.vectors]
        if not want:
            return []
        keys = {text_key(fact.embed_text): fact for fact in want}
        rows = (
            self._cache.reader()
            .execute(
                f"SELECT key, vec FROM vectors WHERE model = ? AND key IN "
                f"({','.join('?' * len(keys))})",
                [model, *keys],
            )
            .fetchall()
        )
        for key, blob in rows:
            self.vectors[keys[key].id] = np.frombuffer(blob, dtype=np.float32)
        return [fact for fact in want if fact.id not in self.vectors]

    def put_vectors(self, model: str, items: Iterable[tuple[Fact, Any]]) -> None:
        rows = []
        for fact, vec in items:
            self.vectors[fact.id] = vec
            rows.append((model, text_key(fact.embed_text), vec.astype("float32").tobytes()))
        with self._cache.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    # -- reading (any thread) --------------------------------------------------------------

    def search(
        self,
        match: str | None,
        query_vector: Any,
        category: str | None,
        as_of: float | None,
        limit: int,
    ) -> list[tuple[Fact, float]]:
        """Facts true now (or at ``as_of``), best first: BM25 over the sentence and its
        keywords, re-ordered by meaning as the journal's events are."""
        facts = self.fold.facts

        def wanted(fact: Fact) -> bool:
            return fact.valid(as_of) and (category is None or fact.category == category)

        found: dict[str, Candidate] = {}
        if match:
            with self._lock:
                try:
                    rows = self._fts.execute(
                        "SELECT id, -bm25(fts, 1.0, 0.5) FROM fts WHERE fts MATCH ? "
                        "ORDER BY bm25(fts, 1.0, 0.5) LIMIT ?",
                        (match, max(50, 5 * limit)),
                    ).fetchall()
                except sqlite3.OperationalError as exc:
                    if not is_query_error(exc):
                        raise
                    rows = []
            for fid, score in rows:
                if fid in facts and wanted(facts[fid]):
                    found[fid] = Candidate(fid, bm25=score)
        if query_vector is not None and self.vectors:
            import numpy as np

            ids = [fid for fid in self.vectors if fid in facts and wanted(facts[fid])]
            if ids:
                sims = np.stack([self.vectors[i] for i in ids]) @ query_vector
                for j in np.argsort(-sims)[: max(20, 4 * limit)]:
                    c = found.setdefault(ids[j], Candidate(ids[j]))
                    c.cosine = float(sims[j])
                for fid, c in found.items():
                    if c.cosine is None and fid in self.vectors:
                        c.cosine = float(self.vectors[fid] @ query_vector)
        rel = relevance(list(found.values()))
        ranked = sorted(rel.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [(facts[fid], score) for fid, score in ranked]

    def nearest(self, vector: Any, k: int) -> list[tuple[Fact, float]]:
        """The ``k`` active facts most like ``vector`` (cosine), for dedup and the prompt."""
        import numpy as np

        ids = [fid for fid in self.vectors if self.fold.facts[fid].valid()]
        if not ids or vector is None:
            return []
        sims = np.stack([self.vectors[i] for i in ids]) @ vector
        order = np.argsort(-sims)[:k]
        return [(self.fold.facts[ids[j]], float(sims[j])) for j in order]

    def history(self, fact_id: str) -> list[Fact]:
        """Every version of a fact, oldest first: what it replaced and what replaced it."""
        facts = self.fold.facts
        if fact_id not in facts:
            return []
        first = facts[fact_id]
        while first.replaces and first.replaces in facts:
            first = facts[first.replaces]
        chain = [first]
        while chain[-1].replaced_by and chain[-1].replaced_by in facts:
            chain.append(facts[chain[-1].replaced_by])
        return chain

    def active(self) -> list[Fact]:
        return [f for f in self.fold.facts.values() if f.valid()]

    def close(self) -> None:
        self._fts.close()
        self._cache.close()


class Defaults(list[str]):
    """What one record held that did not fit, each read as its default."""

    def note(self, name: str, why: str, value: Any, shown: str) -> Any:
        self.append(f"'{name}' {why} (read as {shown})")
        return value

    def text(self, r: dict[str, Any], name: str, limit: int = MAX_ID_CHARS) -> str | None:
        value = r.get(name)
        if value is None or (isinstance(value, str) and len(value) <= limit):
            return value
        return self.note(name, f"is not a string of up to {limit} characters", None, "none")

    def strings(self, r: dict[str, Any], name: str) -> list[str]:
        """Ids and keywords: a list of short strings (those that are not are left out)."""
        value = r.get(name, [])
        if not isinstance(value, list):
            return self.note(name, "is not a list", [], "[]")
        kept = [v for v in value if isinstance(v, str) and len(v) <= MAX_ID_CHARS]
        if len(kept) == len(value):
            return value
        why = f"holds what is not a string of up to {MAX_ID_CHARS} characters"
        return self.note(name, why, kept, "the rest")

    def tokens(self, r: dict[str, Any], name: str) -> int:
        value = r.get(name, 0)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53:
            return value
        return self.note(name, "is not a count", 0, "0")


def _fact(r: dict[str, Any], d: Defaults) -> Fact:
    """A fact record, its text and keywords within the limits of a model's answer."""
    fact_id, category, text = r["id"], r["category"], r["fact"]
    if not (isinstance(fact_id, str) and len(fact_id) <= MAX_ID_CHARS and isinstance(text, str)
            and category in CATEGORIES):  # fmt: skip
        raise ValueError("a fact needs a string 'id' and 'fact' and a known 'category'")
    if len(text) > facts_log.MAX_FACT_CHARS:
        text = d.note("fact", f"is over {facts_log.MAX_FACT_CHARS} characters",
                      text[: facts_log.MAX_FACT_CHARS], "its start")  # fmt: skip
    keywords = d.strings(r, "keywords")
    if len(keywords) > facts_log.MAX_KEYWORDS:
        keywords = d.note("keywords", f"holds more than {facts_log.MAX_KEYWORDS}",
                          keywords[: facts_log.MAX_KEYWORDS], "the first")  # fmt: skip
    valid_at, created_at = epoch(r.get("valid_at")), epoch(r.get("created_at"))
    if valid_at is None and created_at is None:
        raise ValueError("a fact needs 'valid_at' or 'created_at': ISO 8601, 1970-9999")
    if valid_at is None:
        valid_at = d.note("valid_at", "is not a timestamp from 1970 to 9999", created_at,
                          "created_at")  # fmt: skip
    if created_at is None:
        created_at = d.note("created_at", "is not a timestamp from 1970 to 9999", valid_at,
                            "valid_at")  # fmt: skip
    return Fact(fact_id, category, text, keywords, d.strings(r, "source_episode_ids"),
                valid_at, created_at, replaces=d.text(r, "replaces"),
                job=d.text(r, "job"))  # fmt: skip
