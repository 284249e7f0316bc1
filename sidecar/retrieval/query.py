"""Turn what an agent typed into an FTS5 MATCH expression.

Agents mostly ask questions in plain language, which is not valid FTS5 ("?",
apostrophes, a bare NOT). Those become an OR of quoted non-stopword terms, so
BM25 ranks chunks by how many rare terms they share. A query that uses FTS5
syntax on purpose is tried as written first; if SQLite rejects it, the search
layer falls back to the plain-terms form and reports that in ``query_mode``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sidecar.index.dates import canonical_dates

STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do
does doesn't doing don't down during each few for from further had hadn't has hasn't
have haven't having he he'd he'll he's her here here's hers herself him himself his
how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
most mustn't my myself no nor not of off on once only or other ought our ours
ourselves out over own same shan't she she'd she'll she's should shouldn't so some
such than that that's the their theirs them themselves then there there's these they
they'd they'll they're they've this those through to too under until up very was
wasn't we we'd we'll we're we've were weren't what what's when when's where where's
which while who who's whom why why's will with won't would wouldn't you you'd you'll
you're you've your yours yourself yourselves also just like get got might
""".split()
)

# Words keep inner apostrophes so contractions ("didn't") meet the stopword list;
# a kept word like "o'brien" becomes a quoted phrase FTS5 matches as "o brien".
_WORD = re.compile(r"\w+(?:'\w+)*")
# Markers of deliberate FTS5 syntax: a phrase in quotes, a boolean operator in
# capitals between terms, a prefix star, NEAR(...), grouping, or a column filter.
_EXPLICIT = re.compile(
    r'"|\b(?:AND|OR|NOT)\b|\w\*|\bNEAR\s*\(|[()]|^\s*\{?\s*(?:heading|body)\s*\}?\s*:'
)

# Outside quoted phrases, FTS5 queries consist of words, spaces and these marks.
# Anything else there ("?", "'", ".", "!") means a person wrote a sentence, even
# if it quotes a title, so it is read as plain language.
_QUOTED = re.compile(r'"[^"]*"')
_FTS5_SHAPED = re.compile(r"[\w\s*():^+,{}\"]*")  # a stray quote is a broken phrase


MODE_TERMS = "terms"
MODE_FTS5 = "fts5"
MODE_FALLBACK = "terms_fallback"


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    match: str  # the FTS5 MATCH expression to run first
    mode: str  # MODE_TERMS or MODE_FTS5
    fallback: str  # plain-terms expression if ``match`` fails to parse
    asks_when: bool = False  # the question asks for a time (``asks_when``)
    names: frozenset[str] = frozenset()  # who or what it names (``named``)


def terms(text: str) -> list[str]:
    """Lower-cased distinct word tokens without stopwords or one-letter words.

    If that leaves nothing (a question made only of stopwords), keep every word
    rather than answer with nothing.
    """
    words = [
        w.removesuffix("'s")  # possessive: "team's" should find "team"
        for w in _WORD.findall(text.lower().replace("\u2019", "'"))
    ]
    kept = _dedupe(w for w in words if len(w) > 1 and w not in STOPWORDS)
    return kept or _dedupe(words)


def _dedupe(words: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(words))


def or_of_terms(words: list[str]) -> str:
    """Quote every term so no word is ever read as an operator."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def plan(text: str) -> PlannedQuery | None:
    """None when the text holds no searchable word at all. Dates written in another form
    than notes' headings use ("Aug 15th", "2023-05-03") are searched in that form too, and
    a day with its year also by its one word (``dates.day_word``)."""
    fallback = or_of_terms(terms(f"{text} {canonical_dates(text)}"))
    if not fallback:
        return None
    if _EXPLICIT.search(text) and _FTS5_SHAPED.fullmatch(_QUOTED.sub(" ", text)):
        return PlannedQuery(text.strip(), MODE_FTS5, fallback)
    return PlannedQuery(fallback, MODE_TERMS, fallback, asks_when(text), named(text))


_ASKS_WHEN = re.compile(
    r"\b(?:when (?:did|do|does|is|was|were|will|would|are|has|have|had|can|could|should)"
    r"|since when|how long|how recently|at what point|how soon"
    r"|(?:what|which) (?:year|month|day|date|week|weekend|time|season)"
    r"|(?:what|which) (?:is|was|were|will be) the (?:date|year|month) (?:of|when|that)"
    r"|how many (?:days|weeks|months|years))\b",
    re.I,
)


def asks_when(text: str) -> bool:
    """Whether a plain-language question asks for a time ("when did", "how long", "which
    month", "what was the date of", or a question that starts with "when"): its answer is
    a line that places something in time (``dates.says_when``). "When" as a conjunction
    ("what to do when the build fails") does not ask."""
    t = text.strip()
    return _ASKS_WHEN.search(t) is not None or (t[:5].lower() == "when " and t.endswith("?"))


_CAPITALISED = re.compile(r"\b[A-Z][\w'\u2019-]*")


def named(text: str) -> frozenset[str]:
    """The words a question writes with a capital (possessives dropped), except question
    and stop words ("What", "Did"): the people or things it is about (``speakers``)."""
    words = (w.removesuffix("'s").removesuffix("\u2019s") for w in _CAPITALISED.findall(text))
    return frozenset(w for w in words if w.lower() not in STOPWORDS)


def stem(word: str) -> str:
    """A crude prefix standing in for the index's porter stem: enough to pick a snippet's
    lines or see that two texts share a word, without the tokenizer."""
    return word[: max(4, len(word) - 3)] if len(word) > 5 else word
