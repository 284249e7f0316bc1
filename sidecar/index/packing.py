"""Cutting a section too long for one chunk: where the cuts go, and over-long lines.

``pack`` groups a section's lines into chunks of a target size, cutting between
paragraphs (or lines) and not right after a lead-in; ``split_long_line`` cuts one line
longer than the cap between visible characters.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from bisect import bisect_left, bisect_right
from itertools import accumulate

# A line ending like this introduces what follows it (a question, "Options:").
_LEAD_IN = ("?", ":")
# pack aims every chunk at this fraction of the cap, and cutting right after a
# lead-in line costs _LEAD_IN_COST in the units of its size cost (one chunk about
# as far off the target as a chunk of a fifth of it).
_TARGET = 0.8
_LEAD_IN_COST = 1.5
# How far past a chunk's start pack looks before it commits to that chunk, in caps.
# This bounds what an append can move: only chunks starting within this distance of
# the old end of the section.
_HORIZON = 2.0
_WINDOW = 32  # units either side of the best-sized chunk start that pack tries


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


def split_long_line(line: str, max_chars: int) -> list[str]:
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


def pack(
    stripped: list[str], cum: list[int], lo: int, hi: int, max_chars: int
) -> list[tuple[int, int]]:
    """Group lines [lo, hi) into ranges of at most max_chars, cutting only between units.

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
