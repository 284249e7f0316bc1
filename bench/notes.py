"""Synthetic but realistic markdown notes: front matter, headings, lists, prose, code, tables.

Deterministic for a given seed. Word frequencies follow a Zipf-like curve so
the FTS index sees a natural mix of common and rare terms.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from dataclasses import dataclass
from pathlib import Path

_WORDS = """
the service deploy config database migration schema index query cache latency request
response error retry timeout queue worker job batch stream event handler client server
user account session token auth permission role policy audit log metric trace alert
dashboard incident postmortem release branch commit review merge test fixture mock
build pipeline artifact container image cluster node pod volume network proxy gateway
endpoint route payload header cookie cors rate limit quota budget cost estimate plan
decision tradeoff option risk owner deadline milestone sprint backlog ticket issue bug
fix patch regression rollback canary flag feature experiment cohort funnel signup
checkout invoice payment refund customer support feedback survey interview persona
design mockup layout component button modal form validation input field table column
row page scroll search filter sort export import upload download file folder backup
restore snapshot replica shard partition lock transaction commit isolation consistency
throughput memory cpu disk bandwidth benchmark profile flamegraph hotspot allocation
leak garbage thread async await callback promise future coroutine scheduler cron daily
weekly monthly quarter roadmap goal objective result learning note summary followup
meeting agenda action item question answer idea draft proposal spec requirement
constraint assumption dependency library package version upgrade deprecate legacy
refactor cleanup rename module function class method interface protocol contract
compatible breaking change document readme guide tutorial onboarding handbook wiki
""".split()

_NAMES = """Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy
Rupert Sybil Trent Victor Walter Yara Zoe Priya Kenji Lena Omar Sofia Mateo Ingrid""".split()
_PROJECTS = """atlas beacon comet delta ember falcon granite harbor iris juniper kestrel lumen
meridian nimbus orion pioneer quartz raven sierra tundra""".split()
_LANGS = ("bash", "python", "sql", "yaml", "json", "")
_FOLDERS = ("daily", "projects", "topics", "meetings", "people")


@dataclass(frozen=True, slots=True)
class NotesSize:
    files: int
    bytes: int


class NoteWriter:
    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        weights = [1.0 / (rank + 1) ** 0.7 for rank in range(len(_WORDS))]
        self._cum = list(itertools.accumulate(weights))
        self._order = list(_WORDS)
        self.rng.shuffle(self._order)  # which words are common depends on the seed

    def words(self, n: int) -> list[str]:
        return self.rng.choices(self._order, cum_weights=self._cum, k=n)

    def sentence(self) -> str:
        words = self.words(self.rng.randint(6, 18))
        roll = self.rng.random()
        if roll < 0.15:
            words.insert(self.rng.randrange(len(words)), f"`{'_'.join(self.words(2))}()`")
        elif roll < 0.30:
            words.insert(self.rng.randrange(len(words)), self.rng.choice(_NAMES))
        elif roll < 0.40:
            words.insert(self.rng.randrange(len(words)), str(self.rng.randint(2, 5000)))
        text = " ".join(words)
        return text[0].upper() + text[1:] + self.rng.choice(".....?!")

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 5)))

    def bullets(self) -> str:
        marker = self.rng.choice(("- ", "* ", "- [ ] ", "- [x] ", "1. "))
        return "\n".join(f"{marker}{self.sentence()}" for _ in range(self.rng.randint(2, 6)))

    def code_block(self) -> str:
        lines = [
            " ".join(self.words(self.rng.randint(2, 7))) for _ in range(self.rng.randint(2, 6))
        ]
        return "\n".join([f"```{self.rng.choice(_LANGS)}", *lines, "```"])

    def table(self) -> str:
        cols = self.words(3)
        rows = [" | ".join(self.words(3)) for _ in range(self.rng.randint(2, 4))]
        return "\n".join(
            [f"| {' | '.join(cols)} |", "| --- | --- | --- |", *(f"| {r} |" for r in rows)]
        )

    def block(self) -> str:
        roll = self.rng.random()
        if roll < 0.50:
            return self.paragraph()
        if roll < 0.85:
            return self.bullets()
        if roll < 0.95:
            return self.code_block()
        return self.table()

    def heading(self, level: int) -> str:
        return "#" * level + " " + " ".join(self.words(self.rng.randint(1, 4))).title()

    def front_matter(self, title: str, day: dt.date) -> str:
        tags = ", ".join(dict.fromkeys(self.words(3)))
        return f"---\ntitle: {title}\ndate: {day.isoformat()}\ntags: [{tags}]\n---\n"

    def note(self, title: str, day: dt.date, target_bytes: int) -> str:
        parts = [self.front_matter(title, day)] if self.rng.random() < 0.4 else []
        parts.append(f"# {title}\n")
        while sum(len(p) + 1 for p in parts) < target_bytes:
            level = 2 if self.rng.random() < 0.7 else 3
            parts.append(self.heading(level) + "\n")
            for _ in range(self.rng.randint(1, 3)):
                parts.append(self.block() + "\n")
        return "\n".join(parts)

    def edit(self, text: str) -> str:
        """A small realistic change: append a bullet, rewrite a line, or insert a sentence."""
        lines = text.split("\n")
        body = [i for i, ln in enumerate(lines) if ln and not ln.startswith(("#", "---", "```"))]
        roll = self.rng.random()
        if roll < 0.4 or not body:
            return text.rstrip("\n") + f"\n- {self.sentence()}\n"
        i = self.rng.choice(body)
        if roll < 0.7:
            lines[i] = self.sentence()
        else:
            lines.insert(i + 1, self.sentence())
        return "\n".join(lines)

    def rel_path(self, i: int, day: dt.date, title: str) -> str:
        slug = "-".join(title.lower().split()[:4])
        folder = _FOLDERS[i % len(_FOLDERS)]
        if folder == "daily":
            return f"daily/{day.isoformat()}-{i:05d}.md"
        if folder == "projects":
            return f"projects/{self.rng.choice(_PROJECTS)}/{slug}-{i:05d}.md"
        if folder == "people":
            return f"people/{self.rng.choice(_NAMES).lower()}-{i:05d}.md"
        return f"{folder}/{slug}-{i:05d}.md"


def write_notes(root: Path, files: int, total_bytes: int, seed: int = 7) -> NotesSize:
    """Write ``files`` notes totalling about ``total_bytes`` (sizes vary lognormally)."""
    writer = NoteWriter(seed)
    start = dt.date(2024, 1, 1)
    written = 0
    for i in range(files):
        remaining = max(total_bytes - written, 200 * (files - i))
        mean = remaining / (files - i)
        target = int(min(max(mean * writer.rng.lognormvariate(-0.18, 0.6), 200), 10 * mean))
        title = " ".join(writer.words(writer.rng.randint(2, 5))).title()
        day = start + dt.timedelta(days=i % 700)
        path = root / writer.rel_path(i, day, title)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = writer.note(title, day, target).encode("utf-8")
        path.write_bytes(data)
        written += len(data)
    return NotesSize(files, written)
