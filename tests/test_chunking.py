"""The markdown chunker: heading sections, size cap, exact line ranges, front matter."""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.index.chunking import (
    CONTEXT_CHARS,
    DEFAULT_MAX_CHARS,
    Chunk,
    ParsedFile,
    chunk_markdown,
    parse_front_matter,
    split_lines,
)

CAP = 40
HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def headings(parsed: ParsedFile) -> list[str]:
    return [c.heading for c in parsed.chunks]


def chunk_with(parsed: ParsedFile, needle: str) -> Chunk:
    found = [c for c in parsed.chunks if needle in c.text]
    assert len(found) == 1, f"{needle!r} is in {len(found)} chunks: {parsed.chunks}"
    return found[0]


def assert_partition(parsed: ParsedFile, lines: list[str], max_chars: int) -> None:
    """Chunks cover every line exactly once, in order; only a cut line is shared."""
    chunks = parsed.chunks
    assert parsed.line_count == len(lines)
    if not lines:
        assert chunks == []
        return
    assert chunks, "a non-empty file must have at least one chunk"
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == len(lines)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines), c
        # Only bare headings joined to the chunk they introduce may take it past the cap,
        # by at most one more cap.
        titles = sum(
            len(ln) + 1 for ln in c.text.split("\n") if HEADING.match(ln) or not ln.strip()
        )
        assert len(c.text) - titles <= max_chars, c
        assert len(c.text) <= 2 * max_chars + 1, c
    for prev, nxt in itertools.pairwise(chunks):
        if nxt.start_line == prev.end_line:
            # Only pieces of one over-long line may share a line number.
            assert len(lines[nxt.start_line - 1]) > max_chars, (prev, nxt)
        else:
            assert nxt.start_line == prev.end_line + 1, (prev, nxt)


# -- split_lines and front matter ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\nb\n", ["a", "b"]),
        ("a\n\n", ["a", ""]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\r\n\r\nb", ["a", "", "b"]),
    ],
)
def test_split_lines_counts_like_an_editor(text: str, expected: list[str]) -> None:
    assert split_lines(text) == expected


def test_parse_front_matter_returns_line_count_and_metadata() -> None:
    lines = ["---", "title: Plan", "tags: [db, billing]", "---", "# Body"]
    assert parse_front_matter(lines) == (4, {"title": "Plan", "tags": ["db", "billing"]})


def test_no_front_matter_without_opening_fence() -> None:
    assert parse_front_matter(["# Title", "---", "a: 1", "---"]) == (0, {})
    assert parse_front_matter([]) == (0, {})


def test_unclosed_front_matter_is_body_text() -> None:
    parsed = chunk_markdown("---\ntitle: never closed\n", CAP)
    assert parsed.metadata == {}
    assert "title: never closed" in "\n".join(c.text for c in parsed.chunks)


def test_front_matter_is_metadata_not_text() -> None:
    text = "---\ntitle: Plan\nowner: zelda\n---\n# Decisions\nWe chose Postgres.\n"
    parsed = chunk_markdown(text, CAP)
    assert parsed.metadata == {"title": "Plan", "owner": "zelda"}
    joined = "\n".join(c.text for c in parsed.chunks)
    assert "zelda" not in joined
    assert "---" not in joined
    assert "We chose Postgres." in joined
    # The front matter lines still belong to the first chunk's range.
    assert parsed.chunks[0].start_line == 1
    assert_partition(parsed, split_lines(text), CAP)


def test_front_matter_only_file_is_one_empty_chunk() -> None:
    parsed = chunk_markdown("---\ntitle: Empty\n---\n", CAP)
    assert parsed.metadata == {"title": "Empty"}
    assert parsed.chunks == [Chunk(1, 3, "", "")]


def test_front_matter_then_blank_lines_is_one_empty_chunk() -> None:
    parsed = chunk_markdown("---\ntitle: Empty\n---\n\n  \n", CAP)
    assert parsed.chunks == [Chunk(1, 5, "", "")]


def test_invalid_yaml_front_matter_gives_no_metadata() -> None:
    parsed = chunk_markdown("---\nkey: [unclosed\n---\nbody text\n", CAP)
    assert parsed.metadata == {}
    assert [c.text for c in parsed.chunks] == ["body text"]
    assert parsed.chunks[0].start_line == 1


def test_front_matter_with_impossible_date_does_not_crash() -> None:
    # YAML reads 2026-02-30 as a timestamp; constructing it raises ValueError, not YAMLError.
    parsed = chunk_markdown("---\ndate: 2026-02-30\n---\nbody text\n", CAP)
    assert [c.text for c in parsed.chunks] == ["body text"]
    assert (parsed.chunks[0].start_line, parsed.chunks[0].end_line) == (1, 4)


# -- headings -----------------------------------------------------------------


def test_empty_file_has_no_chunks() -> None:
    parsed = chunk_markdown("", CAP)
    assert parsed.chunks == []
    assert parsed.line_count == 0
    assert parsed.metadata == {}


def test_whitespace_only_file_is_one_empty_chunk() -> None:
    parsed = chunk_markdown("\n  \n\t\n\n", CAP)
    assert parsed.chunks == [Chunk(1, 4, "", "")]
    assert parsed.line_count == 4


@pytest.mark.parametrize("level", range(1, 7))
def test_every_atx_level_starts_a_chunk(level: int) -> None:
    text = f"intro line\n{'#' * level} Title\nbody line\n"
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    assert [(c.start_line, c.end_line, c.heading) for c in parsed.chunks] == [
        (1, 1, ""),
        (2, 3, "Title"),
    ]
    assert parsed.chunks[1].text == f"{'#' * level} Title\nbody line"


@pytest.mark.parametrize("indent", ["", " ", "  ", "   "])
def test_heading_may_have_up_to_three_leading_spaces(indent: str) -> None:
    parsed = chunk_markdown(f"intro\n{indent}## Indented\nbody\n", DEFAULT_MAX_CHARS)
    assert headings(parsed) == ["", "Indented"]


@pytest.mark.parametrize(
    "line",
    ["    # four spaces is code", "#hashtag", "####### seven", "\\# escaped", "text # inline"],
)
def test_lines_that_are_not_headings(line: str) -> None:
    parsed = chunk_markdown(f"# Top\n{line}\nmore\n", DEFAULT_MAX_CHARS)
    assert [(c.start_line, c.end_line, c.heading) for c in parsed.chunks] == [(1, 3, "Top")]


def test_closing_hashes_are_not_part_of_the_title() -> None:
    parsed = chunk_markdown("## Decisions ##\nbody\n", DEFAULT_MAX_CHARS)
    assert headings(parsed) == ["Decisions"]


def test_breadcrumb_nests_deeper_and_replaces_same_level() -> None:
    text = (
        "# Decisions\n"
        "top text\n"
        "## Database\n"
        "postgres text\n"
        "### Replicas\n"
        "replica text\n"
        "## Queue\n"
        "queue text\n"
        "# Open questions\n"
        "question text\n"
        "### Deep\n"
        "deep text\n"
    )
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    assert chunk_with(parsed, "top text").heading == "Decisions"
    assert chunk_with(parsed, "postgres text").heading == "Decisions > Database"
    assert chunk_with(parsed, "replica text").heading == "Decisions > Database > Replicas"
    assert chunk_with(parsed, "queue text").heading == "Decisions > Queue"
    assert chunk_with(parsed, "question text").heading == "Open questions"
    assert chunk_with(parsed, "deep text").heading == "Open questions > Deep"
    assert len(parsed.chunks) == 6
    assert_partition(parsed, split_lines(text), DEFAULT_MAX_CHARS)


def test_decisions_database_example() -> None:
    text = "# 2026-11-21\n\n## Decisions\n### Database\nWe moved billing to PostgreSQL 16.\n"
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    hit = chunk_with(parsed, "PostgreSQL 16")
    assert hit.heading == "2026-11-21 > Decisions > Database"
    assert (hit.start_line, hit.end_line) == (1, 5)  # the bare headings above join it


def test_no_chunk_is_only_headings() -> None:
    """A hit on a heading alone would cost budget and carry no evidence."""
    text = "# Agent memory\n\n## Preferences\n- terse commits\n\n## Later\n### Empty\n"
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    assert [(c.start_line, c.end_line) for c in parsed.chunks] == [(1, 7)]
    assert (
        parsed.chunks[0].text.startswith("# Agent memory") and "### Empty" in parsed.chunks[0].text
    )
    two = chunk_markdown("# T\n## A\nalpha\n## B\nbeta\n", DEFAULT_MAX_CHARS)
    assert [(c.start_line, c.end_line, c.text) for c in two.chunks] == [
        (1, 3, "# T\n## A\nalpha"), (4, 5, "## B\nbeta"),
    ]  # fmt: skip
    alone = chunk_markdown("# Only a title\n", DEFAULT_MAX_CHARS)
    assert [c.text for c in alone.chunks] == ["# Only a title"]  # nothing else to fold into


def test_a_bare_heading_joins_a_chunk_even_near_the_cap() -> None:
    """Heading and line together are past the cap: the heading still joins its line, not
    left as a chunk of its own that a search could return."""
    line = "word " * 75 + "end"  # 378 characters
    parsed = chunk_markdown(f"# Log\n## A heading of some length\n{line}\n", 400)
    assert [(c.start_line, c.end_line) for c in parsed.chunks] == [(1, 3)]
    assert parsed.chunks[0].text.startswith("# Log\n## A heading")
    # before a line too long for one chunk, the heading joins the line's first piece
    long = "word " * 100 + "end"
    pieces = chunk_markdown(f"## Title\n{long}\n", 400).chunks
    assert [(c.start_line, c.end_line) for c in pieces] == [(1, 2), (2, 2)]
    assert pieces[0].text.startswith("## Title\nword") and len(pieces[0].text) <= 409


def test_code_that_looks_like_a_heading_is_not_folded_as_one() -> None:
    """Found by hypothesis: a "### line" inside a fence is code, so it is evidence of its
    own, not a bare heading to fold into the chunk before it (past the cap)."""
    parsed = chunk_markdown("#### a a0\n```\na a0\n   ### a0 a0 a0\n", 16)
    assert [(c.start_line, c.end_line) for c in parsed.chunks] == [(1, 3), (4, 4)]


def test_headings_folded_on_both_sides_stay_within_two_caps() -> None:
    """A chunk that took the headings before it may not take trailing ones past two caps."""
    text = "# Lead heading\n## S\nwwwww wwwww wwwww ww\n## Trailing heading\n"
    parsed = chunk_markdown(text, 20)
    assert [c.text for c in parsed.chunks] == [
        "# Lead heading\n## S\nwwwww wwwww wwwww ww",
        "## Trailing heading",
    ]


@pytest.mark.parametrize(
    ("opening", "closing"),
    [("```", "```"), ("~~~", "~~~"), ("```python", "```"), ("````", "`````"), ("  ```", "```")],
)
def test_headings_inside_fences_are_code(opening: str, closing: str) -> None:
    text = f"# Real\nbefore\n{opening}\n# not a heading\n## nor this\n{closing}\nafter\n"
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    assert headings(parsed) == ["Real"]
    assert "# not a heading" in parsed.chunks[0].text


def test_fence_is_closed_only_by_the_same_marker() -> None:
    text = "# Real\n```\n~~~\n# still code\n```\n# Next\nbody\n"
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    assert headings(parsed) == ["Real", "Next"]
    assert chunk_with(parsed, "# still code").heading == "Real"


def test_unclosed_fence_swallows_the_rest() -> None:
    parsed = chunk_markdown("# Real\n```\n# code\n", DEFAULT_MAX_CHARS)
    assert headings(parsed) == ["Real"]


def test_crlf_line_endings() -> None:
    text = "# Title\r\nfirst\r\n\r\n## Sub\r\nsecond\r\n"
    parsed = chunk_markdown(text, DEFAULT_MAX_CHARS)
    assert parsed.line_count == 5
    assert [(c.start_line, c.end_line, c.heading, c.text) for c in parsed.chunks] == [
        (1, 3, "Title", "# Title\nfirst"),
        (4, 5, "Title > Sub", "## Sub\nsecond"),
    ]


# -- the size cap ----------------------------------------------------------------


def test_long_section_splits_at_blank_lines() -> None:
    paragraphs = [f"para{i:02d} alpha beta\npara{i:02d} gamma delta" for i in range(12)]
    text = "# Notes\n" + "\n\n".join(paragraphs) + "\n"
    parsed = chunk_markdown(text, 100)
    assert len(parsed.chunks) > 1
    assert {c.heading for c in parsed.chunks} == {"Notes"}
    for p in paragraphs:
        # A paragraph that fits the cap is never torn apart.
        assert len([c for c in parsed.chunks if p in c.text]) == 1, p
    assert_partition(parsed, split_lines(text), 100)


def test_long_paragraph_splits_at_line_boundaries() -> None:
    lines = [f"line {i:02d} of a paragraph without blank lines" for i in range(30)]
    text = "\n".join(lines) + "\n"
    parsed = chunk_markdown(text, 120)
    assert len(parsed.chunks) > 1
    for c in parsed.chunks:
        assert len(c.text) <= 120
        first, last = c.start_line - 1, c.end_line - 1
        assert c.text == "\n".join(lines[first : last + 1])
    assert_partition(parsed, split_lines(text), 120)


def test_default_cap_is_respected() -> None:
    text = "# Big\n" + "\n".join(f"word{i} " * 12 for i in range(400)) + "\n"
    parsed = chunk_markdown(text)
    assert len(parsed.chunks) > 1
    assert all(len(c.text) <= DEFAULT_MAX_CHARS for c in parsed.chunks)
    assert_partition(parsed, split_lines(text), DEFAULT_MAX_CHARS)


def test_over_long_line_is_cut_into_pieces_on_the_same_line() -> None:
    long_line = " ".join(f"token{i}" for i in range(60))
    text = f"before\n{long_line}\nafter\n"
    parsed = chunk_markdown(text, CAP)
    pieces = [c for c in parsed.chunks if c.start_line == c.end_line == 2]
    assert len(pieces) > 1
    assert "".join(c.text for c in pieces) == long_line
    assert all(len(c.text) <= CAP for c in parsed.chunks)
    assert_partition(parsed, split_lines(text), CAP)


@pytest.mark.parametrize(
    "line",
    [
        "中文字符" * 50,
        "日本語のテキスト、とても長い行です。" * 12,
        "😀🎉🚀" * 70,
        " ".join(["naïve café résumé"] * 20),
        "x" * 1000,
    ],
    ids=["cjk", "japanese", "emoji", "latin1", "ascii"],
)
@pytest.mark.parametrize("cap", [16, 17, 23, 64])
def test_over_long_line_pieces_keep_every_character(line: str, cap: int) -> None:
    parsed = chunk_markdown(line + "\n", cap)
    texts = [c.text for c in parsed.chunks]
    assert len(texts) > 1
    assert all(0 < len(t) <= cap for t in texts)
    assert "".join(texts) == line
    assert all("\ufffd" not in t for t in texts)
    assert all(t.encode("utf-8").decode("utf-8") == t for t in texts)
    assert all((c.start_line, c.end_line) == (1, 1) for c in parsed.chunks)


# A grapheme (what a reader sees as one character) made of several code points.
CLUSTERS = {
    "combining_acute": "e\u0301",
    "two_combining_marks": "a\u0308\u0323",
    "skin_tone_emoji": "\U0001f44d\U0001f3fd",
    "zwj_family": "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "flag": "\U0001f1eb\U0001f1f7",
}


@pytest.mark.parametrize("name", CLUSTERS)
def test_over_long_line_is_not_cut_inside_a_character(name: str) -> None:
    cluster = CLUSTERS[name]
    line = cluster * 60
    boundaries = set(range(0, len(line) + 1, len(cluster)))
    for cap in range(16, 40):
        parsed = chunk_markdown(line + "\n", cap)
        texts = [c.text for c in parsed.chunks]
        assert "".join(texts) == line
        assert all(len(t) <= cap for t in texts)
        offset = 0
        for t in texts:
            assert offset in boundaries, f"cap={cap}: piece starts mid-character: {t[:3]!r}"
            assert unicodedata.combining(t[0]) == 0, f"cap={cap}: piece starts with a mark"
            offset += len(t)


# -- property: the chunks partition the file and keep every body line ----------


@dataclass(frozen=True)
class Line:
    text: str
    heading: tuple[int, str] | None = None  # (level, title) of a real heading


FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGZéüßÆ中文字日本😀"
REST = FIRST + "0123456789.,;:!?'\"()-_*/\u0301\u0308"

words = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(FIRST),
    st.text(alphabet=REST, max_size=10),
)
long_words = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(FIRST),
    st.text(alphabet=REST, min_size=30, max_size=200),
)


@st.composite
def prose_lines(draw: st.DrawFn) -> Line:
    ws = draw(st.lists(st.one_of(words, long_words), min_size=1, max_size=25))
    seps = draw(st.lists(st.sampled_from([" ", "  ", "\t"]), min_size=len(ws), max_size=len(ws)))
    body = "".join(w + s for w, s in zip(ws, seps, strict=True)).rstrip(" \t")
    indent = draw(st.sampled_from(["", " ", "  "]))
    trailing = draw(st.sampled_from(["", " ", "  "]))
    return Line(indent + body + trailing)


@st.composite
def heading_lines(draw: st.DrawFn) -> Line:
    level = draw(st.integers(1, 6))
    indent = draw(st.sampled_from(["", " ", "  ", "   "]))
    title = " ".join(draw(st.lists(words, max_size=8)))
    if not title:
        return Line(indent + "#" * level, (level, ""))
    closing = draw(st.sampled_from(["", " #", " ###"]))
    return Line(f"{indent}{'#' * level} {title}{closing}", (level, title))


blank_lines = st.sampled_from(["", " ", "\t", "   "]).map(Line)
not_headings = st.sampled_from(["    # indented code", "#nospace", "####### seven"]).map(Line)


@st.composite
def fence_blocks(draw: st.DrawFn, closed: bool = True) -> list[Line]:
    char = draw(st.sampled_from("`~"))
    n = draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "python", " sh"]))
    inner = draw(
        st.lists(
            st.one_of(prose_lines(), blank_lines, heading_lines().map(lambda h: Line(h.text))),
            max_size=6,
        )
    )
    block = [Line(draw(st.sampled_from(["", "  "])) + char * n + info), *inner]
    if closed:
        block.append(Line(char * draw(st.integers(n, n + 2))))
    return block


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[Line], int]:
    """(text, expected lines, front matter line count)."""
    lines: list[Line] = []
    if draw(st.booleans()):
        lines += [Line("---"), Line("title: generated"), Line("n: 3"), Line("---")]
    fm = len(lines)
    items = st.one_of(
        prose_lines(),
        prose_lines(),
        heading_lines(),
        blank_lines,
        not_headings,
        fence_blocks(),
    )
    for item in draw(st.lists(items, max_size=30)):
        lines += item if isinstance(item, list) else [item]
    if draw(st.booleans()):
        lines += draw(fence_blocks(closed=False))
    endings = draw(
        st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines), max_size=len(lines))
    )
    if lines and not draw(st.booleans()):
        endings[-1] = ""  # no newline at end of file
        if lines[-1].text == "":
            lines.pop()  # editors do not count an empty last line without a newline
    text = "".join(line.text + end for line, end in zip(lines, endings, strict=False))
    return text, lines, fm


def crumbs_per_line(lines: list[Line]) -> list[str]:
    stack: list[tuple[int, str]] = []
    crumb = ""
    out = []
    for line in lines:
        if line.heading is not None:
            level, title = line.heading
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            crumb = " > ".join(t for _, t in stack if t)
        out.append(crumb)
    return out


def squash(s: str) -> str:
    return "".join(s.split())


@settings(max_examples=200, deadline=None)
@given(doc=documents(), max_chars=st.integers(16, 120))
def test_chunks_partition_the_file_and_keep_every_line(
    doc: tuple[str, list[Line], int], max_chars: int
) -> None:
    text, model, fm = doc
    lines = [line.text for line in model]
    parsed = chunk_markdown(text, max_chars)

    assert_partition(parsed, lines, max_chars)
    if fm:
        assert parsed.metadata == {"title": "generated", "n": 3}

    body_nonblank = [i for i in range(fm, len(lines)) if lines[i].strip()]
    if lines and not body_nonblank:
        assert parsed.chunks == [Chunk(1, len(lines), "", "")]
        return
    assert all(c.text.strip() for c in parsed.chunks), "no chunk may be empty"

    crumbs = crumbs_per_line(model)
    cut_pieces: dict[int, list[str]] = {}
    for c in parsed.chunks:
        own = [i for i in range(c.start_line - 1, c.end_line) if i >= fm and lines[i].strip()]
        assert own, f"chunk {c} owns no body line"
        # Bare headings folded into the chunk they introduce: its breadcrumb is its content's.
        content = [i for i in own if model[i].heading is None] or own
        assert c.heading == crumbs[content[0]] or c.heading == crumbs[own[0]], c
        if len(lines[own[-1]]) > max_chars:  # a piece, perhaps after the headings above it
            head = "\n".join(lines[own[0] : own[-1]]).strip()
            assert c.text.startswith(head), c
            cut_pieces.setdefault(own[-1], []).append(c.text[len(head) + bool(head) :])
        else:
            assert c.text == "\n".join(lines[own[0] : own[-1] + 1]).strip(), c
    for i, pieces in cut_pieces.items():
        joined = "".join(pieces)
        assert joined in lines[i]
        assert joined.strip() == lines[i].strip()

    # Joining all chunk texts in order gives back every non-blank body line.
    assert squash("".join(c.text for c in parsed.chunks)) == squash(
        "".join(lines[i] for i in body_nonblank)
    )


# -- appends move only the end of a section -----------------------------------------


def section_chunks(lines: list[str], max_chars: int = DEFAULT_MAX_CHARS) -> list[Chunk]:
    return chunk_markdown("\n".join(lines) + "\n", max_chars).chunks


@pytest.mark.parametrize(
    "entry",
    [
        lambda i: ("- " + "durable append benchmark entry " * 7)[:199],  # bench/writes.py
        lambda i: (
            f"- 09:{i % 60:02d} deployed build {i} to staging; smoke tests green, "
            f"rollback plan in runbook section {i % 7}"
        ),
    ],
    ids=["200_byte_lines", "log_lines"],
)
def test_appending_to_a_long_section_keeps_all_but_its_last_two_chunks(entry) -> None:
    lines = ["# 2026-11-21", *(entry(i) for i in range(30))]
    before = section_chunks(lines)
    for i in range(30, 100):
        lines.append(entry(i))
        after = section_chunks(lines)
        assert len(before) > 3
        kept = before[:-2]
        assert after[: len(kept)] == kept, f"appending line {len(lines)} moved an early cut"
        before = after


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 400), min_size=2, max_size=80),
    appended=st.integers(1, 6),
    cut=st.floats(0.1, 0.95),
    max_chars=st.sampled_from([60, 200, DEFAULT_MAX_CHARS]),
)
def test_appends_only_move_chunks_near_the_old_end(
    sizes: list[int], appended: int, cut: float, max_chars: int
) -> None:
    """Every chunk starting more than two caps before the old end of a section (of lines
    without blank ones, like a log) keeps its cut through an append, and its context too
    when it ends more than CONTEXT_CHARS before the old end."""
    words = itertools.cycle(["alpha", "beta?", "gamma", "delta:", "epsilon", "zeta"])
    lines = ["# Log", *(" ".join(next(words) for _ in range(1 + n // 7))[:n] for n in sizes)]
    old_n = max(2, int(len(lines) * cut))
    old, new = lines[:old_n], lines[: min(len(lines), old_n + appended)]
    offsets = list(itertools.accumulate(len(line) + 1 for line in old))
    old_end = offsets[-1]
    after = section_chunks(new, max_chars)
    cuts = [c._replace(context="") for c in after]
    for c in section_chunks(old, max_chars):
        starts_at = offsets[c.start_line - 2] if c.start_line > 1 else 0
        if old_end - starts_at > 2 * max_chars:
            assert c._replace(context="") in cuts, (c, old_end - starts_at)
            if old_end - offsets[c.end_line - 1] > CONTEXT_CHARS:
                assert c in after, (c, old_end - offsets[c.end_line - 1])
