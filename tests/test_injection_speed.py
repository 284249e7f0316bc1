"""The scanner's anchor search through a long text's words finds exactly what a scan finds."""

from __future__ import annotations

from sidecar.safety import scan
from sidecar.safety.rules import ALL_RULES, _anchors_of
from sidecar.safety.text import Doc, occurrences
from tests.injection_corpus import BENIGN, PAYLOADS


def _long_text() -> str:
    """Every corpus text once, with look-alike letters, leetspeak and overlapping runs."""
    parts = [text for _, text in BENIGN] + [text for _, _, text in PAYLOADS]
    lookalikes = "1gn0r3 \u0430ll \u0440r\u0435v\u0456\u043eus"  # Cyrillic a, p, e, i, o
    parts.append(lookalikes + " ignorignore rm -rf rm  -rf aaaa a: ai: <|im_start|>")
    return "\n\n".join(parts) * 2


def test_the_word_search_of_a_long_text_finds_every_offset_a_scan_finds() -> None:
    doc = Doc(_long_text())
    assert len(doc.text) > 50_000  # long enough to be searched through its words
    anchors = _anchors_of(ALL_RULES) | {b"aa", b"ignorignore", b" aa", b"ore ", b"a: ", b"-rf"}
    for anchor in sorted(anchors):
        assert doc._search(anchor) == occurrences(doc.skeleton, anchor), anchor


def test_a_payload_deep_in_a_long_text_is_still_found() -> None:
    """The search through words is only used on long texts: a payload there must still trip."""
    filler = "\n\n".join(text.replace("\ufeff", "") for _, text in BENIGN) * 3
    assert scan(filler) is None
    for _, _, text in PAYLOADS[::7]:
        if scan(text) is not None:
            assert scan(filler + "\n\n" + text) is not None, text[:60]
