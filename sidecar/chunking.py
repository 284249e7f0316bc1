"""Split a markdown file into heading-aware chunks with exact line ranges.

Chunks partition the file: the first starts at line 1, each next one starts
where the previous ended (or on the same line, when one over-long line is cut
into pieces), and the last ends on the file's last line. Line numbers are what
an agent passes to ``sed -n`` or ``memory.read``, so they count ``\\n`` only.
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

import yaml

DEFAULT_MAX_CHARS = 650

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# libyaml's loader is several times faster than the pure-Python one.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER_SCAN = 200  # lines; a front matter block longer than this is body text
# A line ending like this introduces what follows it (a question, "Options:").
_LEAD_IN = ("?", ":")
# Cost of cutting right after a lead-in line, in the units of _pack's size cost:
# one chunk as far off the target size as an empty one.
_LEAD_IN_COST = 1.0
_WINDOW = 32  # units either side of the best-sized chunk start that _pack considers


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
                data = yaml.load("\n".join(lines[1:i]), Loader=_YAML_LOADER)
            except (yaml.YAMLError, ValueError, RecursionError):
                data = None  # e.g. "date: 2026-13-45" fails in the timestamp constructor
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


def _is_regional_indicator(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def _continues_cluster(text: str, i: int) -> bool:
    """Would cutting before ``text[i]`` split what a reader sees as one character?

    Covers combining marks, variation selectors, emoji modifiers and tags, joiners,
    and the second half of a flag (a pair of regional indicators).
    """
    ch, prev = text[i], text[i - 1]
    if unicodedata.category(ch) in ("Mn", "Mc", "Me") or "\u200d" in (ch, prev):
        return True
    if "\U0001f3fb" <= ch <= "\U0001f3ff" or "\U000e0020" <= ch <= "\U000e007f":
        return True
    if _is_regional_indicator(ch) and _is_regional_indicator(prev):
        run = 0
        while i - 1 - run >= 0 and _is_regional_indicator(text[i - 1 - run]):
            run += 1
        return run % 2 == 1
    return False


def _split_long_line(line: str, max_chars: int) -> list[str]:
    """Cut at whitespace near the cap when possible, else between visible characters."""
    pieces: list[str] = []
    rest = line
    while len(rest) > max_chars:
        cut = rest.rfind(" ", max_chars * 3 // 4, max_chars)
        if cut > 0:
            cut += 1
        else:
            cut = max_chars
            while cut > 1 and _continues_cluster(rest, cut):
                cut -= 1
            if cut == 1:  # a cluster longer than the cap: code points are all we have
                cut = max_chars
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return pieces


def _units(lines: list[str], lo: int, hi: int, max_chars: int) -> list[tuple[int, int]]:
    """Paragraphs of lines[lo:hi] (runs ending in blank lines); a paragraph that alone
    exceeds the cap is broken into its lines."""
    paragraphs: list[tuple[int, int]] = []
    p = lo
    for i in range(lo, hi):
        if not lines[i].strip() and (i + 1 == hi or lines[i + 1].strip()):
            paragraphs.append((p, i + 1))
            p = i + 1
    if p < hi:
        paragraphs.append((p, hi))
    units: list[tuple[int, int]] = []
    for a, b in paragraphs:
        if sum(len(lines[k]) for k in range(a, b)) + (b - a - 1) <= max_chars:
            units.append((a, b))
        else:
            units.extend((k, k + 1) for k in range(a, b))
    return units


def _pack(lines: list[str], lo: int, hi: int, max_chars: int) -> list[tuple[int, int]]:
    """Group lines[lo:hi] into ranges of at most max_chars, cutting only between units.

    A section that needs k chunks is cut into k or more chunks of about equal size
    rather than filled greedily, which would leave a short tail with little context.
    Cutting right after a lead-in line (one ending in "?" or ":") costs as much as
    one extra chunk, so a question stays with its answer and "Next steps:" with its
    list. A blank line ends a paragraph unit, so cuts there are never lead-ins.
    """
    units = _units(lines, lo, hi, max_chars)
    # offset[k]: characters before lines[lo + k], one newline per line included
    offset = [0]
    for k in range(lo, hi):
        offset.append(offset[-1] + len(lines[k]) + 1)
    starts = [offset[a - lo] for a, _ in units]  # ascending

    def size(a: int, b: int) -> int:
        return offset[b - lo] - offset[a - lo] - 1

    if size(lo, hi) <= max_chars:
        return [(lo, hi)]
    count, cur_a = 1, units[0][0]
    for a, b in units[1:]:
        if size(cur_a, b) > max_chars:
            count, cur_a = count + 1, a
    target = size(lo, hi) / count

    # best[j]: least cost of cutting units[:j]. A chunk costs its squared relative
    # deviation from the target size, plus _LEAD_IN_COST if a lead-in line ends it.
    # Only starts within _WINDOW units of the one nearest the target size are tried,
    # which bounds the work on files of very many tiny lines.
    n = len(units)
    best = [0.0] + [math.inf] * n
    back = [0] * (n + 1)
    for j in range(1, n + 1):
        end = offset[units[j - 1][1] - lo]
        first = bisect_left(starts, end - 1 - max_chars)
        near = min(bisect_left(starts, end - 1 - target), j - 1)
        first = min(max(first, near - _WINDOW), j - 1)  # a lone over-long unit is its own chunk
        last = min(near + _WINDOW, j - 1)
        penalty = 0.0
        if j < n and lines[units[j - 1][1] - 1].rstrip().endswith(_LEAD_IN):
            penalty = _LEAD_IN_COST
        for i in range(first, last + 1):
            cost = best[i] + ((end - 1 - starts[i] - target) / target) ** 2 + penalty
            if cost < best[j]:
                best[j], back[j] = cost, i
    ranges: list[tuple[int, int]] = []
    j = n
    while j > 0:
        i = back[j]
        ranges.append((units[i][0], units[j - 1][1]))
        j = i
    return ranges[::-1]


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
