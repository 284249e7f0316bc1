"""Query planning: plain questions become an OR of quoted terms, FTS5 syntax is kept."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.retrieval.query import MODE_FTS5, MODE_TERMS, STOPWORDS, or_of_terms, plan, terms

QUOTED_OR = re.compile(r'^"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*$')


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """A tiny FTS5 table with the same tokenizer as the index, to run expressions against."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(heading, body, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "INSERT INTO t(heading, body) VALUES (?, ?)",
        [
            ("Database", "We moved billing to PostgreSQL 16."),
            ("Queue", "Redis or memcached, not both."),
            ("Quotes", 'She said "hello" to the team.'),
        ],
    )
    yield conn
    conn.close()


def matching(conn: sqlite3.Connection, expr: str) -> list[str]:
    rows = conn.execute("SELECT heading FROM t WHERE t MATCH ? ORDER BY rank", (expr,))
    return [h for (h,) in rows]


def quoted_terms(expr: str) -> list[str]:
    assert QUOTED_OR.match(expr), expr
    return [t.replace('""', '"') for t in re.findall(r'"((?:[^"]|"")*)"', expr)]


# -- plain questions -----------------------------------------------------------


def test_question_becomes_or_of_quoted_terms(fts: sqlite3.Connection) -> None:
    planned = plan("Which database did we pick for billing?")
    assert planned is not None
    assert planned.mode == MODE_TERMS
    assert planned.match == '"database" OR "pick" OR "billing"'
    assert planned.fallback == planned.match
    assert matching(fts, planned.match) == ["Database"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What's the plan?", ["plan"]),
        ("Where's the deploy log?", ["deploy", "log"]),
        ("should we use redis or memcached and not postgres", ["use", "redis", "memcached"]),
        ("Is PostgreSQL 16 faster than 15?", ["postgresql", "16", "faster", "15"]),
        ("billing billing BILLING?", ["billing"]),
        ("Où est le café?", ["où", "est", "le", "café"]),
        ("did we pick redis, or not?", ["pick", "redis"]),
    ],
)
def test_natural_language_is_terms_mode(question: str, expected: list[str]) -> None:
    planned = plan(question)
    assert planned is not None
    assert planned.mode == MODE_TERMS
    assert quoted_terms(planned.match)[: len(expected)] == expected
    assert not set(quoted_terms(planned.match)) & STOPWORDS


def test_lowercase_operators_are_words_not_syntax(fts: sqlite3.Connection) -> None:
    planned = plan("redis or memcached and not both")
    assert planned is not None
    assert planned.mode == MODE_TERMS
    assert quoted_terms(planned.match) == ["redis", "memcached"]
    assert matching(fts, planned.match) == ["Queue"]


def test_contractions_are_stopwords_too() -> None:
    # "didn't" is in the stopword list; its pieces must not turn into search terms.
    planned = plan("Why didn't the deploy work?")
    assert planned is not None
    assert planned.match == '"deploy" OR "work"'


@pytest.mark.parametrize("question", ["What is it?", "who?", "and then?", "Is it?"])
def test_question_of_only_stopwords_still_has_terms(question: str, fts: sqlite3.Connection) -> None:
    planned = plan(question)
    assert planned is not None
    assert planned.mode == MODE_TERMS
    words = re.findall(r"\w+", question.lower())
    assert quoted_terms(planned.match) == list(dict.fromkeys(words))
    matching(fts, planned.match)  # valid FTS5


@pytest.mark.parametrize("text", ["", "   ", "?", "?!", "...", "'", "\u2014 \u2013", "*"])
def test_text_without_words_plans_nothing(text: str) -> None:
    assert plan(text) is None


@pytest.mark.parametrize("text", ['""', '"?"', "()", "( )", '("")'])
def test_syntax_without_words_plans_nothing(text: str) -> None:
    assert plan(text) is None


# -- explicit FTS5 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ('"moved billing"', ["moved", "billing"]),
        ("redis AND memcached", ["redis", "memcached"]),
        ("redis OR kafka", ["redis", "kafka"]),
        ("billing NOT redis", ["billing", "redis"]),
        ("postgre*", ["postgre"]),
        ("NEAR(moved billing, 3)", ["moved", "billing"]),
        ("(redis OR kafka) AND memcached", ["redis", "kafka", "memcached"]),
        ("heading: database", ["heading", "database"]),
        ("  redis AND memcached  ", ["redis", "memcached"]),
    ],
)
def test_explicit_syntax_is_kept_with_a_terms_fallback(
    text: str, content: list[str], fts: sqlite3.Connection
) -> None:
    planned = plan(text)
    assert planned is not None
    assert planned.mode == MODE_FTS5
    assert planned.match == text.strip()
    fallback_terms = quoted_terms(planned.fallback)
    assert set(content) <= set(fallback_terms)
    assert not {"and", "or", "not"} & set(fallback_terms)
    matching(fts, planned.match)  # as written, these are all valid FTS5
    matching(fts, planned.fallback)


def test_explicit_syntax_finds_what_it_says(fts: sqlite3.Connection) -> None:
    for text, expected in [
        ('"moved billing"', ["Database"]),
        ("billing NOT redis", ["Database"]),
        ("redis NOT memcached", []),
        ("postgre*", ["Database"]),
        ("NEAR(redis memcached, 1)", ["Queue"]),
    ]:
        planned = plan(text)
        assert planned is not None and planned.mode == MODE_FTS5
        assert matching(fts, planned.match) == expected, text


def test_broken_explicit_syntax_has_a_usable_fallback(fts: sqlite3.Connection) -> None:
    planned = plan('"moved billing AND')
    assert planned is not None
    assert planned.mode == MODE_FTS5
    with pytest.raises(sqlite3.OperationalError):
        matching(fts, planned.match)
    assert matching(fts, planned.fallback) == ["Database"]


# -- quoting -------------------------------------------------------------------


def test_or_of_terms_escapes_quotes(fts: sqlite3.Connection) -> None:
    expr = or_of_terms(['hello"to', "zebra"])
    assert expr == '"hello""to" OR "zebra"'
    assert quoted_terms(expr) == ['hello"to', "zebra"]
    assert matching(fts, expr) == ["Quotes"]


def test_or_of_terms_quotes_operator_words(fts: sqlite3.Connection) -> None:
    expr = or_of_terms(["AND", "NEAR", "billing"])
    assert quoted_terms(expr) == ["AND", "NEAR", "billing"]
    assert matching(fts, expr) == ["Database"]


def test_or_of_nothing_is_empty() -> None:
    assert or_of_terms([]) == ""


def test_terms_are_lowercased_deduplicated_and_ordered() -> None:
    assert terms("Redis redis REDIS Kafka a I") == ["redis", "kafka"]


# -- property: a plain-language plan is always valid FTS5 ----------------------

question_text = st.lists(
    st.one_of(
        st.sampled_from(list("abcdefghijklmnopqrstuvwxyzéü中😀0123456789\u0301")),
        st.sampled_from(list(" ?!.,;'-_/\\^+%@#$&=<>[]|~`")),
        st.sampled_from([" and ", " or ", " not ", " near ", "what ", "isn't "]),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=question_text)
def test_plain_text_always_plans_to_valid_fts5(text: str, fts: sqlite3.Connection) -> None:
    planned = plan(text)
    if not re.search(r"\w", text):
        assert planned is None
        return
    assert planned is not None
    assert planned.mode == MODE_TERMS
    assert planned.match == planned.fallback
    assert quoted_terms(planned.match)
    matching(fts, planned.match)  # must not raise
