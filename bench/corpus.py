"""Large corpora made of LoCoMo conversation files, copied at run time into a temp dir.

Copy ``k`` of conversation ``s`` lives at ``corpus/copy-k/<sample_id>/daily/<date>.md``
(never under ``archive/``, which the lifecycle indexes apart from the notes);
files are added one by one until the sidecar's own chunker says the target
chunk count is reached (the daemon's ``total_chunks`` then confirms it).

``Replicator`` writes identical copies: at 100k chunks every chunk exists about 70
times, at 1M about 700 times, so every query's best scores tie many ways, which no
real workspace looks like (and which keeps an exact top-k from pruning anything).
``Varied`` writes copies that differ as separate conversations would while keeping
LoCoMo's vocabulary and lengths: each copy after the first renames the two speakers
from a pool of names, shifts the dates by a whole number of days, and keeps a seeded
random subset of each session's turns, shuffled, so its chunks are distinct.
"""

from __future__ import annotations

import datetime as dt
import random
import re
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
            out.append(SourceFile(corpus.sample_id, rel, text, _chunks(text, max_chars)))
    if not out or not any(f.chunks for f in out):
        raise ValueError("the LoCoMo corpora hold no text")
    return out


def _chunks(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> int:
    return sum(1 for c in chunk_markdown(text, max_chars).chunks if c.text)


class Replicator:
    """Grows a folder of copied conversation files; each call continues the last."""

    def __init__(self, sources: list[SourceFile], root: Path) -> None:
        self.sources = sources
        self.root = root
        self.size = CorpusSize()
        self._next = 0  # running index over (copy, source file)

    def copy_of(self, copy: int, src: SourceFile) -> SourceFile:
        """Copy number ``copy`` of a file: here the file itself."""
        return src

    def grow_to(self, target_chunks: int) -> CorpusSize:
        while self.size.chunks < target_chunks:
            copy, pos = divmod(self._next, len(self.sources))
            made = self.copy_of(copy, self.sources[pos])
            path = self.root / "corpus" / f"copy-{copy:03d}" / made.sample_id / made.rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = made.text.encode("utf-8")
            path.write_bytes(data)
            self.size.files += 1
            self.size.chunks += made.chunks
            self.size.bytes += len(data)
            self._next += 1
        return CorpusSize(self.size.files, self.size.chunks, self.size.bytes)


# Speakers of the copies: LoCoMo's own first names are among them, so a question naming
# one finds its conversation in some copies and others' in the rest.
NAMES = (
    "Abigail Adrian Aisha Alan Alice Amara Andre Angela Anika Arjun Audrey Beatrice Ben "
    "Bianca Bruno Caleb Camila Carlos Caroline Cecilia Chloe Colin Dana Daniel Daria Derek "
    "Diego Dmitri Elena Eli Elif Emma Enzo Erin Ethan Farah Felix Fiona Gabriel Gina Grace "
    "Hana Hannah Hector Helen Hugo Ida Imani Irene Isaac Ivan Jade Jamal Jasmine Jon Joanna "
    "John Jonas Julia Kai Karen Kenji Kira Lara Leo Leila Liam Lina Lucas Lucia Maria Marco "
    "Maya Melanie Mia Milan Nadia Nate Nina Noah Nora Olga Omar Oscar Paula Priya Quinn "
    "Rafael Rania Rosa Ruth Sam Sara Selin Simon Sofia Tara Theo Tim Tomas Una Uri Vera "
    "Victor Wanda Wei Yara Yusuf Zara Zoe"
).split()
MONTHS = ("January February March April May June July August September October November "
          "December").split()  # fmt: skip
KEEP = 0.8  # the share of a session's turns a copy keeps
_DATE = re.compile(r"\b(\d{1,2}) (" + "|".join(MONTHS) + r"), (\d{4})\b")
_FILE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SPEAKER = re.compile(r"^([^:\n]{1,40}): ", re.MULTILINE)


class Varied(Replicator):
    """Copies that differ (see the module's docstring); copy 0 is the file itself."""

    def __init__(self, sources: list[SourceFile], root: Path, seed: int = 34) -> None:
        super().__init__(sources, root)
        self.seed = seed
        found: dict[str, set[str]] = {}
        for s in sources:
            found.setdefault(s.sample_id, set()).update(_SPEAKER.findall(s.text))
        self.speakers = {sample: sorted(names) for sample, names in found.items()}

    def copy_of(self, copy: int, src: SourceFile) -> SourceFile:
        if copy == 0:
            return src
        conv = random.Random(f"{self.seed}:{copy}:{src.sample_id}")  # the same for a whole copy
        speakers = self.speakers[src.sample_id]
        names = dict(zip(speakers, conv.sample(NAMES, len(speakers)), strict=True))
        shift = dt.timedelta(days=conv.randrange(-3650, 3650))
        rng = random.Random(f"{self.seed}:{copy}:{src.sample_id}:{src.rel}")
        head, *turns = src.text.rstrip("\n").split("\n")
        kept = [t for t in turns if t and rng.random() < KEEP] or turns[:1]
        rng.shuffle(kept)
        text = "\n".join([_shift_dates(head, shift), *kept]) + "\n"
        if names:
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
            text = pattern.sub(lambda m: names[m.group(1)], text)
        rel = _FILE_DATE.sub(lambda m: str(dt.date.fromisoformat(m.group()) + shift), src.rel)
        return SourceFile(src.sample_id, rel, text, _chunks(text))


def _shift_dates(line: str, shift: dt.timedelta) -> str:
    def moved(m: re.Match[str]) -> str:
        day = dt.date(int(m.group(3)), MONTHS.index(m.group(2)) + 1, int(m.group(1))) + shift
        return f"{day.day} {MONTHS[day.month - 1]}, {day.year}"

    return _DATE.sub(moved, line)
