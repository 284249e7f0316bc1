"""A question about a person is answered by what that person says.

Notes often keep a conversation as a transcript, one line per turn opened by its speaker's
name ("Melanie: we painted a sunset last weekend"). When a question names someone who
speaks in the candidates ("What has Melanie painted?"), the lines of the *other* speakers
share its words just as well (asking about it, praising it, telling their own) and are
less often the answer: on LoCoMo dev, 339 of the 350 multi-hop evidence turns of a
question naming one speaker are that speaker's own, while 94 of the 732 top-six hits held
no line of theirs (none of them evidence). So a candidate gains ``modes.SPEAKER_SHARE``
(of the best score, as ``WHEN_SHARE``) times the share of its transcript lines that a
speaker the question names says: a chunk of two turns, one each, gains half.

Only labels at the start of a line count, and only names the question writes with a
capital (``query.named``): "Note:" or "TODO:" lines in ordinary notes lift nothing unless
a question names them, and notes without such labels never gain.
"""

from __future__ import annotations

import re

# "Name:" or "First Last:" at the start of a line, followed by what they said.
_LABEL = re.compile(r"^[ \t]*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?):[ \t]", re.M)


def said_share(text: str, names: frozenset[str]) -> float:
    """The share of ``text``'s speaker-labelled lines opened by someone in ``names``
    ("Melanie: ..."; "Dr Ruiz: ..." for a question naming Ruiz); 0 without such lines."""
    if not names or ":" not in text:
        return 0.0
    labels = _LABEL.findall(text)
    if not labels:
        return 0.0
    said = sum(1 for label in labels if any(part in names for part in label.split()))
    return said / len(labels)
