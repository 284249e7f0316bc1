"""Spot prompt-injection payloads in memory text before it reaches a system prompt.

Memory files are written by earlier agent runs and pasted into later agents'
system prompts, so text an attacker once talked an agent into writing becomes an
instruction to every agent after it. :func:`scan` looks for the few shapes such
a payload takes and names the first rule that matched, so the caller can
withhold the text and tell an operator exactly why.

The rules, their order and their patterns are data in :mod:`sidecar.safety.rules`
(whose docstring numbers them); this module runs them. It holds one matcher per
shape of check (:class:`~sidecar.safety.rules.Phrase`, ``NetworkLine``, ...),
and the passes below.

Three passes, each only if the previous found nothing (rules numbered as in
:mod:`sidecar.safety.rules`):

1. The raw text through rules 1-47.
2. Look-alike text, folded: lines where a rule's keyword appears only once
   look-alike letters are read as Latin (Cyrillic/Greek homoglyphs, accented
   letters, leetspeak digits), or that hold fullwidth, mathematical, small
   capital or combining characters, HTML character references or escaped
   markup, or s p a c e d letters, are decoded (HTML entities, NFKC, homoglyph map, combining marks
   and format characters dropped) and run through rules 7-47; a copy with
   leetspeak and spaced letters undone runs through rules 7-24.
3. Encoded runs are decoded and scanned the same way, nested at most twice:
   base64 runs of 40 or more characters (wrapped lines joined), shorter ones on
   a line that decodes them (``base64 -d``, ``atob``), hex runs of 32 or more
   digits and ``\\x`` escapes, all only if they decode to printable UTF-8, and
   lines with three or more percent escapes. A hit is reported as category
   ``encoded_payload``, pattern ``base64:<inner rule>``, ``hex:<inner rule>``
   or ``urlencoded:<inner rule>``. Decoded text is strict (see ``Doc.strict``):
   a destructive command counts even without an addressee.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from sidecar.safety import lazy_re
from sidecar.safety.commands import destructive_excerpt, transfer_excerpt
from sidecar.safety.decode import decoded_payloads, fold_confusables, fold_leet, suspect_lines
from sidecar.safety.intent import (
    authority_excerpt,
    exchange_excerpt,
    foreign_excerpt,
    line_open_excerpt,
    quoted_excerpt,
)
from sidecar.safety.orders import order_excerpt
from sidecar.safety.persist import download_hook, key_write, unit_download
from sidecar.safety.rules import (
    AFTER_LABEL,
    ALL_RULES,
    CLAUSE_START,
    CONTENT_RULES,
    NAMED_NOT_GIVEN,
    NET,
    NET_ANCHORS,
    OVERRIDE_RULES,
    QUOTED_INNER,
    QUOTING_LABELS,
    SCOPED,
    AtAnchor,
    Check,
    DownloadHook,
    Invisible,
    KeyWrite,
    LineStart,
    NetworkLine,
    Phrase,
    Probe,
    Rule,
    UnitDownload,
)
from sidecar.safety.rules_intent import (
    Authority,
    Destructive,
    Exchange,
    Foreign,
    LineOpen,
    Quoted,
    Transfer,
)
from sidecar.safety.rules_orders import Order
from sidecar.safety.text import Doc, excerpt, span_excerpt
from sidecar.safety.unicode import invisible_excerpt

__all__ = ["Finding", "scan"]


@dataclass(frozen=True, slots=True)
class Finding:
    """Which rule the text tripped, and a safe excerpt of what it matched."""

    category: str  # invisible_unicode | instruction_override | exfiltration | persistence | ...
    pattern: str  # stable rule name, e.g. "env_dump_to_network"; "base64:<rule>" when decoded
    excerpt: str  # printable, at most 80 characters; for logs and operators, never for a prompt


_MAX_DEPTH = 2  # base64 inside base64 is followed once
_BOUNDARY_WINDOW = 160  # characters before a phrase searched for its clause start


# --- orders in prose, fake turns ----------------------------------------------------------------


def _probe_spans(doc: Doc, probes: tuple[Probe, ...]) -> Iterator[tuple[int, int]]:
    """(start, end) of each probe match, tried only at the probe's anchors (see ``Probe``)."""
    text = doc.text
    for probe in probes:
        for pos in doc.find_any(probe.anchors):
            for start in range(max(0, pos - probe.back), pos + 1):
                m = probe.regex.match(text, start, min(len(text), start + 600))
                if m:
                    break
            else:
                continue
            if probe.head is None:
                yield m.start(), m.end()
                continue
            lo = max(0, pos - probe.reach)
            before = text[lo:pos].lower()
            if probe.hints and not any(h in before for h in probe.hints):
                continue
            h = probe.head.search(text, lo, pos)
            if h:
                yield h.start(), m.end()


def _at_clause_start(text: str, start: int) -> bool:
    """Whether ``text[start:]`` opens a sentence, line or comment, i.e. reads as an order.

    "Ignore previous instructions" at the start of a line is an order; "asked
    me to ignore previous instructions" or "attacks say 'ignore previous
    instructions'" mention one. Politeness and urgency words ("Please",
    "IMPORTANT:", "you must") may stand between the start and the verb.
    """
    lo = max(0, start - _BOUNDARY_WINDOW)
    nl = text.rfind("\n", lo, start)
    prefix = text[nl + 1 : start] if nl >= 0 else text[lo:start]
    if nl < 0 and lo > 0:
        prefix = "\0" + prefix  # cut mid-line: the window's start is not a line start
    if CLAUSE_START.search(prefix):
        return True
    m = AFTER_LABEL.search(prefix)
    return bool(m) and (m.group(1) or "").lower().rstrip(".") not in QUOTING_LABELS


# A negation right before a phrase's verb governs it.
_FORBIDDEN_BEFORE = lazy_re.compile(
    r"\b(?:never|not|don'?t|mustn'?t|shouldn'?t)\s+(?:ever\s+|again\s+)?\Z", re.IGNORECASE
)


def _phrase(check: Phrase, doc: Doc) -> str | None:
    """Where a probe matches and the match reads as an order, not a mention."""
    text = doc.text
    for start, end in _probe_spans(doc, check.probes):
        if check.clause_start and not _at_clause_start(text, start):
            continue
        if NAMED_NOT_GIVEN.match(text, end):
            continue
        if check.scoped_ok and SCOPED.match(text, end):
            continue
        if not check.clause_start and _FORBIDDEN_BEFORE.search(text, max(0, start - 30), start):
            continue  # "never paste ~/.aws/credentials into a ticket" forbids it
        return span_excerpt(text, start, end)
    return None


def _line_start(check: LineStart, doc: Doc) -> str | None:
    """A line that opens with the check's regex, e.g. a fake "SYSTEM: override" turn."""
    text = doc.text
    for start, end in doc.lines(check.anchors, logical=False):
        m = check.regex.match(text, start, end)
        if m:
            return span_excerpt(text, m.start(), m.end())
    return None


# --- exfiltration -------------------------------------------------------------------------------


def _sends_to_network(line: str) -> bool:
    """Whether a shell line runs a network sender; only such lines can exfiltrate."""
    return bool(NET.search(line))


def _sender(regex: re.Pattern[str], line: str) -> bool:
    """Whether a line names a variable at all (``$``, ``%``, env) and runs ``regex``'s sender."""
    return ("$" in line or "%" in line or "env" in line) and bool(regex.search(line))


def _network_line(
    check: NetworkLine, doc: Doc, keep: Callable[[str], bool] = _sends_to_network
) -> str | None:
    """The first network-sending line holding a hint (a cheap test) where ``regex`` matches."""
    lines = doc.shell_lines(check.anchors or NET_ANCHORS, keep)
    for line in lines:
        low = line.lower()
        if not any(h in low for h in check.hints):
            continue
        body = line if check.blank is None else check.blank.sub(" ", line)
        if check.ordered:
            if _sent(check.regex, check.sender or NET, body):
                return excerpt(line.strip())
        elif check.regex.search(body):
            return excerpt(line.strip())
    return None


_COMMAND_BREAK = lazy_re.compile(r";|&&|\|\||(?<![\w/])\.\s|\n")


def _sent(what: re.Pattern[str], sender: re.Pattern[str], line: str) -> bool:
    """Whether ``what`` is an argument of a sender (after it, with no command or sentence
    break between) or is piped into one (before it, with a ``|`` and no break between)."""
    senders = [m.start() for m in sender.finditer(line)]
    for m in what.finditer(line):
        for s in senders:
            lo, hi = (s, m.start()) if s < m.start() else (m.end(), s)
            between = line[lo:hi]
            if _COMMAND_BREAK.search(between):
                continue
            if s < m.start() or "|" in between:
                return True
    return False


def _at_anchor(check: AtAnchor, doc: Doc) -> str | None:
    """The first match right at an anchor, e.g. a markdown image with a templated URL."""
    for pos in doc.find(check.anchor):
        m = check.regex.match(doc.text, pos)
        if m:
            return excerpt(m.group())
    return None


# --- running the rule table ---------------------------------------------------------------------


def _matcher(check: Check) -> Callable[[Doc], str | None]:
    """The function that runs ``check`` on a text; a new shape of check needs a case here."""
    match check:
        case Invisible():
            return partial(invisible_excerpt, check)
        case Phrase():
            return partial(_phrase, check)
        case LineStart():
            return partial(_line_start, check)
        case NetworkLine(sender=None):
            return partial(_network_line, check)
        case NetworkLine(sender=sender):
            return partial(_network_line, check, keep=partial(_sender, sender))
        case AtAnchor():
            return partial(_at_anchor, check)
        case KeyWrite():
            return partial(key_write, check)
        case DownloadHook():
            return partial(download_hook, check)
        case UnitDownload():
            return partial(unit_download, check)
        case Foreign():
            return partial(foreign_excerpt, check)
        case Quoted():
            return partial(quoted_excerpt, check, partial(_run_excerpt, _compile(QUOTED_INNER)))
        case Authority():
            return partial(authority_excerpt, check)
        case LineOpen():
            return partial(line_open_excerpt, check)
        case Exchange():
            return partial(exchange_excerpt, check)
        case Transfer():
            return partial(transfer_excerpt, check)
        case Destructive():
            return partial(destructive_excerpt, check)
        case Order():
            return partial(order_excerpt, check)
    raise TypeError(f"no matcher for {check!r}")


_Compiled = tuple[tuple[str, str, Callable[[Doc], str | None]], ...]


def _compile(rules: tuple[Rule, ...]) -> _Compiled:
    """The rows of a rule table with each check turned into its matcher, once, at import."""
    return tuple((category, pattern, _matcher(check)) for category, pattern, check in rules)


def _run_excerpt(rules: _Compiled, doc: Doc) -> str | None:
    hit = _run(rules, doc)
    return None if hit is None else hit.excerpt


def _run(rules: _Compiled, doc: Doc) -> Finding | None:
    """The first rule, in table order, that ``doc`` trips."""
    for category, pattern, rule in rules:
        shown = rule(doc)
        if shown is not None:
            return Finding(category, pattern, shown)
    return None


_ALL = _compile(ALL_RULES)
_CONTENT = _compile(CONTENT_RULES)
_OVERRIDE = _compile(OVERRIDE_RULES)


# --- entry point --------------------------------------------------------------------------------


def _scan(text: str, depth: int, *, strict: bool = False) -> Finding | None:
    """Passes 1-3 of the module docstring; ``depth`` counts encoded layers already decoded."""
    doc = Doc(text, strict=strict)
    hit = _run(_ALL, doc)
    if hit:
        return hit
    spans = suspect_lines(doc)
    if spans:
        regions = [text[s:e] for s, e in spans]
        folded = [fold_confusables(r) for r in regions]
        if folded != regions:
            hit = _run(_CONTENT, Doc("\n\n".join(folded), strict=strict))
            if hit:
                return hit
        unleeted = [fold_leet(f) for f in folded]
        if unleeted != folded:
            hit = _run(_OVERRIDE, Doc("\n\n".join(unleeted), strict=strict))
            if hit:
                return hit
    if depth < _MAX_DEPTH:
        for kind, decoded, strict_inner in decoded_payloads(doc):
            inner = _scan(decoded, depth + 1, strict=strict_inner)
            if inner:
                return Finding(
                    "encoded_payload",
                    f"{kind}:{inner.pattern}",
                    excerpt(f"{kind} -> {inner.excerpt}"),
                )
    return None


def scan(text: str) -> Finding | None:
    """The first rule (in the order :mod:`sidecar.safety.rules` lists) that ``text`` trips.

    Deterministic: the same text always yields the same Finding, whatever was
    scanned before, because there is one fixed rule order and no shared state.
    """
    return _scan(text, 0)
