"""Split a markdown file into heading-aware chunks with exact line ranges.

Chunks partition the file: the first starts at line 1, each next one starts
where the previous ended (or on the same line, when one over-long line is cut
into pieces), and the last ends on the file's last line. Line numbers are what
an agent passes to ``sed -n`` or ``memory.read``, so they count ``\\n`` only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from itertools import accumulate
from typing import Any, NamedTuple

from sidecar.index.dates import canonical_dates, day_word, found_date, resolved
from sidecar.index.front_matter import parse_front_matter
from sidecar.index.packing import pack, split_long_line

DEFAULT_MAX_CHARS = 400

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_STRUCTURE_FIRST = " #`~"  # what a heading or fence line can start with
_YEAR = re.compile(r"\d{4}")
# Characters of neighbouring text folded into each side of a chunk's ``context``.
CONTEXT_CHARS = 400


class Chunk(NamedTuple):
    """A tuple: a note has several, made more than once each while its cuts settle, and a
    frozen dataclass costs several times as much to make."""

    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    heading: str  # breadcrumb, e.g. "Decisions > Database"
    text: str  # the body text that is indexed
    # Text of the lines around the chunk (see ``_with_context``): indexed with a low
    # weight so the chunk is found by what its neighbours say, never shown or charged.
    context: str = ""


@dataclass(slots=True)
class ParsedFile:
    metadata: dict[str, Any]
    chunks: list[Chunk] = field(default_factory=list)
    line_count: int = 0


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: a trailing newline ends the last line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _sections(lines: list[str], body_start: int) -> tuple[list[tuple[int, int, str]], set[int]]:
    """(first index, end index exclusive, breadcrumb) per heading section, and the indices
    of the heading lines. Headings inside fenced code blocks are code, not structure.
    """
    sections: list[tuple[int, int, str]] = []
    headings: set[int] = set()
    stack: list[tuple[int, str]] = []
    start, crumb = body_start, ""
    fence: str | None = None
    for i in range(body_start, len(lines)):
        line = lines[i]
        if not line or line[0] not in _STRUCTURE_FIRST:
            continue  # neither a heading nor a fence: most lines, skipped cheaply
        fm = _FENCE.match(line)
        if fm:
            marker = fm.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = _HEADING.match(line)
        if m is None:
            continue
        headings.add(i)
        if i > start:
            sections.append((start, i, crumb))
        level, title = len(m.group(1)), (m.group(2) or "").strip()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        crumb = " > ".join([t for _, t in stack if t])
        start = i
    if len(lines) > start:
        sections.append((start, len(lines), crumb))
    return sections, headings


def chunk_markdown(
    text: str, max_chars: int = DEFAULT_MAX_CHARS, day: date | None = None
) -> ParsedFile:
    """Parse front matter and cut the body into chunks of at most ``max_chars``. ``day``:
    the date the file is about (a daily log's name), for sections whose heading has none."""
    if max_chars < 16:
        raise ValueError("max_chars must be at least 16")
    lines = split_lines(text)
    fm_lines, metadata = parse_front_matter(lines)
    chunks: list[Chunk] = []
    sections, headings = _sections(lines, fm_lines)
    # Each line stripped, and the characters before each line: computed once per file,
    # not once per paragraph, chunk and neighbour that asks.
    stripped = list(map(str.strip, lines))
    cum = [0, *accumulate(map(len, lines))]
    for s_lo, s_hi, crumb in sections:
        if cum[s_hi] - cum[s_lo] + s_hi - s_lo - 1 <= max_chars:  # the section fits
            text = "\n".join(lines[s_lo:s_hi]).strip()
            chunks.append(Chunk(s_lo + 1, s_hi, crumb, text))
            continue
        for a, b in pack(stripped, cum, s_lo, s_hi, max_chars):
            if b - a == 1 and len(lines[a]) > max_chars:
                chunks.extend(
                    Chunk(a + 1, a + 1, crumb, piece)
                    for piece in split_long_line(lines[a], max_chars)
                )
            else:
                chunks.append(Chunk(a + 1, b, crumb, "\n".join(lines[a:b]).strip()))
    chunks = _fold_bare_headings(chunks, lines, stripped, headings, max_chars)
    chunks = _absorb_blank_chunks(chunks, len(lines))
    return ParsedFile(
        metadata, _with_context(chunks, lines, stripped, sections, headings, day), len(lines)
    )


def _with_context(
    chunks: list[Chunk],
    lines: list[str],
    stripped: list[str],
    sections: list[tuple[int, int, str]],
    headings: set[int],
    day: date | None = None,
) -> list[Chunk]:
    """Give each chunk the ``CONTEXT_CHARS`` of text either side of it in its section,
    and its dates in the form headings and questions write them (``_dates``).

    A small chunk is cheap for a reader with a budget, but alone it often lacks the
    words a question uses: a reply without the question it answers, an entry without
    the line naming its subject. Indexing its neighbours' words with a low weight finds
    it by them while its line range stays its own. Context stops at a heading (a new
    topic) and skips blank lines; a cut drops the partial word at its far end.
    """
    if not sections:
        return chunks
    neighbours = CONTEXT_CHARS > 0 and len(chunks) > 1
    body_start = sections[0][0]
    section_of = [0] * len(lines)  # index in ``sections`` of the section holding each line
    for k, (lo, hi, _) in enumerate(sections):
        section_of[lo:hi] = [k] * (hi - lo)
    text_from = [lo + (lo in headings) for lo, _, _ in sections]  # after its heading line
    out: list[Chunk] = []
    # The chunks of a section share its heading, and what its date gives them is found
    # once a heading, not once a chunk.
    by_heading: dict[str, tuple[date | None, str, str]] = {}
    for c in chunks:
        first, last = max(c.start_line - 1, body_start), c.end_line - 1
        if not c.text or first > last:
            out.append(c)
            continue
        context = ""
        if neighbours:
            before = _gather_before(stripped, first - 1, text_from[section_of[first]])
            after = _gather_after(stripped, last + 1, sections[section_of[last]][1])
            context = f"{before}\n{after}" if before and after else before or after
        dated = by_heading.get(c.heading)
        if dated is None:
            dated = by_heading[c.heading] = _heading_dates(c.heading, day)
        dates = _dates(c.text, *dated)
        if dates:
            context = f"{context}\n{dates}" if context else dates
        out.append(Chunk(c.start_line, c.end_line, c.heading, c.text, context))
    return out


def _heading_dates(heading: str, day: date | None) -> tuple[date | None, str, str]:
    """The date a section's chunks are about (its heading's, else ``day``, the file's), and
    the words to add to each: its month ("May 2023") unless the heading spells it, and its
    ``day_word``, the word a question naming that day in any form is searched with."""
    # every date ``found_date`` reads has a four-digit year: most headings have none
    when = found_date(heading) if _YEAR.search(heading) else None
    spelled = when is not None and when.strftime("%B").lower() in heading.lower()
    when = when or day
    month = f"{when.strftime('%B')} {when.year}" if when is not None and not spelled else ""
    return when, month, day_word(when) if when is not None else ""


def _dates(text: str, when: date | None, month: str, day: str) -> str:
    """A chunk's dates as words a question uses: "last month" under a heading dated 8 May
    2023 as "April 2023"; its section's ``month`` when the heading writes it without one
    ("2023-05-08 standup", or no date under a daily log's name) as "May 2023"; a date the
    text writes another way ("Aug 15th", "2023-05-03") as "15 August", "3 May 2023"; and
    the ``day_word`` of its section's ``day`` and of each day it names.
    ``when``: the date the chunk is about (``_heading_dates``)."""
    parts = [resolved(text, when)] if when is not None else []
    if month and month not in parts[0]:
        parts.append(month)
    if day and day not in parts[0]:
        parts.append(day)
    body = text if "#" not in text else "\n".join(
        line for line in text.split("\n") if not line.lstrip().startswith("#"))  # fmt: skip
    parts.append(canonical_dates(body, when))
    return " ".join(p for p in parts if p)


def _gather_before(stripped: list[str], i: int, lo: int) -> str:
    """Non-blank lines from ``i`` back to ``lo`` up to CONTEXT_CHARS, in file order; a cut
    keeps the end nearest the chunk, in whole words."""
    taken: list[str] = []
    room = CONTEXT_CHARS
    while i >= lo:
        line = stripped[i]
        i -= 1
        if not line:
            continue
        if room <= 0:
            break
        if len(line) > room:
            part = " ".join(line[len(line) - room :].split(" ")[1:]).strip()
            if part:
                taken.append(part)
            break
        taken.append(line)
        room -= len(line) + 1
    taken.reverse()
    return "\n".join(taken)


def _gather_after(stripped: list[str], i: int, end: int) -> str:
    """Non-blank lines from ``i`` up to ``end`` (exclusive) up to CONTEXT_CHARS; a cut
    keeps the start, in whole words."""
    taken: list[str] = []
    room = CONTEXT_CHARS
    while i < end:
        line = stripped[i]
        i += 1
        if not line:
            continue
        if room <= 0:
            break
        if len(line) > room:
            part = " ".join(line[:room].split(" ")[:-1]).strip()
            if part:
                taken.append(part)
            break
        taken.append(line)
        room -= len(line) + 1
    return "\n".join(taken)


def _only_headings(stripped: list[str], headings: set[int], a: int, b: int) -> tuple[bool, bool]:
    """(whether lines[a:b] has a non-blank line, whether every non-blank one is a heading)."""
    nonblank = False
    for i in range(a, b):
        if stripped[i]:
            nonblank = True
            if i not in headings:
                return True, False
    return nonblank, True


def _fold_bare_headings(
    chunks: list[Chunk],
    lines: list[str],
    stripped: list[str],
    headings: set[int],
    max_chars: int,
) -> list[Chunk]:
    """A chunk that is only headings carries no evidence, yet a hit on it costs budget: it
    joins the chunk it introduces (trailing ones join the chunk before them), whose text
    then starts with those headings, as context for ranking. The headings may take the
    joined text past the cap by their own length, up to one more cap: with small chunks
    the one a heading introduces is often near the cap already, and a heading line costs
    little. Headings longer than that, or in a file of nothing else, stay on their own."""
    out: list[Chunk] = []
    waiting: list[Chunk] = []  # bare-heading chunks waiting for their section
    for c in chunks:
        body, bare = _only_headings(stripped, headings, c.start_line - 1, c.end_line)
        if bare and (body or waiting):
            waiting.append(c)  # bare headings, and the blank lines among them
            continue
        if waiting and any(w.text.strip() for w in waiting):
            # the first piece of an over-long line takes the headings before its own text
            end = c.start_line - 1 if _is_piece(c, lines, max_chars) else c.end_line
            text = "\n".join(lines[waiting[0].start_line - 1 : end]).strip()
            if end < c.end_line:
                text += "\n" + c.text
            if len(text) <= len(c.text) + max_chars:
                c, waiting = Chunk(waiting[0].start_line, c.end_line, c.heading, text), []
        out += [*waiting, c]
        waiting = []
    if waiting and out and out[-1].text.strip():
        last = out[-1]
        text = "\n".join(lines[last.start_line - 1 : waiting[-1].end_line]).strip()
        # ``last`` may hold headings folded in already: one more cap in all, at most.
        fits = len(text) <= min(len(last.text), max_chars) + max_chars
        if fits and not _is_piece(last, lines, max_chars):
            out[-1], waiting = Chunk(last.start_line, waiting[-1].end_line, last.heading, text), []
    return out + waiting


def _is_piece(c: Chunk, lines: list[str], max_chars: int) -> bool:
    """Whether ``c`` is one piece of an over-long line (its text is not its whole line)."""
    return c.start_line == c.end_line and len(lines[c.start_line - 1]) > max_chars


def _absorb_blank_chunks(chunks: list[Chunk], line_count: int) -> list[Chunk]:
    """Fold whitespace-only chunks into a neighbour and stretch the first chunk to line 1,
    so every line (front matter included) has exactly one owner and no chunk is empty."""
    out: list[Chunk] = []
    pending_start: int | None = None
    for c in chunks:
        if not c.text.strip():
            if out:
                prev = out[-1]
                out[-1] = Chunk(prev.start_line, c.end_line, prev.heading, prev.text)
            elif pending_start is None:
                pending_start = c.start_line
            continue
        if pending_start is not None:
            c = Chunk(pending_start, c.end_line, c.heading, c.text)
            pending_start = None
        out.append(c)
    if out and out[0].start_line > 1:
        first = out[0]
        out[0] = Chunk(1, first.end_line, first.heading, first.text)
    if not out and line_count:
        out.append(Chunk(1, line_count, "", ""))
    return out
