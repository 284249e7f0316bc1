"""Split a markdown file into heading-aware chunks with exact line ranges.

Chunks partition the file: the first starts at line 1, each next one starts
where the previous ended (or on the same line, when one over-long line is cut
into pieces), and the last ends on the file's last line. Line numbers are what
an agent passes to ``sed -n`` or ``memory.read``, so they count ``\\n`` only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

DEFAULT_MAX_CHARS = 800

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER_SCAN = 200  # lines; a front matter block longer than this is body text


@dataclass(frozen=True, slots=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    heading: str  # breadcrumb, e.g. "Decisions > Database"
    text: str  # the body text that is indexed


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
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_front_matter(lines: list[str]) -> tuple[int, dict[str, Any]]:
    """Return (number of front matter lines, metadata). Invalid YAML is kept as no metadata
    but its lines are still excluded from the body, since they are clearly not prose."""
    if not lines or lines[0].strip() != "---":
        return 0, {}
    for i in range(1, min(len(lines), _FRONT_MATTER_SCAN)):
        if lines[i].strip() in ("---", "..."):
            try:
                data = yaml.safe_load("\n".join(lines[1:i]))
            except yaml.YAMLError:
                data = None
            return i + 1, data if isinstance(data, dict) else {}
    return 0, {}


def _heading_of(line: str) -> tuple[int, str] | None:
    m = _HEADING.match(line)
    if not m:
        return None
    return len(m.group(1)), (m.group(2) or "").strip()


def _sections(lines: list[str], body_start: int) -> list[tuple[int, int, str]]:
    """(first index, end index exclusive, breadcrumb) per heading section.

    Headings inside fenced code blocks are code, not structure.
    """
    sections: list[tuple[int, int, str]] = []
    stack: list[tuple[int, str]] = []
    start, crumb = body_start, ""
    fence: str | None = None
    for i in range(body_start, len(lines)):
        line = lines[i]
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
        h = _heading_of(line)
        if h is None:
            continue
        if i > start:
            sections.append((start, i, crumb))
        level, title = h
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        crumb = " > ".join(t for _, t in stack if t)
        start = i
    if len(lines) > start:
        sections.append((start, len(lines), crumb))
    return sections


def _split_long_line(line: str, max_chars: int) -> list[str]:
    """Cut at whitespace near the cap when possible, else at a code point boundary."""
    pieces: list[str] = []
    rest = line
    while len(rest) > max_chars:
        cut = rest.rfind(" ", max_chars * 3 // 4, max_chars)
        cut = cut + 1 if cut > 0 else max_chars
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return pieces


def _pack(lines: list[str], lo: int, hi: int, max_chars: int) -> list[tuple[int, int]]:
    """Group lines[lo:hi] into ranges of at most max_chars, preferring blank-line breaks.

    Paragraphs (runs ending in blank lines) are packed greedily; a paragraph that
    alone exceeds the cap is packed line by line.
    """
    paragraphs: list[tuple[int, int]] = []
    p = lo
    for i in range(lo, hi):
        if not lines[i].strip() and (i + 1 == hi or lines[i + 1].strip()):
            paragraphs.append((p, i + 1))
            p = i + 1
    if p < hi:
        paragraphs.append((p, hi))

    def size(a: int, b: int) -> int:
        return sum(len(lines[k]) for k in range(a, b)) + (b - a - 1)

    units: list[tuple[int, int]] = []
    for a, b in paragraphs:
        if size(a, b) <= max_chars:
            units.append((a, b))
        else:
            units.extend((k, k + 1) for k in range(a, b))

    ranges: list[tuple[int, int]] = []
    cur_a, cur_b = units[0]
    for a, b in units[1:]:
        if size(cur_a, b) <= max_chars:
            cur_b = b
        else:
            ranges.append((cur_a, cur_b))
            cur_a, cur_b = a, b
    ranges.append((cur_a, cur_b))
    return ranges


def chunk_markdown(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> ParsedFile:
    """Parse front matter and cut the body into chunks of at most ``max_chars``."""
    if max_chars < 16:
        raise ValueError("max_chars must be at least 16")
    lines = split_lines(text)
    fm_lines, metadata = parse_front_matter(lines)
    chunks: list[Chunk] = []
    for s_lo, s_hi, crumb in _sections(lines, fm_lines):
        for a, b in _pack(lines, s_lo, s_hi, max_chars):
            if b - a == 1 and len(lines[a]) > max_chars:
                chunks.extend(
                    Chunk(a + 1, a + 1, crumb, piece)
                    for piece in _split_long_line(lines[a], max_chars)
                )
            else:
                chunks.append(Chunk(a + 1, b, crumb, "\n".join(lines[a:b]).strip()))
    return ParsedFile(metadata, _absorb_blank_chunks(chunks, len(lines)), len(lines))


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
