"""Text from memory can never open, close or imitate a section of the memory block.

Every piece of text the block shows (a note, a search hit, a learning, a fact a model
distilled, a journal event, a title made from a file name) goes through
:func:`neutralise` first. What looks like one of the block's own markers, a bracketed
label in capitals (``[END KNOWN FACTS]``, ``[OPERATOR MODEL]``), a section's name or a
note of the block's in any case (``[operator model]``, ``[BLOCKED: ...``, ``[… truncated:
...``), a ``<recalled-memory>`` tag or a ``--- title ---`` section header line, is shown in
parentheses instead, so the words stay readable and the structure stays the daemon's.
A marker is judged as a reader sees it: a line ends at any line break (CR, U+2028...),
invisible format characters (zero-width, bidi) are not there and any dash is a dash.
"""

from __future__ import annotations

import re
import unicodedata

_BRACKETED = re.compile("[\\[\uff3b]([^\\]\\[\uff3b\uff3d\n]{1,200})[\\]\uff3d]")  # and fullwidth
# The block's notes and section names, in any case ("[end known facts]", "[Operator model]").
_OWN_NOTE = re.compile(
    r"\s*(?:…|\.\.\.|(?:end|blocked|withheld|memory|agent\s+memory|crew\s+shared|operator\s+model"
    r"|relevant\s+memory|recalled\s+memory|known\s+facts|(?:institutional\s+)?learnings)\b)",
    re.IGNORECASE,
)
# The tag with attributes too (``<recalled-memory source="operator">``).
_TAG = re.compile(r"<\s*(/\s*)?(recalled-memory)\b([^<>\n]{0,200})>", re.IGNORECASE)
_DASH_CHARS = "\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d"
_DASHES = str.maketrans(dict.fromkeys(_DASH_CHARS, "-"))
# Format characters (Unicode category Cf), so that a line is judged without reading every
# character of it on the event loop: only one that opens with three dashes is read closely.
_CF = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
_OPENS_WITH_DASHES = re.compile(f"[\\s{_CF}]*(?:[-{_DASH_CHARS}][{_CF}]*){{3}}")


def _seen(text: str) -> str:
    """``text`` as it reads: format characters dropped, dashes of any kind as ``-``."""
    if text.isascii():
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf").translate(_DASHES)


def _bracketed(m: re.Match[str]) -> str:
    inner = _seen(m.group(1))
    letters = [c for c in inner if c.isalpha()]
    capitals = len(letters) >= 3 and inner == inner.upper()
    return f"({inner})" if capitals or _OWN_NOTE.match(inner) else m.group(0)


def _header(line: str) -> str:
    """``--- title ---`` as ``(title)``; a rule (``---``) stays. Linear: a line of a
    100 KiB log may start with dashes. ``line`` keeps its line break."""
    if not _OPENS_WITH_DASHES.match(line):
        return line
    body = line.rstrip("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029")
    core = _seen(body).strip()
    title = core.strip("-").strip()
    if not (title and core.startswith("---") and core.endswith("---")):
        return line
    return f"{body[: len(body) - len(body.lstrip())]}({title}){line[len(body) :]}"


def neutralise(text: str) -> str:
    """``text`` with anything that could pass for a block marker put in parentheses."""
    if "-" in text or not text.isascii():
        text = "".join(map(_header, text.splitlines(keepends=True)))
    text = _TAG.sub(lambda m: f"({m.group(1) or ''}{m.group(2)}{m.group(3).rstrip()})", text)
    return _BRACKETED.sub(_bracketed, text)
