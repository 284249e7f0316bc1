"""Views of a text that the rules share, each computed once per text.

The skeleton (one lower-case ASCII byte per character, look-alike letters read
as Latin) lets rules find their literal anchors with ``bytes.find`` instead of
running regexes over the whole text; :class:`Doc` caches it, anchor offsets and
the lines around them. Excerpts render matched text safely for logs.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable
from functools import cached_property
from typing import AnyStr

from sidecar.safety import lazy_re
from sidecar.safety.rules import FILLERS, INVISIBLE_ANY, INVISIBLE_LEADS, VS, WORD_ANCHORS

EXCERPT_MAX = 80
_LINE_CAP = 2048  # characters either side of an anchor that count as "its line"

# --- skeleton -----------------------------------------------------------------------------------
#
# One lower-case ASCII byte per character of the text, so an offset in the
# skeleton is an offset in the text. Characters the skeleton cannot read become
# NUL. Look-alikes are read as the letter they imitate: leetspeak digits, the
# accented letters of the Windows Latin code pages, and the Cyrillic and Greek
# letters that are drawn like Latin ones. Each code page the text needs
# encodes it length-preservingly ("replace" gives one byte per unencodable
# character) and a table maps its bytes to skeleton bytes or NUL.

_LEET = dict(zip(b"013457", b"oieast", strict=True))

# Letters from other scripts drawn like Latin ones. Only look-alikes: folding a
# Russian or Greek sentence yields a mix of scripts, never an English phrase.
# (The look-alikes are the point of this table, hence the noqa.)
HOMOGLYPHS = {
    **dict(zip("аеёѐіїјкорсуүхѕһԁԛԝӏɡ", "aeeeiijkopcyyxshdqwlg", strict=True)),
    **dict(zip("АВЕЅІЈКМНОРСТУҮХԚԜӀ", "ABESIJKMHOPCTYYXQWI", strict=True)),
    **dict(zip("αεικνορτυχϲϳ", "aeikvoptuxcj", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),  # noqa: RUF001
    **dict(zip("ıȷɑɩօսᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "ijaiouabcdeghijklmnoprstuvwyz", strict=True)),
}


def _latin_letter(ch: str) -> int:
    """The lower-case ASCII letter ``ch`` is an accented form of, else 0."""
    base = unicodedata.normalize("NFKD", ch)[:1].lower()
    return ord(base) if base.isascii() and base.isalpha() else 0


def _ascii_table(*, question_mark: int) -> list[int]:
    table = list(range(128))
    for b in range(65, 91):
        table[b] = b + 32
    for digit, letter in _LEET.items():
        table[digit] = letter
    table[0] = 0
    table[ord("?")] = question_mark
    return table


def _codepage_table(codec: str) -> bytes:
    """Skeleton bytes for text encoded with ``codec``: letters read as Latin, the rest NUL."""
    table = _ascii_table(question_mark=0)
    for b in range(128, 256):
        ch = bytes([b]).decode(codec, errors="ignore")
        if not ch:
            table.append(0)
        elif ch in HOMOGLYPHS:
            table.append(ord(HOMOGLYPHS[ch].lower()))
        else:
            table.append(_latin_letter(ch))
    return bytes(table)


_ASCII_SKELETON = bytes(_ascii_table(question_mark=ord("?")) + [0] * 128)
CODE_PAGES = (
    # (code page, its skeleton table, UTF-8 lead bytes of the letters that make it worth
    # encoding the text with: U+00C0-00FF, U+0100-017F, U+0400-045F, U+0370-03FF)
    ("latin-1", _codepage_table("latin-1"), (b"\xc3",)),
    ("cp1250", _codepage_table("cp1250"), (b"\xc4", b"\xc5")),
    ("cp1251", _codepage_table("cp1251"), (b"\xd0", b"\xd1")),
    ("cp1253", _codepage_table("cp1253"), (b"\xcd", b"\xce", b"\xcf")),
)
_ASCII_BYTES = bytes(range(128))


def encodable(ch: str, codec: str) -> bool:
    """Whether code page ``codec`` holds ``ch``, i.e. the skeleton can read it."""
    try:
        ch.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def _skeleton(text: str, non_ascii: bytes) -> bytes:
    """The skeleton of ``text``; ``non_ascii`` is its non-ASCII characters in UTF-8."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SKELETON)
    pages = [(c, table) for c, table, leads in CODE_PAGES if any(b in non_ascii for b in leads)]
    if not pages:
        return text.encode("ascii", "replace").translate(_ASCII_SKELETON)
    # A real "?" must not look like the code pages' mark for "cannot encode".
    marked = text.replace("?", "\0")
    if len(pages) == 1:
        codec, table = pages[0]
        return marked.encode(codec, "replace").translate(table)
    # ASCII reads the same in every page, and any other character is a letter
    # in at most one of them, so OR-ing the pages' skeletons merges them.
    acc = 0
    for codec, table in pages:
        acc |= int.from_bytes(marked.encode(codec, "replace").translate(table), "big")
    return acc.to_bytes(len(text), "big")


# --- text helpers -------------------------------------------------------------------------------

# Printable by Python's reckoning yet drawn as nothing; spelled out in excerpts.
_HIDDEN_PRINTABLE = lazy_re.compile(f"[{VS}\u034f{FILLERS}]")


def excerpt(text: str) -> str:
    """A one-line, printable rendering of ``text``; hidden characters spelled as <U+XXXX>.

    The excerpt goes to logs and operators, so it must not carry the very
    characters (bidi overrides, zero-width joiners) that made the text suspect.
    """
    out = []
    for ch in text:
        if ch in "\t\r\n":
            out.append(" ")
        elif ch.isprintable() and not _HIDDEN_PRINTABLE.match(ch):
            out.append(ch)
        else:
            out.append(f"<U+{ord(ch):04X}>")
    flat = " ".join("".join(out).split())
    if len(flat) > EXCERPT_MAX:
        flat = flat[: EXCERPT_MAX - 1] + "…"
    return flat


def span_excerpt(text: str, start: int, end: int) -> str:
    """The match and what follows it on its line, so an operator sees the whole order."""
    limit = start + 2 * EXCERPT_MAX
    newline = text.find("\n", end, limit)
    stop = max(end, newline if newline >= 0 else min(len(text), limit))
    return excerpt(text[start:stop])


def _continued(text: str, newline: int) -> bool:
    """Whether the line break at ``newline`` is escaped by a backslash (shell continuation)."""
    k = newline - 1
    if k >= 0 and text[k] == "\r":
        k -= 1
    return k >= 0 and text[k] == "\\"


def line_bounds(text: str, pos: int) -> tuple[int, int]:
    """The shell line around ``pos`` (continuations joined), at most _LINE_CAP either side."""
    lo = max(0, pos - _LINE_CAP)
    i = text.rfind("\n", lo, pos)
    while i > lo and _continued(text, i):
        i = text.rfind("\n", lo, i)
    hi = min(len(text), pos + _LINE_CAP)
    j = text.find("\n", pos, hi)
    while j >= 0 and _continued(text, j):
        j = text.find("\n", j + 1, hi)
    return (lo if i < 0 else i + 1), (hi if j < 0 else j)


def between(text: str, pos: int, sep: str, cap: int) -> tuple[int, int]:
    """The span around ``pos`` up to the nearest ``sep`` either side, at most ``cap`` away."""
    lo = max(0, pos - cap)
    i = text.rfind(sep, lo, pos)
    hi = min(len(text), pos + cap)
    j = text.find(sep, pos, hi)
    return (lo if i < 0 else i + len(sep)), (hi if j < 0 else j)


def plain_line(text: str, pos: int) -> tuple[int, int]:
    """The physical line around ``pos``, at most _LINE_CAP either side."""
    return between(text, pos, "\n", _LINE_CAP)


_CONTINUATION = lazy_re.compile(r"\\\r?\n")
_LETTERS = bytes(b if 97 <= b <= 122 else 32 for b in range(256))
_WORD = lazy_re.compile(rb"[a-z]+")
_VOCABULARY_WORTH = 16384  # below this many characters, scanning the text is cheaper


def occurrences(haystack: AnyStr, needle: AnyStr) -> list[int]:
    """Every offset of ``needle``, overlapping ones included."""
    found, i = [], haystack.find(needle)
    while i >= 0:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


@functools.cache
def _longest_run(anchor: bytes) -> tuple[bytes, int] | None:
    """The anchor's longest run of letters and its offset in the anchor; None if it has none."""
    runs = list(_WORD.finditer(anchor))
    if not runs:
        return None
    best = max(runs, key=lambda m: len(m.group()))
    return best.group(), best.start()


class Doc:
    """One text being scanned, with the views rules share, each computed once."""

    def __init__(self, text: str, *, strict: bool = False) -> None:
        self.text = text
        self.strict = strict  # decoded from an encoding: commands count without an addressee
        self._found: dict[bytes, list[int]] = {}
        self.folded_hits: list[int] = []  # anchors seen only in look-alike letters
        self._shell_lines: dict[tuple[tuple[bytes, ...], Callable[[str], bool]], list[str]] = {}

    @cached_property
    def non_ascii_utf8(self) -> bytes:
        """Every non-ASCII character of the text in UTF-8, in order, without the ASCII between."""
        if self.text.isascii():
            return b""
        return self.text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)

    @cached_property
    def non_ascii(self) -> str:
        return self.non_ascii_utf8.decode("utf-8", "surrogatepass")

    @cached_property
    def non_ascii_lower(self) -> str:
        return self.non_ascii.lower()

    @cached_property
    def invisible(self) -> frozenset[str]:
        """The distinct invisible or format characters in the text."""
        raw = self.non_ascii_utf8
        if not any(b in raw for b in INVISIBLE_LEADS):
            return frozenset()
        return frozenset(INVISIBLE_ANY.findall(self.non_ascii))

    @cached_property
    def skeleton(self) -> bytes:
        return _skeleton(self.text, self.non_ascii_utf8)

    @cached_property
    def _word_index(self) -> dict[bytes, list[int]]:
        """Where each distinct word (run of letters) of the skeleton starts."""
        index: dict[bytes, list[int]] = {}
        for m in _WORD.finditer(self.skeleton.translate(_LETTERS)):
            index.setdefault(m.group(), []).append(m.start())
        return index

    @cached_property
    def word_starts(self) -> frozenset[bytes]:
        """The first three letters of every word of the skeleton (about 20 ms for 2 MB)."""
        if len(self.skeleton) >= _VOCABULARY_WORTH:
            return frozenset(w[:3] for w in self._word_index)  # built for the search anyway
        return frozenset(w[:3] for w in self.skeleton.translate(_LETTERS).split())

    @cached_property
    def _vocabulary(self) -> bytes:
        """The distinct words joined by spaces: kilobytes where the text may be megabytes."""
        return b" ".join(self._word_index)

    def _search(self, anchor: bytes) -> list[int]:
        """Every offset of ``anchor`` in a long skeleton, overlapping ones included.

        Searched through its words: any occurrence holds the anchor's longest
        run of letters inside one word, so only the words of the vocabulary
        holding that run are visited. A few hundred anchors, most absent, then
        cost no scan of the whole text each (2 MB: ~0.2 s a text, not ~0.6 s).
        """
        skeleton = self.skeleton
        run = _longest_run(anchor)
        if run is None:
            return occurrences(skeleton, anchor)
        part, k = run
        vocabulary, index, starts = self._vocabulary, self._word_index, set()
        j = vocabulary.find(part)
        while j >= 0:
            lo = vocabulary.rfind(b" ", 0, j) + 1
            hi = vocabulary.find(b" ", j)
            word = vocabulary[lo : hi if hi >= 0 else len(vocabulary)]
            shift = j - lo - k
            starts.update(
                p + shift
                for p in index[word]
                if p + shift >= 0 and skeleton.startswith(anchor, p + shift)
            )
            j = vocabulary.find(part, j + 1)
        return sorted(starts)

    def find(self, anchor: bytes) -> list[int]:
        """Offsets of ``anchor`` (lower-case ASCII) in the skeleton, i.e. in the text."""
        found = self._found.get(anchor)
        if found is not None:
            return found
        key = WORD_ANCHORS.get(anchor)
        if key is not None and key not in self.word_starts:
            found = []  # no word starts like this word anchor: nothing to find
        elif len(self.skeleton) < _VOCABULARY_WORTH:
            found = occurrences(self.skeleton, anchor)
        else:
            found = self._search(anchor)
        if found:
            plain, n, text = anchor.decode(), len(anchor), self.text
            self.folded_hits.extend(i for i in found if text[i : i + n].lower() != plain)
        self._found[anchor] = found
        return found

    def find_any(self, anchors: tuple[bytes, ...]) -> list[int]:
        if len(anchors) == 1:
            return self.find(anchors[0])
        return sorted({p for a in anchors for p in self.find(a)})

    def lines(self, anchors: tuple[bytes, ...], *, logical: bool = True) -> list[tuple[int, int]]:
        """Distinct line spans holding any of ``anchors``."""
        bounds = line_bounds if logical else plain_line
        spans: list[tuple[int, int]] = []
        for pos in self.find_any(anchors):
            if spans and spans[-1][0] <= pos < spans[-1][1]:
                continue
            spans.append(bounds(self.text, pos))
        return spans

    def shell_lines(self, anchors: tuple[bytes, ...], keep: Callable[[str], bool]) -> list[str]:
        """Shell lines holding any of ``anchors`` that ``keep`` accepts, each found once.

        Several rules read the same lines (three exfiltration rules read the
        lines that run a network sender), so they are computed once per text.
        Backslash continuations are joined, so a command split over lines is one line.
        """
        key = (anchors, keep)
        out = self._shell_lines.get(key)
        if out is None:
            out = []
            for start, end in self.lines(anchors):
                line = _CONTINUATION.sub(" ", self.text[start:end])
                if keep(line):
                    out.append(line)
            self._shell_lines[key] = out
        return out
