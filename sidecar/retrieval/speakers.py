"""A question about a person is answered by what that person says.

Notes often keep a conversation as a transcript, one line per turn opened by its speaker's
name ("Melanie: we painted a sunset last weekend"). When a question names someone who
speaks in the candidates ("What has Melanie painted?"), the lines of the *other* speakers
share its words just as well (asking about it, praising it, telling their own) and are
less often the answer: on LoCoMo dev, 339 of the 350 multi-hop evidence turns of a
question naming one speaker are that speaker's own, while 94 of the 732 top-six hits held
no line of theirs (none of them evidence). So a candidate holding a line of a speaker the
question names gains ``modes.SPEAKER_SHARE`` (of the best score, as ``WHEN_SHARE``).

Only labels at the start of a line count, and only names the question writes with a
capital (``query.named``) that a candidate uses as such a label: "Note:" or "TODO:"
lines in ordinary notes lift nothing unless a question names them, and then every
candidate holding one gains alike.
"""

from __future__ import annotations

import re

# "Name:" or "First Last:" at the start of a line, followed by what they said.
_LABEL = re.compile(r"^[ \t]*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?):[ \t]", re.M)


def speaks(text: str, names: frozenset[str]) -> bool:
    """Whether a line of ``text`` opens with a speaker the question names ("Melanie: ...";
    "Dr Ruiz: ..." for a question naming Ruiz)."""
    if not names or ":" not in text:
        return False
    return any(part in names for label in _LABEL.findall(text) for part in label.split())
