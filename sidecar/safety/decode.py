r"""Other readings of a text, for the scanner's second and third passes.

Pass 2 reads look-alike text as a person would (HTML entities decoded, fullwidth
and homoglyph letters made Latin, leetspeak and s p a c e d letters undone), but
only on the lines that hold such text, so ordinary prose costs nothing. Pass 3
decodes base64 blocks, hex runs, ``\x`` escapes and percent-encoded lines, so a
payload cannot hide by being encoded.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Iterator

from sidecar.safety import lazy_re
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
_RARE_FOLDABLE = lazy_re.compile(
    "[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff\u2100-\u214f"
    "\u24b6-\u24e9\U0001f130-\U0001f189\u2070-\u209f\u1d00-\u1dbf\u0300-\u036f"
    f"{re.escape(_UNPAGED_HOMOGLYPHS)}]"
)
# Removed before matching: format characters, and the combining marks that put
# diacritics on Latin letters (after NFKD), plus variation selectors and CGJ.
_STRIP = lazy_re.compile(
    f"[{CF}\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f{VS}]+"
)
_HOMOGLYPH = lazy_re.compile(f"[{re.escape(''.join(HOMOGLYPHS))}]")
_SPACED_MASK = bytes(
    ord("a") if 97 <= b <= 122 else ord(" ") if b in b" .-_" else ord("#") for b in range(256)
)
_SPACED = lazy_re.compile(r"(?<![A-Za-z])(?:[A-Za-z][ .\-_]){3,}[A-Za-z](?![A-Za-z])")
_LEET_TOKEN = lazy_re.compile(
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
_B64_LINE = lazy_re.compile(r"[ \t>]*([A-Za-z0-9+/]{16,}={0,2})[ \t]*\r?")
_B64_RUN_END = lazy_re.compile(r"={0,2}")


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


# --- pass 3: hex, \x escapes, percent-encoding, short base64 after a decode cue ----------------

_MIN_HEX = 32  # hex digits (16 bytes); hashes and ids decode to binary and are dropped
_HEX_MASK = bytes(
    ord("A") if (48 <= b <= 57 or 65 <= b <= 70 or 97 <= b <= 102) else ord(" ") for b in range(256)
)
_X_ESCAPES = lazy_re.compile(r"(?:\\x[0-9a-fA-F]{2}){8,}")
_PERCENT = lazy_re.compile(r"%[0-9A-Fa-f]{2}")
# Letters and digits never need percent-encoding: encoding them is hiding them.
_PERCENT_UNRESERVED = lazy_re.compile(r"%(?:[46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9])")
_MIN_PERCENT = 3  # escapes on a line, for it to be read decoded
_PERCENT_RUN = lazy_re.compile(r"(?:%[0-9A-Fa-f]{2}|[\w.~+-])+")
# A short base64 run counts only on a line that says to decode it.
_DECODE_CUES = (b"base6", b"b6a", b"atob", b"decode", b"frombase")
_SHORT_BASE64 = lazy_re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/]{8,}={0,2}(?![\w+/=])")


def _text_of(raw: bytes) -> str | None:
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    readable = sum(1 for c in decoded if c.isprintable() or c in "\t\r\n")
    return decoded if decoded and readable >= _PRINTABLE_SHARE * len(decoded) else None


def _hex_runs(doc: Doc) -> Iterator[str]:
    text = doc.text
    mask = text.encode("ascii", "replace").translate(_HEX_MASK)
    needle, seen = b"A" * _MIN_HEX, set()
    i = mask.find(needle)
    while i >= 0:
        end = mask.find(b" ", i)
        end = len(text) if end < 0 else end
        run = text[i : end - (end - i) % 2]
        if run not in seen:
            seen.add(run)
            decoded = _text_of(bytes.fromhex(run))
            if decoded is not None:
                yield decoded
        i = mask.find(needle, end)
    i = text.find("\\x")
    while i >= 0:
        m = _X_ESCAPES.match(text, i)
        if m:
            decoded = _text_of(bytes.fromhex(m.group().replace("\\x", "")))
            if decoded is not None:
                yield decoded
        i = text.find("\\x", m.end() if m else i + 2)


def _percent_lines(doc: Doc) -> Iterator[tuple[str, bool]]:
    """Lines with several percent escapes, decoded; strict when letters or digits were encoded."""
    text = doc.text
    i = text.find("%")
    while i >= 0:
        start, end = plain_line(text, i)
        line = text[start:end]
        if len(_PERCENT.findall(line)) >= _MIN_PERCENT:
            hidden = bool(_PERCENT_UNRESERVED.search(line))
            yield urllib.parse.unquote(line), hidden
            if hidden:  # each encoded run alone too, so an order inside a URL opens its text
                for run in _PERCENT_RUN.findall(line):
                    if len(_PERCENT.findall(run)) >= _MIN_PERCENT:
                        yield urllib.parse.unquote(run), True
        i = text.find("%", end)


def _short_base64(doc: Doc) -> Iterator[str]:
    text = doc.text
    for start, end in doc.lines(_DECODE_CUES, logical=False):
        for m in _SHORT_BASE64.finditer(text, start, end):
            if len(m.group()) < _MIN_BASE64:  # longer runs are decoded_blocks' job
                raw = m.group().rstrip("=")
                raw = raw[: len(raw) - len(raw) % 4] if len(raw) % 4 == 1 else raw
                try:
                    data = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
                except (binascii.Error, ValueError):
                    continue
                decoded = _text_of(data)
                if decoded is not None and " " in decoded:
                    yield decoded


def decoded_payloads(doc: Doc) -> Iterator[tuple[str, str, bool]]:
    """(encoding, decoded text, strict) for every encoded run worth reading again, in order.

    Base64 blocks come first (see :func:`decoded_blocks`), then short base64
    runs on a line that decodes them, hex runs and ``\\x`` escapes, then
    percent-encoded lines. Strict texts are judged as orders whatever their
    wording: nobody encodes ``rm -rf ~`` to document it.
    """
    for decoded in decoded_blocks(doc):
        yield "base64", decoded, True
    for decoded in _short_base64(doc):
        yield "base64", decoded, True
    for decoded in _hex_runs(doc):
        yield "hex", decoded, True
    for decoded, strict in _percent_lines(doc):
        yield "urlencoded", decoded, strict
