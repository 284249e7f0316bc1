"""The invisible-character rules: which occurrences of an invisible character count.

Zero-width joiners, variation selectors, tag characters and the like have
ordinary jobs (emoji sequences, Persian and Indic letter forms, subdivision
flags); each :class:`~sidecar.safety.rules.Excuse` names one, and a character
doing its job is let through.
"""

from __future__ import annotations

from collections.abc import Callable

from sidecar.safety.rules import BIDI, TAG_FLAG, TAGS, VARIATION, ZERO_WIDTH, Excuse, Invisible
from sidecar.safety.text import Doc, excerpt

_CONTEXT = 24  # characters either side of an invisible character in its excerpt


def _is_emoji(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2190 <= cp <= 0x21FF
        or 0x2300 <= cp <= 0x23FF
        or 0x25A0 <= cp <= 0x27BF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
    )


def _is_joining_script(ch: str) -> bool:
    """Scripts where ZWNJ/ZWJ between letters picks letter forms (Arabic, Syriac, Indic, ...)."""
    cp = ord(ch)
    return 0x0600 <= cp <= 0x0DFF or 0x0F00 <= cp <= 0x0FFF or 0xFB50 <= cp <= 0xFDFF


def _is_rtl(ch: str) -> bool:
    cp = ord(ch)
    return 0x0590 <= cp <= 0x08FF or 0xFB1D <= cp <= 0xFDFF or 0xFE70 <= cp <= 0xFEFC


def _zero_width_allowed(text: str, i: int) -> bool:
    """Whether the zero-width character at ``text[i]`` is doing its ordinary job.

    ZWJ glues emoji into one glyph (👩‍💻) and, like ZWNJ, selects letter forms in
    Persian and Indic text; LRM/RLM/ALM order numbers and punctuation inside
    right-to-left text; a BOM opens files saved by some Windows editors.
    Anywhere else these characters only serve to split a word so that a filter
    misses it.
    """
    ch = text[i]
    if ch == "\ufeff":
        return i == 0
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if ch in "\u200d\u200c" and before and after:
        if ch == "\u200d":
            j = i - 1
            while j > 0 and (text[j] in "\ufe0e\ufe0f" or 0x1F3FB <= ord(text[j]) <= 0x1F3FF):
                j -= 1
            if _is_emoji(text[j]) and _is_emoji(after):
                return True
        return _is_joining_script(before) and _is_joining_script(after)
    if ch in "\u200e\u200f\u061c":
        return any(_is_rtl(c) for c in text[max(0, i - 3) : i] + text[i + 1 : i + 4])
    return False


def _in_tag_flag(text: str, i: int) -> bool:
    """Whether the tag character at ``text[i]`` spells part of an emoji subdivision flag."""
    start = text.rfind("\U0001f3f4", max(0, i - 8), i)
    flag = TAG_FLAG.match(text, start) if start >= 0 else None
    return flag is not None and i < flag.end()


def _selects_presentation(text: str, i: int) -> bool:
    """One selector after anything but an ASCII letter: an emoji or text style, as designed."""
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    return not ((before.isascii() and before.isalpha()) or bool(VARIATION.match(after)))


def _judged_by_own_rule(text: str, i: int) -> bool:
    """Tag, bidi and zero-width characters have earlier rules of their own; judged there."""
    return bool(TAGS.match(text, i) or BIDI.match(text, i) or ZERO_WIDTH.match(text, i))


_EXCUSES: dict[Excuse, Callable[[str, int], bool]] = {
    Excuse.EMOJI_TAG_FLAG: _in_tag_flag,
    Excuse.ORDINARY_ZERO_WIDTH: _zero_width_allowed,
    Excuse.PRESENTATION_SELECTOR: _selects_presentation,
    Excuse.OWN_RULE: _judged_by_own_rule,
}


def invisible_excerpt(check: Invisible, doc: Doc) -> str | None:
    """The first occurrence of the check's characters that no excuse covers, with context."""
    excused = None if check.excused is None else _EXCUSES[check.excused]
    present = [c for c in doc.invisible if check.chars.match(c)]
    text, first = doc.text, -1
    for ch in present:
        i = text.find(ch)
        while i >= 0 and (first < 0 or i < first):
            if excused is None or not excused(text, i):
                first = i
                break
            i = text.find(ch, i + 1)
    if first < 0:
        return None
    return excerpt(text[max(0, first - _CONTEXT) : first + 1 + _CONTEXT])
