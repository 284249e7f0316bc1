"""Text from memory can never open, close or imitate a section of the memory block.

Every piece of text the block shows (a note, a search hit, a learning, a fact a model
distilled, a journal event, a title made from a file name) goes through
:func:`neutralise` first. What looks like one of the block's own markers, a bracketed
label in capitals (``[END KNOWN FACTS]``, ``[OPERATOR MODEL]``), a section's name or a
note of the block's in any case (``[operator model]``, ``[BLOCKED: ...``, ``[… truncated:
...``), a ``<recalled-memory>`` tag or a ``--- title ---`` section header line, is shown in
parentheses instead, so the words stay readable and the structure stays the daemon's.
"""

from __future__ import annotations

import re

_BRACKETED = re.compile("[\\[\uff3b]([^\\]\\[\uff3b\uff3d\n]{1,200})[\\]\uff3d]")  # and fullwidth
# The block's notes and section names, in any case ("[end known facts]", "[Operator model]").
_OWN_NOTE = re.compile(
    r"\s*(?:…|\.\.\.|(?:end|blocked|withheld|memory|agent\s+memory|crew\s+shared|operator\s+model"
    r"|relevant\s+memory|recalled\s+memory|known\s+facts|(?:institutional\s+)?learnings)\b)",
    re.IGNORECASE,
)
_TAG = re.compile(r"<\s*(/\s*)?(recalled-memory)\s*>", re.IGNORECASE)


def _bracketed(m: re.Match[str]) -> str:
    inner = m.group(1)
    letters = [c for c in inner if c.isalpha()]
    capitals = len(letters) >= 3 and inner == inner.upper()
    return f"({inner})" if capitals or _OWN_NOTE.match(inner) else m.group(0)


def _header(line: str) -> str:
    """``--- title ---`` as ``(title)``; a rule (``---``) stays. Linear: a line of a
    100 KiB log may start with dashes."""
    core = line.strip()
    title = core.strip("-").strip()
    if not (title and core.startswith("---") and core.endswith("---")):
        return line
    return f"{line[: len(line) - len(line.lstrip())]}({title})"


def neutralise(text: str) -> str:
    """``text`` with anything that could pass for a block marker put in parentheses."""
    if "---" in text:
        text = "\n".join(map(_header, text.split("\n")))
    text = _TAG.sub(lambda m: f"({m.group(1) or ''}{m.group(2)})", text)
    return _BRACKETED.sub(_bracketed, text)
