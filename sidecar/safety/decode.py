"""Other readings of a text, for the scanner's second and third passes.

Pass 2 reads look-alike text as a person would (HTML entities decoded, fullwidth
and homoglyph letters made Latin, leetspeak and s p a c e d letters undone), but
only on the lines that hold such text, so ordinary prose costs nothing. Pass 3
decodes base64 blocks, so a payload cannot hide by being encoded.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
from collections.abc import Iterator

from sidecar.safety.rules import CF, L_WORDS, VS
from sidecar.safety.text import CODE_PAGES, HOMOGLYPHS, Doc, encodable, plain_line

_MIN_BASE64 = 40  # characters; shorter runs are identifiers, hashes and ids
_PRINTABLE_SHARE = 0.9  # of decoded characters, for a base64 block to count as text

# --- pass 2: look-alike text --------------------------------------------------------------------

# Characters the skeleton cannot read that still fold to ASCII letters or
# digits: fullwidth and mathematical alphanumerics, letter-like symbols,
# circled and squared letters, super/subscripts, small capitals, combining
# marks, and the homoglyphs no code page of ``text.CODE_PAGES`` holds. Fullwidth
# punctuation and circled digits, common in Japanese and Chinese text, are not
# among them.
_UNPAGED_HOMOGLYPHS = "".join(
    ch for ch in HOMOGLYPHS if not any(encodable(ch, c) for c, _, _ in CODE_PAGES)
)
_RARE_FOLDABLE = re.compile(
    "[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff\u2100-\u214f"
    "\u24b6-\u24e9\U0001f130-\U0001f189\u2070-\u209f\u1d00-\u1dbf\u0300-\u036f"
    f"{re.escape(_UNPAGED_HOMOGLYPHS)}]"
)
# Removed before matching: format characters, and the combining marks that put
# diacritics on Latin letters (after NFKD), plus variation selectors and CGJ.
_STRIP = re.compile(f"[{CF}\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f{VS}]+")
_HOMOGLYPH = re.compile(f"[{re.escape(''.join(HOMOGLYPHS))}]")
_SPACED_MASK = bytes(
    ord("a") if 97 <= b <= 122 else ord(" ") if b in b" .-_" else ord("#") for b in range(256)
)
_SPACED = re.compile(r"(?<![A-Za-z])(?:[A-Za-z][ .\-_]){3,}[A-Za-z](?![A-Za-z])")
_LEET_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z0-9]*?(?:[A-Za-z][A-Za-z0-9]*?[013457]|[013457][A-Za-z0-9]*?[A-Za-z])"
    r"[A-Za-z0-9]*"
)
_LEET_I = str.maketrans("013457", "oieast")
_LEET_L = str.maketrans("013457", "oleast")


def fold_confusables(text: str) -> str:
    """Text as a reader sees it: entities decoded, look-alike letters made Latin."""
    if "&" in text:
        text = html.unescape(text)
    # (str.translate with a dict costs ~150 ns a character; sub only pays per look-alike.)
    text = _HOMOGLYPH.sub(lambda m: HOMOGLYPHS[m.group()], unicodedata.normalize("NFKC", text))
    return _STRIP.sub("", unicodedata.normalize("NFKD", text))


def _unleet(m: re.Match[str]) -> str:
    token = m.group()
    as_l = token.translate(_LEET_L)
    return as_l if as_l.lower() in L_WORDS else token.translate(_LEET_I)


def fold_leet(text: str) -> str:
    """Undo "1gn0r3 4ll" and "i g n o r e"; only the phrase rules see this copy."""
    text = _LEET_TOKEN.sub(_unleet, text)
    return _SPACED.sub(lambda m: re.sub(r"[ .\-_]", "", m.group()), text)


def suspect_lines(doc: Doc) -> list[tuple[int, int]]:
    """Line spans worth reading again with look-alikes folded, merged and in order."""
    text, skeleton = doc.text, doc.skeleton
    spots = list(doc.folded_hits)
    for needle in (b"&#", b"&lt;", b"a a a a a"):
        hay = skeleton.translate(_SPACED_MASK) if needle == b"a a a a a" else skeleton
        i = hay.find(needle)
        while i >= 0:
            spots.append(i)
            i = hay.find(needle, text.find("\n", i) + 1 or len(text))
    if doc.non_ascii:
        for ch in set(_RARE_FOLDABLE.findall(doc.non_ascii)):
            i = text.find(ch)
            while i >= 0:
                spots.append(i)
                i = text.find(ch, text.find("\n", i) + 1 or len(text))
    spans: list[tuple[int, int]] = []
    for pos in sorted(spots):
        # The line and one line either side: a phrase may wrap.
        start, end = plain_line(text, pos)
        if start > 0:
            start = plain_line(text, start - 1)[0]
        if end < len(text):
            end = plain_line(text, end + 1)[1]
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


# --- pass 3: base64 -----------------------------------------------------------------------------

_B64_MASK = bytes(
    ord("A") if (97 <= b <= 122 or 48 <= b <= 57 or b in b"+/_-") else ord(" ") for b in range(256)
)
# A line of a wrapped block (PEM style, 64 or 76 characters a line), maybe quoted.
_B64_LINE = re.compile(r"[ \t>]*([A-Za-z0-9+/]{16,}={0,2})[ \t]*\r?")
_B64_RUN_END = re.compile(r"={0,2}")


def decoded_blocks(doc: Doc) -> Iterator[str]:
    """Text decoded from each base64 block of at least _MIN_BASE64 characters, in order.

    A block is a run of base64 characters, or consecutive lines that are
    nothing but base64 (a wrapped block, joined). Runs are found with one
    ``bytes.find`` for _MIN_BASE64 alphabet characters in a row.
    """
    text = doc.text
    mask = doc.skeleton.translate(_B64_MASK)  # the skeleton keeps every base64 character
    needle, covered, seen = b"A" * _MIN_BASE64, 0, set()
    i = mask.find(needle)
    while i >= 0:
        run_end = mask.find(b" ", i)
        run_end = len(text) if run_end < 0 else run_end
        run_end = _B64_RUN_END.match(text, run_end).end()
        start, end = i, run_end
        line_start, line_end = plain_line(text, i)
        if _B64_LINE.fullmatch(text, line_start, line_end):
            parts = [text[i:run_end]]
            up = line_start
            while up > 0:
                prev = text.rfind("\n", 0, up - 1) + 1
                m = _B64_LINE.fullmatch(text, prev, up - 1)
                if not m:
                    break
                parts.insert(0, m.group(1))
                start, up = prev, prev
            down = line_end
            while down < len(text):
                nxt = text.find("\n", down + 1)
                nxt = len(text) if nxt < 0 else nxt
                m = _B64_LINE.fullmatch(text, down + 1, nxt)
                if not m:
                    break
                parts.append(m.group(1))
                end = down = nxt
            block = "".join(parts)
        else:
            block = text[i:run_end]
        if start >= covered and block not in seen:
            seen.add(block)  # a fixture pasted into many notes is decoded once
            decoded = _decode_base64(block)
            if decoded is not None:
                yield decoded
        covered = max(covered, end)
        i = mask.find(needle, max(run_end, covered))


def _decode_base64(block: str) -> str | None:
    raw = block.rstrip("=").replace("-", "+").replace("_", "/")
    if len(raw) < _MIN_BASE64:
        return None
    if len(raw) % 4 == 1:
        raw = raw[:-1]
    try:
        decoded = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    readable = sum(1 for c in decoded if c.isprintable() or c in "\t\r\n")
    return decoded if decoded and readable >= _PRINTABLE_SHARE * len(decoded) else None
