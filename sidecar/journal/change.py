"""Does a later statement replace an earlier one? Read from the two texts alone.

A later event on the subject of an earlier one is often a follow-up (a complaint after the
change, a reminder, a count), not a replacement; recall moves a later event above an
earlier only when the later reports a change (``reports_change``). Kept apart from the
links, which find the pairs: this module only reads texts.
"""

from __future__ import annotations

import re

_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# Lengths of time and how often, by the period they name: "5 minutes" -> "an hour",
# "weekly" -> "every night".
_PERIODS = {
    word: period
    for period, words in {
        "second": "second seconds",
        "minute": "minute minutes min mins",
        "hour": "hour hours hourly",
        "day": "day days daily",
        "night": "night nights nightly overnight",
        "week": "week weeks weekly",
        "fortnight": "fortnight fortnightly biweekly",
        "month": "month months monthly",
        "quarter": "quarter quarters quarterly",
        "year": "year years yearly annual annually",
    }.items()
    for word in words.split()
}
_TOKEN = re.compile(r"[\w$€£%#][\w.,%$€£:/'+#-]*|[.;:!?\u2014]")
# A lowercase identifier: a channel, a bucket, a host ("#platform-oncall", "db_main",
# "api.internal", "eu-west-central"): opened by "#", or joined by a mark inside; by hyphens
# only when two or more (one joins English compounds: "two-week", "follow-up"). The joined
# form is read in one pass: "_" is also a word character, and "[_/.][a-z0-9]" after "\w*"
# split a long "a_a_..._a+" in 2^n ways before failing; the lookahead asks for the joint.
_IDENT = re.compile(
    r"#\w[\w./-]*|(?=[a-z][\w/.]*?[_/.][a-z0-9])[a-z]\w*(?:[/.][a-z0-9]\w*)*"
    r"|[a-z]\w*(?:-[a-z0-9]\w*){2,}"
)
# Counts written as words ("two approvals" for "one approval"): read only before a noun
# the other statement also counts, never on their own ("one of", "the one that").
_COUNTS = {
    word: n
    for n, word in enumerate("zero one two three four five six seven eight nine ten".split())
}
# A count has at most nine digits: int() refuses a run of thousands ("9" * 5000).
_COUNTED = re.compile(
    r"\b(\d{1,9}|" + "|".join(_COUNTS) + r")\s+([a-z]{3,}?)s?\b(?:\s+([a-z]{3,}?)s?\b)?",
    re.IGNORECASE,
)


def values(text: str) -> dict[str, frozenset[str]]:
    """The values a statement gives, by kind: figures by their shape (a percentage, an
    amount, a time of day, a number with a unit, a plain number or ordinal), month and day
    names, periods ("minutes", "weekly", "every night"), and names (a capitalised word
    that does not open a sentence)."""
    found: dict[str, set[str]] = {"name": set()}
    opening = True
    for match in _TOKEN.finditer(text):
        token = match.group().rstrip(".,:'").removesuffix("'s")
        if not token or token in ".;:!?\u2014":
            opening = True
            continue
        low = token.lower()
        if any(ch.isdigit() for ch in token):
            found.setdefault(f"figure:{_shape(low)}", set()).add(low)
        elif _IDENT.fullmatch(token):
            found.setdefault("identifier", set()).add(low.lstrip("#"))
        elif low.removesuffix("s") in _DAYS:
            found.setdefault("day", set()).add(low.removesuffix("s"))
        elif low in _MONTHS:
            found.setdefault("month", set()).add(low[:3])
        elif low in _PERIODS:
            found.setdefault("period", set()).add(_PERIODS[low])
        elif token[0].isupper() and not opening:
            found["name"].add(low)
        opening = False
    return {kind: frozenset(v) for kind, v in found.items()}


def _shape(figure: str) -> str:
    if "%" in figure:
        return "share"
    if any(c in figure for c in "$€£"):
        return "money"
    if re.fullmatch(r"\d{1,2}[:.]\d{2}", figure):
        return "clock"
    if re.fullmatch(r"\d+(?:st|nd|rd|th)?|\d{1,3}(?:,\d{3})+", figure):
        return "number"
    return "other"


def shares_a_name(older: str, newer: str) -> bool:
    """A name the earlier statement gives is written with its capital in the later one,
    where it may open the sentence ("... duty officer Carla Ruiz" -> "Carla handed it to
    Jorge"): the one word a terse update keeps of its subject."""
    names = values(older).get("name", frozenset())
    written = (m.group().rstrip(".,:'").removesuffix("'s") for m in _TOKEN.finditer(newer))
    return any(w[:1].isupper() and w.lower() in names for w in written)


# Calling a thing off, or back on, states no value: "the council scrapped the pilot",
# "that conversion is off", "reversing the Monday closure", "waive it entirely". Not the
# nouns and idioms the words also make ("reverse proxy", "reverse charge", "in reverse
# order", "from scratch"): they call nothing off.
_CALLED_OFF = re.compile(
    r"\b(?:cancel(?:l?ed|s)?|scrap(?:ped|s)?|call(?:ed|s)? (?:it |that |this )?off|"
    r"no longer|any ?more|abolish(?:ed|es)?|suspend(?:ed|s)?|withdr[ae]wn?|pulled|"
    r"(?:is|are|'s) off|back on|revers(?:e|ed|es|ing)(?![ -](?:prox(?:y|ies)|charge|order)\b)|"
    r"(?<!from )scratch|waive[ds]?)\b",
    re.IGNORECASE,
)


def calls_off(text: str) -> bool:
    """The statement calls its subject off, or back on. A word of it capitalised inside a
    sentence is part of a name ("Harrow Scrap collects the pallets"), not a verb."""
    for match in _CALLED_OFF.finditer(text):
        before = text[: match.start()].rstrip()
        if not match.group()[0].isupper() or not before or before[-1] in ".;:!?\u2014":
            return True
    return False


def _counts(text: str) -> dict[str, set[int]]:
    """How many of each thing the statement counts: noun -> numbers before it (either of
    the two words after a number: "two reviewer approvals" counts approvals)."""
    out: dict[str, set[int]] = {}
    for number, *nouns in _COUNTED.findall(text):
        low = number.lower()
        for noun in filter(None, nouns):
            out.setdefault(noun.lower(), set()).add(_COUNTS[low] if low in _COUNTS else int(low))
    return out


def _recounts(older: str, newer: str) -> bool:
    """The later counts a thing the earlier counts, by another number, one of them
    written as a word ("one approval" -> "two approvals")."""
    if not any(w in _COUNTS for w in re.findall(r"[a-z]+", (older + " " + newer).lower())):
        return False
    before = _counts(older)
    return any(now - before[noun] for noun, now in _counts(newer).items() if noun in before)


def reports_change(older: str, newer: str) -> bool:
    """The later statement fills a slot the earlier one filled, differently: a value of a
    kind the earlier gives that the earlier does not give, a figure of the same shape, a
    month or day name, or a name ("April 18" -> "April 25", "every 180 days" -> "every 90
    days", "Priya" -> "Tomasz"). A name counts even when the old one is repeated beside
    it ("we cancelled PagerDuty; pages go out from Opsgenie"): requiring the old name to
    be dropped missed 5 of 134 held-out updates and spared none of 44 later follow-ups.
    A statement calling the subject off or back on (``calls_off``) reports a change with
    no value: on the four dev sets, 11 of the 34 updates giving no new value say so, and 4
    of 323 later follow-ups giving none."""
    if calls_off(newer) or _recounts(older, newer):
        return True
    before, after = values(older), values(newer)
    return any(
        now - before.get(kind, frozenset()) and before.get(kind) for kind, now in after.items()
    )
