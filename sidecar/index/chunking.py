"""Split a markdown file into heading-aware chunks with exact line ranges.

Chunks partition the file: the first starts at line 1, each next one starts
where the previous ended (or on the same line, when one over-long line is cut
into pieces), and the last ends on the file's last line. Line numbers are what
an agent passes to ``sed -n`` or ``memory.read``, so they count ``\\n`` only.
"""

from __future__ import annotations

import datetime
import functools
import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, NamedTuple

import yaml

from sidecar import strict_yaml

DEFAULT_MAX_CHARS = 400

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_STRUCTURE_FIRST = " #`~"  # what a heading or fence line can start with
_FRONT_MATTER_SCAN = 200  # lines; a front matter block longer than this is body text
# The common front matter, flat ``key: value`` lines, read without YAML (see
# ``_flat_front_matter``): ASCII only, and only what YAML's resolvers read one way.
_FLAT_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): (.+)")
_FLAT_TEXT = re.compile(r"[A-Za-z](?:[A-Za-z0-9 _.'()/-]*[A-Za-z0-9_.'()/-])?")
_FLAT_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_FLAT_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_FLAT_INT = re.compile(r"0|[1-9][0-9]*")
# Words YAML 1.1 reads as booleans or null, whatever their case here: left to YAML.
_FLAT_RESERVED = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})
# A line ending like this introduces what follows it (a question, "Options:").
_LEAD_IN = ("?", ":")
# _pack aims every chunk at this fraction of the cap, and cutting right after a
# lead-in line costs _LEAD_IN_COST in the units of its size cost (one chunk about
# as far off the target as a chunk of a fifth of it).
_TARGET = 0.8
_LEAD_IN_COST = 1.5
# How far past a chunk's start _pack looks before it commits to that chunk, in caps.
# This bounds what an append can move: only chunks starting within this distance of
# the old end of the section.
_HORIZON = 2.0
_WINDOW = 32  # units either side of the best-sized chunk start that _pack tries
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


def parse_front_matter(lines: list[str]) -> tuple[int, dict[str, Any]]:
    """Return (number of front matter lines, metadata). Invalid YAML is kept as no metadata
    but its lines are still excluded from the body, since they are clearly not prose."""
    if not lines or lines[0].strip() != "---":
        return 0, {}
    for i in range(1, min(len(lines), _FRONT_MATTER_SCAN)):
        if lines[i].strip() in ("---", "..."):
            flat = _flat_front_matter(lines, 1, i)
            if flat is not None:
                return i + 1, flat
            try:
                data = strict_yaml.load("\n".join(lines[1:i]))  # no anchors, no aliases
            except (yaml.YAMLError, ValueError, RecursionError):
                data = None  # e.g. "date: 2026-13-45" fails in the timestamp constructor
            return i + 1, data if isinstance(data, dict) else {}
    return 0, {}


def _flat_value(text: str) -> Any:
    """``text`` as YAML reads a plain scalar or flow list, for the forms where that is
    certain; ``_FLAT_RESERVED`` (never its value) when it is not."""
    if _FLAT_TEXT.fullmatch(text):
        return _FLAT_RESERVED if text.lower() in _FLAT_RESERVED else text
    if _FLAT_INT.fullmatch(text):
        return int(text)
    m = _FLAT_DATE.fullmatch(text)
    if m:
        try:
            return datetime.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:  # YAML fails on it too; let it decide what that means
            return _FLAT_RESERVED
    if text[:1] == "[" and text[-1:] == "]":
        items = text[1:-1].split(", ") if len(text) > 2 else []
        for item in items:
            if not _FLAT_WORD.fullmatch(item) or item.lower() in _FLAT_RESERVED:
                return _FLAT_RESERVED
        return items
    return _FLAT_RESERVED


def _flat_front_matter(lines: list[str], lo: int, hi: int) -> dict[str, Any] | None:
    """lines[lo:hi] read as YAML would if every one is a flat ``key: value`` line of the
    forms ``_flat_value`` knows (a title, a date, a list of tags); None for anything
    else, which YAML reads. YAML's Python constructor costs more than chunking the
    whole note, and most front matter is this simple."""
    data: dict[str, Any] = {}
    for i in range(lo, hi):
        m = _FLAT_LINE.fullmatch(lines[i])
        if m is None:
            return None
        key = m[1]
        if key in data or key.lower() in _FLAT_RESERVED:
            return None
        value = _flat_value(m[2])
        if value is _FLAT_RESERVED:
            return None
        data[key] = value
    return data


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


def _units(
    stripped: list[str], cum: list[int], lo: int, hi: int, max_chars: int
) -> list[tuple[int, int]]:
    """Paragraphs of lines[lo:hi] (runs ending in blank lines); a paragraph that alone
    exceeds the cap is broken into its lines. ``stripped`` holds each line stripped and
    ``cum`` the characters before each line (see ``_Lines``)."""
    paragraphs: list[tuple[int, int]] = []
    p = lo
    after_blank = False
    for k in range(lo, hi):
        if not stripped[k]:
            after_blank = True
        elif after_blank:  # the first line after blank ones starts a paragraph
            paragraphs.append((p, k))
            p, after_blank = k, False
    paragraphs.append((p, hi))
    units: list[tuple[int, int]] = []
    for a, b in paragraphs:
        if cum[b] - cum[a] + (b - a - 1) <= max_chars:
            units.append((a, b))
        else:
            units.extend(zip(range(a, b), range(a + 1, b + 1), strict=True))
    return units


def _pack(
    lines: list[str], stripped: list[str], cum: list[int], lo: int, hi: int, max_chars: int
) -> list[tuple[int, int]]:
    """Group lines[lo:hi] into ranges of at most max_chars, cutting only between units.

    Chunks aim at a fixed target size (``_TARGET`` of the cap) rather than being
    filled greedily, which would leave a short tail with little context. Cutting right
    after a lead-in line (one ending in "?" or ":") costs about as much as one badly
    sized chunk, so a question stays with its answer and "Next steps:" with its list.
    A blank line ends a paragraph unit, so cuts there are never lead-ins.

    Cuts are chosen one chunk at a time with bounded look-ahead, so appending lines to
    a section moves only its last two or three chunks (the index rewrites only those):
    from a chunk's start, the best cuts of the next ``_HORIZON`` caps are found by
    dynamic programming, the path with the least cost per target length is taken and
    only its first chunk is kept. Once the end of the section is in view, the rest is
    cut exactly.
    """
    if cum[hi] - cum[lo] + hi - lo - 1 <= max_chars:  # the whole section fits
        return [(lo, hi)]
    units = _units(stripped, cum, lo, hi, max_chars)
    n = len(units)
    # sig[k]: characters of unit k with one newline per line, negated for a lead-in
    sig: list[int] = []
    for a, b in units:
        size = cum[b] - cum[a] + b - a
        sig.append(-size if stripped[b - 1].endswith(_LEAD_IN) else size)
    ends = list(accumulate(map(abs, sig)))  # characters through unit k
    horizon = _HORIZON * max_chars
    ranges: list[tuple[int, int]] = []
    i = start = 0
    while True:
        w = bisect_right(ends, start + horizon, i)  # units [i, w) are in view
        if w >= n:  # the end of the section is in view: cut the rest exactly
            cuts = _cut_exactly(sig[i:], max_chars)
            ranges.extend((units[i + a][0], units[i + b - 1][1]) for a, b in cuts)
            return ranges
        f = _first_cut(tuple(sig[i : max(w, i + 1)]), max_chars)
        ranges.append((units[i][0], units[i + f - 1][1]))
        i += f
        start = ends[i - 1]


def _best_paths(
    sizes: list[int], lead: list[bool], max_chars: int, final: bool
) -> tuple[list[float], list[int]]:
    """best[j]: least cost of cutting the first j units into chunks; back[j]: where the
    last of those chunks starts. A chunk costs its squared relative deviation from the
    target size, plus _LEAD_IN_COST if it ends right after a lead-in line (unless it
    ends the section: ``final`` and j is the last unit)."""
    target = _TARGET * max_chars
    n = len(sizes)
    starts = [0, *accumulate(sizes)]
    best = [0.0] * (n + 1)
    back = [0] * (n + 1)
    for j in range(1, n + 1):
        end = starts[j] - 1 - target
        # Chunks may start from m_lo (not over the cap; a lone over-long unit is its own
        # chunk); with many tiny units, only those within _WINDOW units of the start
        # that gives the target size are tried.
        m_hi = j - 1
        m_lo = bisect_left(starts, starts[j] - 1 - max_chars, 0, m_hi)
        if m_hi - m_lo > 2 * _WINDOW:
            near = bisect_left(starts, end, m_lo, m_hi)
            m_lo, m_hi = max(m_lo, near - _WINDOW), min(m_hi, near + _WINDOW)
        cost, arg = math.inf, m_hi
        for m in range(m_hi, m_lo - 1, -1):
            d = (end - starts[m]) / target
            c = best[m] + d * d
            if c < cost:
                cost, arg = c, m
        if lead[j - 1] and not (final and j == n):
            cost += _LEAD_IN_COST
        best[j], back[j] = cost, arg
    return best, back


@functools.lru_cache(maxsize=4096)
def _first_cut(sig: tuple[int, ...], max_chars: int) -> int:
    """How many of the units in view (sizes, negated for lead-ins) the next chunk takes:
    the first chunk of the cheapest path per target length among those whose last cut
    could still be followed by one more chunk past the view.

    Cached: it depends only on the view, and an append changes only the views near the
    end of a section, so re-chunking a file after an append is mostly cache hits."""
    sizes = [abs(s) for s in sig]
    best, back = _best_paths(sizes, [s < 0 for s in sig], max_chars, final=False)
    target = _TARGET * max_chars
    reach = _HORIZON * max_chars - max_chars
    f, rate, end = len(sizes), math.inf, 0
    for j, size in enumerate(sizes, start=1):
        end += size
        if end - 1 > reach:
            r = best[j] * target / end
            if r < rate:
                f, rate = j, r
    while back[f]:
        f = back[f]
    return f


def _cut_exactly(sig: list[int], max_chars: int) -> list[tuple[int, int]]:
    """The cheapest cuts of units that end the section, as (first, end) unit indices."""
    _, back = _best_paths([abs(s) for s in sig], [s < 0 for s in sig], max_chars, True)
    cuts = []
    j = len(sig)
    while j:
        cuts.append((back[j], j))
        j = back[j]
    return cuts[::-1]


def chunk_markdown(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> ParsedFile:
    """Parse front matter and cut the body into chunks of at most ``max_chars``."""
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
        for a, b in _pack(lines, stripped, cum, s_lo, s_hi, max_chars):
            if b - a == 1 and len(lines[a]) > max_chars:
                chunks.extend(
                    Chunk(a + 1, a + 1, crumb, piece)
                    for piece in _split_long_line(lines[a], max_chars)
                )
            else:
                chunks.append(Chunk(a + 1, b, crumb, "\n".join(lines[a:b]).strip()))
    chunks = _fold_bare_headings(chunks, lines, stripped, headings, max_chars)
    chunks = _absorb_blank_chunks(chunks, len(lines))
    return ParsedFile(
        metadata, _with_context(chunks, lines, stripped, sections, headings), len(lines)
    )


def _with_context(
    chunks: list[Chunk],
    lines: list[str],
    stripped: list[str],
    sections: list[tuple[int, int, str]],
    headings: set[int],
) -> list[Chunk]:
    """Give each chunk the ``CONTEXT_CHARS`` of text either side of it in its section.

    A small chunk is cheap for a reader with a budget, but alone it often lacks the
    words a question uses: a reply without the question it answers, an entry without
    the line naming its subject. Indexing its neighbours' words with a low weight finds
    it by them while its line range stays its own. Context stops at a heading (a new
    topic) and skips blank lines; a cut drops the partial word at its far end.
    """
    if CONTEXT_CHARS <= 0 or len(chunks) < 2 or not sections:
        return chunks
    body_start = sections[0][0]
    section_of = [0] * len(lines)  # index in ``sections`` of the section holding each line
    for k, (lo, hi, _) in enumerate(sections):
        section_of[lo:hi] = [k] * (hi - lo)
    text_from = [lo + (lo in headings) for lo, _, _ in sections]  # after its heading line
    out: list[Chunk] = []
    for c in chunks:
        first, last = max(c.start_line - 1, body_start), c.end_line - 1
        if not c.text or first > last:
            out.append(c)
            continue
        before = _gather_before(stripped, first - 1, text_from[section_of[first]])
        after = _gather_after(stripped, last + 1, sections[section_of[last]][1])
        context = f"{before}\n{after}" if before and after else before or after
        out.append(Chunk(c.start_line, c.end_line, c.heading, c.text, context))
    return out


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
