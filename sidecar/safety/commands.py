"""Matchers for the command rules of :mod:`sidecar.safety.rules_intent`: a credential file
sent off the machine, and a destructive command given rather than forbidden or described.

Each takes its check (the data) and a :class:`~sidecar.safety.text.Doc` and returns an
excerpt of the first hit, or None, starting from the check's literal anchors.
"""

from __future__ import annotations

import re

from sidecar.safety import lazy_re
from sidecar.safety.clauses import clause_after, clause_before
from sidecar.safety.rules_intent import (
    DESCRIBED,
    DOCUMENTED,
    INTENSIFIES,
    MODAL_BEFORE,
    NEGATION,
    Destructive,
    Transfer,
)
from sidecar.safety.text import Doc, excerpt, span_excerpt

# --- credential files ---------------------------------------------------------------------------

# Options through which a credential file is used as intended, not sent.
_USED_AS_CREDENTIAL = lazy_re.compile(
    r"(?:--netrc-file|--netrc-optional|--cert|--key|--cacert|-E|-i|--identity|-K|--config|"
    r"--kubeconfig|--credential-file|--credentials-file|--profile|-F)[=\s]\s*['\"]?\Z"
)
_REMOTE_SOURCE = lazy_re.compile(r"[^\s'\"]*:[^\s'\"]*\Z")


def transfer_excerpt(check: Transfer, doc: Doc) -> str | None:
    """A credential file read locally and sent to a remote by a transfer tool."""
    seen: set[str] = set()
    for line in doc.shell_lines(check.anchors, check.tool.search):
        if line in seen:
            continue
        seen.add(line)
        for m in check.path.finditer(line):
            before = line[: m.start()]
            token = re.split(r"[\s=]", before)[-1]
            if _REMOTE_SOURCE.match(token) and "@" not in token:
                continue  # host:path, i.e. fetched from elsewhere
            if check.upload.search(before):
                return excerpt(line.strip())
            if _USED_AS_CREDENTIAL.search(before):
                continue
            after = line[m.end() :]
            if check.piped.match(after) or check.remote.search(after):
                return excerpt(line.strip())
    return None


# --- destructive commands -----------------------------------------------------------------------


def _documented(around: str) -> bool:
    """Whether the words around a command forbid, narrate or describe it.

    A negation counts only when it governs the command: "do not wait for
    approval" or "never skip it" next to a command strengthen the order.
    """
    for m in DOCUMENTED.finditer(around):
        if not (NEGATION.fullmatch(m.group()) and INTENSIFIES.match(around, m.end())):
            return True
    return False


def destructive_excerpt(check: Destructive, doc: Doc) -> str | None:
    """A destructive command given, not forbidden, narrated or described (see ``Destructive``)."""
    text = doc.text
    for start, end in doc.lines(check.anchors):
        line = text[start:end]
        if check.needs and not any(n in line for n in check.needs):
            continue
        for m in check.regex.finditer(line):
            if not doc.strict:
                around = clause_before(line[: m.start()]) + " " + clause_after(line[m.end() :])
                if _documented(around) or DESCRIBED.match(line, m.end()):
                    continue
                if MODAL_BEFORE.search(line, 0, m.start()):
                    continue
                if check.cue is not None and not check.cue.search(line):
                    continue
            return span_excerpt(text, start + m.start(), start + m.end())
    return None
