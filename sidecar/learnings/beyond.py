"""What an entry says beyond the task's own words: its meaning with them taken out.

An entry written around the task's words for a neighbouring step ("Fernhill branch
nonfiction shelves get relabelled after the weed" under "weed the nonfiction shelves at
the Fernhill branch") is close to the task in meaning because it repeats the task, not
because the rest of it is about the task. With its task words taken out, what is left
("get relabelled after the") is far from the task; an entry that answers the task keeps
much of its meaning without them ("the stage takes 24 chairs and 20 stands, with the
risers" under "set the stage for a chamber orchestra concert"). The entry's cosine counts
at most ``WORDS_LIFT`` above that rest's (``ScoredLearning.match``), so the repeated words
lift its match a little, never to a bar the lesson put in other words cannot clear.

The rest is embedded at query time (it depends on the query), so only the few entries that
can set the bar are looked at (``to_check``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sidecar.learnings.ranking import WORDS_LIFT, ScoredLearning, index_stems
from sidecar.retrieval.query import STOPWORDS

# Entries looked at, best match first: the bar is set by the best matches. On the lesson
# sets 2 order every held-out topic as all of them do (1 loses an exact answer on v4 and
# 0.008 of the own set's nDCG); their rests are embedded at query time, in one inference.
CHECKED = 2
# Only an entry that restates the task, holding at least this share of its content words,
# is close "only by the task's words". One that holds fewer is near in meaning by what it
# says about them: an exact answer holding two thirds of the task's words ("refund a
# member whose class was cancelled by the studio": the credit goes back, card drop-ins need
# a manual refund) lost its cosine to the cap, and with it the bar that kept a prominent
# rule on a neighbouring task ("never cancel a class on short notice") out (held-out
# lessons v5: exact answers 5 -> 6 of 7, v1 4 -> 5; v4 5 -> 4, as the neighbour there holds
# two thirds and its cap no longer binds; every prominent figure unchanged). Chosen over
# 0.5-1.0 on v1-v5: 0.8 and 0.85 order the most topics; 0.85 loses a v4 prominent lesson.
# Leaving one set out it is weakly supported: without v5, v1-v4 tie from 0.5 to 0.85.
RESTATES = 0.8
_TOKEN = re.compile(r"\S+")
_WORD = re.compile(r"\w+")


def to_check(candidates: Sequence[ScoredLearning]) -> list[ScoredLearning]:
    """The entries whose rest can lower their match: active, with a cosine above
    ``WORDS_LIFT`` (else the cap cannot bind), restating the task (at least ``RESTATES``
    of its words: one holding fewer is not close by them alone), the ``CHECKED`` best."""
    able = [
        c
        for c in candidates
        if c.prominence > 0 and c.fit >= RESTATES and c.cosine is not None and c.cosine > WORDS_LIFT
    ]
    return sorted(able, key=lambda c: -c.match)[:CHECKED]


def without_words(query: str, texts: Sequence[str]) -> list[str]:
    """Each text without the words the query holds (as the index stems them: "shelves"
    goes under "shelf"); words of no content ("the", "for") stay, so the rest still reads
    as a phrase, unless they are all that is left: then the rest is empty. Stems with
    SQLite's tokenizer: a thread's work."""
    tokens = [_TOKEN.findall(t) for t in texts]
    asked, *stems = index_stems([query, *dict.fromkeys(w for ws in tokens for w in ws)])
    of = dict(zip(dict.fromkeys(w for ws in tokens for w in ws), stems, strict=True))
    rests = [" ".join(w for w in ws if not (of[w] and of[w] <= asked)) for ws in tokens]
    # Words of no content alone ("the" of "Renew the TLS certificate.") say nothing more.
    return [rest if _says_something(rest) else "" for rest in rests]


def _says_something(rest: str) -> bool:
    """A word the index counts as content (``query.terms``: not a stopword, not one
    letter); alone, the index keeps even stopwords, so their stems cannot tell."""
    return any(len(w) > 1 and w not in STOPWORDS for w in _WORD.findall(rest.lower()))
