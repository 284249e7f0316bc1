"""Where a sentence ends, for matchers that judge a match by the words around it."""

from __future__ import annotations

from sidecar.safety import lazy_re

# A sentence ends at . ! ? before a space, or at a full-width end of Chinese and Japanese.
SENTENCE_END = lazy_re.compile(r"[.!?\u3002\uff01\uff1f](?=\s|$)|[\u3002\uff01\uff1f]")


def clause_after(text: str) -> str:
    """``text`` up to its first sentence end."""
    m = SENTENCE_END.search(text)
    return text[: m.start()] if m else text


def clause_before(text: str) -> str:
    """``text`` from its last sentence end on."""
    last = None
    for last in SENTENCE_END.finditer(text):  # noqa: B007 - the last one is wanted
        pass
    return text[last.end() :] if last else text
