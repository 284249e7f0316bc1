"""The benchmark's large corpora: identical copies (``Replicator``) and copies that differ
as separate conversations would (``Varied``), which the scale tables measure.

The conversations here are made up in LoCoMo's shape (a session header with its date,
then one turn a line), so the checks run without the LoCoMo data."""

from __future__ import annotations

import random
import re
import statistics
from pathlib import Path

from bench.corpus import MONTHS, NAMES, Replicator, SourceFile, Varied
from sidecar.index.chunking import chunk_markdown

VOCABULARY = (
    "garden painting camping pottery guitar support group adoption counseling race "
    "charity beach kids dog book concert hiking bakery trip family work school"
).split()


def conversation(sample: str, speakers: tuple[str, str], day: int, rng: random.Random) -> str:
    head = f"## Session {day} (1:56 pm on {day} May, 2023)"
    turns = []
    for t in range(40):
        other = speakers[1 - t % 2]
        words = " ".join(rng.choices(VOCABULARY, k=rng.randint(6, 30)))
        turns.append(f"{speakers[t % 2]}: Hey {other}, {words}.")
    return "\n".join([head, *turns]) + "\n"


def sources() -> list[SourceFile]:
    rng = random.Random(7)
    out = []
    for sample, speakers in (("conv-1", ("Caroline", "Melanie")), ("conv-2", ("Jon", "Gina"))):
        for day in (3, 17, 28):
            text = conversation(sample, speakers, day, rng)
            chunks = sum(1 for c in chunk_markdown(text).chunks if c.text)
            out.append(SourceFile(sample, f"daily/2023-05-{day:02d}.md", text, chunks))
    return out


def chunk_texts(root: Path) -> list[str]:
    return [c.text for p in sorted(root.rglob("*.md"))
            for c in chunk_markdown(p.read_text()).chunks if c.text]  # fmt: skip


def test_replicated_copies_repeat_every_chunk(tmp_path: Path) -> None:
    src = sources()
    grown = Replicator(src, tmp_path).grow_to(10 * sum(s.chunks for s in src))
    texts = chunk_texts(tmp_path)
    assert len(texts) == grown.chunks and len(set(texts)) * 10 <= len(texts)


def test_varied_copies_are_distinct_deterministic_and_keep_the_vocabulary(tmp_path: Path) -> None:
    src = sources()
    target = 20 * sum(s.chunks for s in src)
    grown = Varied(src, tmp_path / "a").grow_to(target)
    again = Varied(src, tmp_path / "b").grow_to(target)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.md"))
    assert grown == again and grown.chunks >= target and len(files) == grown.files
    for rel in files:  # the same seed, the same bytes
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    texts = chunk_texts(tmp_path / "a")
    assert len(texts) == grown.chunks  # the count the target was reached by is the chunker's
    assert len(set(texts)) >= 0.95 * len(texts)  # chunks differ, not ~20 copies of each
    # copy 0 is the source itself; the others keep its words, renamed and redated
    for s in src:
        assert (tmp_path / "a" / "corpus" / "copy-000" / s.sample_id / s.rel).read_text() == s.text
    allowed = set(VOCABULARY) | set(NAMES) | set(MONTHS) | {"Hey", "Session", "pm", "on"}
    words = {w for t in texts for w in re.findall(r"[A-Za-z]+", t)}
    assert words <= allowed and len(words & set(NAMES)) > 10
    # lengths as the source's: chunks about as long, files a little shorter (turns dropped)
    source_lengths = [len(c.text) for s in src for c in chunk_markdown(s.text).chunks if c.text]
    assert abs(statistics.mean(len(t) for t in texts) / statistics.mean(source_lengths) - 1) < 0.1


def test_a_varied_copy_moves_its_dates_and_names_together(tmp_path: Path) -> None:
    src = sources()
    rep = Varied(src, tmp_path)
    copies = [rep.copy_of(copy, s) for copy in (1, 2) for s in src]
    for made in copies:
        head = made.text.splitlines()[0]
        match = re.search(r"on (\d+) (\w+), (\d{4})", head)
        assert match is not None
        day, month, year = int(match[1]), MONTHS.index(match[2]) + 1, int(match[3])
        assert made.rel == f"daily/{year:04d}-{month:02d}-{day:02d}.md"  # name and header agree
        speakers = set(re.findall(r"^(\w+): ", made.text, re.MULTILINE))
        assert len(speakers) == 2 and speakers <= set(NAMES)
    # a copy renames a conversation's speakers alike in every file, and copies differ
    by_copy = [{c.sample_id: set(re.findall(r"^(\w+): ", c.text, re.MULTILINE))
                for c in copies[i * len(src):(i + 1) * len(src)]} for i in (0, 1)]  # fmt: skip
    per_file = [set(re.findall(r"^(\w+): ", c.text, re.MULTILINE)) for c in copies[:3]]
    assert per_file[0] == per_file[1] == per_file[2]
    assert by_copy[0] != by_copy[1]
