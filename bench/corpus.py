"""Large corpora made of LoCoMo conversation files, replicated at run time into a temp dir.

Copy ``k`` of conversation ``s`` lives at ``corpus/copy-k/<sample_id>/daily/<date>.md``
(never under ``archive/``, which the lifecycle indexes apart from the notes);
files are added one by one until the sidecar's own chunker says the target
chunk count is reached (the daemon's ``total_chunks`` then confirms it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.index.chunking import DEFAULT_MAX_CHARS, chunk_markdown


@dataclass(frozen=True, slots=True)
class SourceFile:
    sample_id: str
    rel: str  # e.g. daily/2023-05-08.md
    text: str
    chunks: int  # non-empty chunks the sidecar will store for this text


@dataclass(slots=True)
class CorpusSize:
    files: int = 0
    chunks: int = 0  # estimated with the sidecar's chunker
    bytes: int = 0


def source_files(corpora: list[Any], max_chars: int = DEFAULT_MAX_CHARS) -> list[SourceFile]:
    """One copy of every conversation file, in a stable order."""
    out: list[SourceFile] = []
    for corpus in corpora:
        for rel in sorted(corpus.files):
            text = corpus.file_text(rel)
            chunks = sum(1 for c in chunk_markdown(text, max_chars).chunks if c.text)
            out.append(SourceFile(corpus.sample_id, rel, text, chunks))
    if not out or not any(f.chunks for f in out):
        raise ValueError("the LoCoMo corpora hold no text")
    return out


class Replicator:
    """Grows a folder of replicated conversation files; each call continues the last."""

    def __init__(self, sources: list[SourceFile], root: Path) -> None:
        self.sources = sources
        self.root = root
        self.size = CorpusSize()
        self._next = 0  # running index over (copy, source file)

    def grow_to(self, target_chunks: int) -> CorpusSize:
        while self.size.chunks < target_chunks:
            copy, pos = divmod(self._next, len(self.sources))
            src = self.sources[pos]
            path = self.root / "corpus" / f"copy-{copy:03d}" / src.sample_id / src.rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = src.text.encode("utf-8")
            path.write_bytes(data)
            self.size.files += 1
            self.size.chunks += src.chunks
            self.size.bytes += len(data)
            self._next += 1
        return CorpusSize(self.size.files, self.size.chunks, self.size.bytes)
