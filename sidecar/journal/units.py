"""Which slot a figure fills: the thing it counts or measures, read from its neighbours.

Two figures of one shape are not one slot when they measure different things: "the
car park by gate 2" and "took 6 minutes to clear"; "40% humidity" and "read 10% high";
"by the 25th" and "8,420 pounds". A figure's unit words are the content words right after
it ("6 minutes") and the one right before it ("gate 2"); a figure with none ("moved to
4") may fill any slot. Units written short stand for the long ones: "350 s" for
"60 seconds", "1,200 rpm" for "500 requests per minute", "25 MB" for "25 megabytes"
(``abbreviates``).
"""

from __future__ import annotations

import re

from sidecar.retrieval.query import STOPWORDS
from sidecar.retrieval.updates import abbreviates

# As ``change`` reads tokens, so a figure here is the figure it reads there.
_TOKEN = re.compile(r"[\w$€£%#][\w.,%$€£:/'+#-]*|[.;:!?\u2014]")
_FIGURE = re.compile(r"[$€£#]?\d")
# Words beside a figure that say how it relates or when, not what it counts ("5 more",
# "40 each", "12 now", "20 instead", "2.4% plus 20 cents").
_NOT_UNITS = frozenset("more less each apiece total only extra plus minus now instead".split())


def _unit_word(token: str) -> str | None:
    low = token.lower().rstrip(".,:'").removesuffix("'s")
    if not low.isalpha() or low in STOPWORDS or low in _NOT_UNITS:
        return None
    return low


def units(text: str) -> dict[str, list[str]]:
    """Each figure of the text (lower-cased, as ``change.values`` reads it) -> the words
    that may name its unit: the content words right after it (three at most, up to the first
    word that is not one) and the one right before it; empty when there are none."""
    tokens = [m.group() for m in _TOKEN.finditer(text)]
    out: dict[str, list[str]] = {}
    for i, token in enumerate(tokens):
        if not _FIGURE.match(token):
            continue
        figure = token.rstrip(".,:'").removesuffix("'s").lower()
        found: list[str] = []
        for t in tokens[i + 1 : i + 4]:
            if (word := _unit_word(t)) is None:
                break
            found.append(word)
        if i > 0 and (before := _unit_word(tokens[i - 1])):
            found.append(before)
        out.setdefault(figure, []).extend(found)
    return out


def _same_word(a: str, b: str) -> bool:
    """One word, however inflected: the shorter (four letters at least) or five letters
    of each are shared from the start ("minute", "minutes"; "completed", "completes")."""
    if a == b:
        return True
    shared = min(len(a), len(b), 5)
    return shared >= 4 and a[:shared] == b[:shared]


def same_slot(before: list[str], after: list[str]) -> bool:
    """Two figures' unit words (``units``) allow one slot: either has none, or a word of
    one is a word of the other or abbreviates the other's words."""
    if not before or not after:
        return True
    return (
        any(_same_word(a, b) for a in before for b in after)
        or any(abbreviates(a, after) for a in before)
        or any(abbreviates(b, before) for b in after)
    )
