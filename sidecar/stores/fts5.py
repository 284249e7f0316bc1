"""Read an FTS5 MATCH expression into a small tree that other engines can run.

The query planner (``sidecar.retrieval.query``) speaks FTS5, which the SQLite store
runs as is. A store without FTS5 parses the same text here, so an agent's query
means the same thing, and is refused for the same mistakes, whichever store holds
the tier. Words are normalised as ``normalize`` does for the indexed text:
lower case, diacritics removed, split on anything that is not a letter or digit,
as FTS5's ``unicode61 remove_diacritics 2`` tokenizer does.

What FTS5 has and PostgreSQL does not is approximated, never refused: ``NEAR``
groups match as an AND of their phrases, ``^`` (first token of a column) as a
plain phrase.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from sidecar.index.store import QuerySyntaxError

COLUMNS = ("heading", "body", "context")  # the SQLite store's FTS5 columns
_TOKEN = re.compile(r"[^\W_]+")
# FTS5 barewords: letters, digits, underscore and anything outside ASCII.
_BAREWORD = re.compile(r"[\w\u0080-\U0010ffff]+")
_PUNCT = set("():*^+,{}-")


def normalize(text: str) -> list[str]:
    """The tokens FTS5's tokenizer would see: lower-cased, without diacritics."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _TOKEN.findall(plain)


@dataclass(frozen=True, slots=True)
class Phrase:
    words: tuple[str, ...]  # normalised tokens, in order; empty matches nothing
    prefix: bool = False  # the last word is a prefix
    columns: frozenset[str] = frozenset(COLUMNS)


@dataclass(frozen=True, slots=True)
class And:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    keep: Node
    drop: Node


Node = Phrase | And | Or | Not


def phrases(node: Node) -> list[Phrase]:
    """Every phrase in the tree, left to right (the ones BM25 scores)."""
    if isinstance(node, Phrase):
        return [node]
    if isinstance(node, Not):
        return phrases(node.keep) + phrases(node.drop)
    return [p for part in node.parts for p in phrases(part)]


def is_bag_of_words(node: Node) -> bool:
    """An OR of single words over every column: any chunk holding one of them matches,
    so no boolean filter is needed beyond finding the words."""
    parts = node.parts if isinstance(node, Or) else (node,)
    return all(
        isinstance(p, Phrase) and len(p.words) == 1 and p.columns == frozenset(COLUMNS)
        for p in parts
    )


def _lex(text: str) -> list[tuple[str, str]]:
    """(kind, value) tokens: "str" (a quoted string), "word", or a punctuation mark."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"':
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise QuerySyntaxError("unterminated string")
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            out.append(("str", "".join(buf)))
            i = j + 1
        elif c in _PUNCT:
            out.append((c, c))
            i += 1
        else:
            m = _BAREWORD.match(text, i)
            if m is None:
                raise QuerySyntaxError(f'fts5: syntax error near "{c}"')
            out.append(("word", m.group()))
            i = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _lex(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> tuple[str, str] | None:
        k = self.i + ahead
        return self.toks[k] if k < len(self.toks) else None

    def take(self, kind: str) -> str:
        tok = self.peek()
        if tok is None or tok[0] != kind:
            got = tok[1] if tok else "end of query"
            raise QuerySyntaxError(f'fts5: syntax error near "{got}"')
        self.i += 1
        return tok[1]

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        return tok is not None and tok == ("word", word)

    def parse(self) -> Node:
        if not self.toks:
            raise QuerySyntaxError("fts5: empty query")
        node = self.or_()
        if self.peek() is not None:
            raise QuerySyntaxError(f'fts5: syntax error near "{self.peek()[1]}"')  # type: ignore[index]
        return node

    def or_(self) -> Node:
        parts = [self.and_()]
        while self.keyword("OR"):
            self.i += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_(self) -> Node:
        parts = [self.not_()]
        while True:
            if self.keyword("AND"):
                self.i += 1
                parts.append(self.not_())
            elif self.starts_primary():
                parts.append(self.not_())
            else:
                break
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def not_(self) -> Node:
        node = self.primary(frozenset(COLUMNS))
        while self.keyword("NOT"):
            self.i += 1
            node = Not(node, self.primary(frozenset(COLUMNS)))
        return node

    def starts_primary(self) -> bool:
        tok = self.peek()
        if tok is None:
            return False
        if tok[0] == "word":
            return tok[1] not in ("AND", "OR", "NOT")
        return tok[0] in ("str", "(", "^", "{", "-")

    def primary(self, columns: frozenset[str]) -> Node:
        tok = self.peek()
        if tok is None:
            raise QuerySyntaxError("fts5: syntax error near end of query")
        kind, value = tok
        if kind == "(":
            self.i += 1
            node = self.or_()
            self.take(")")
            return _restrict(node, columns)
        if kind in ("{", "-") or (kind == "word" and self.peek(1) == (":", ":")):
            return self.primary(columns & self.column_filter())
        if kind == "word" and value == "NEAR" and self.peek(1) == ("(", "("):
            return self.near(columns)
        if kind == "word" and value in ("AND", "OR", "NOT"):
            raise QuerySyntaxError(f'fts5: syntax error near "{value}"')
        return self.phrase(columns)

    def column_filter(self) -> frozenset[str]:
        exclude = False
        if self.peek() == ("-", "-"):
            self.i += 1
            exclude = True
        if self.peek() == ("{", "{"):
            self.i += 1
            names = [self.take("word")]
            while self.peek() != ("}", "}"):
                names.append(self.take("word"))
            self.i += 1
        else:
            names = [self.take("word")]
        self.take(":")
        for name in names:
            if name.lower() not in COLUMNS:
                raise QuerySyntaxError(f"no such column: {name}")
        named = frozenset(n.lower() for n in names)
        return frozenset(COLUMNS) - named if exclude else named

    def near(self, columns: frozenset[str]) -> Node:
        self.i += 2  # NEAR (
        parts: list[Node] = [self.phrase(columns)]
        while self.peek() not in ((")", ")"), (",", ",")):
            parts.append(self.phrase(columns))
        if self.peek() == (",", ","):
            self.i += 1
            distance = self.take("word")
            if not distance.isdigit():
                raise QuerySyntaxError(f'fts5: expected integer, got "{distance}"')
        self.take(")")
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def phrase(self, columns: frozenset[str]) -> Phrase:
        if self.peek() == ("^", "^"):
            self.i += 1
        words = self.phrase_part()
        while self.peek() == ("+", "+"):
            self.i += 1
            words += self.phrase_part()
        prefix = False
        if self.peek() == ("*", "*"):
            self.i += 1
            prefix = bool(words)
        return Phrase(tuple(words), prefix, columns)

    def phrase_part(self) -> list[str]:
        tok = self.peek()
        if tok is None or tok[0] not in ("str", "word"):
            got = tok[1] if tok else "end of query"
            raise QuerySyntaxError(f'fts5: syntax error near "{got}"')
        self.i += 1
        return normalize(tok[1])


def _restrict(node: Node, columns: frozenset[str]) -> Node:
    """A column filter in front of a parenthesised expression applies to every phrase."""
    if columns == frozenset(COLUMNS):
        return node
    if isinstance(node, Phrase):
        return Phrase(node.words, node.prefix, node.columns & columns)
    if isinstance(node, Not):
        return Not(_restrict(node.keep, columns), _restrict(node.drop, columns))
    parts = tuple(_restrict(p, columns) for p in node.parts)
    return And(parts) if isinstance(node, And) else Or(parts)


def parse(match: str) -> Node:
    """The expression as a tree; QuerySyntaxError where FTS5 would refuse it."""
    return _Parser(match).parse()


_KEYWORDS = ("AND", "OR", "NOT", "NEAR")


def or_operands(match: str) -> list[str] | None:
    """The phrases of an expression that is only an OR of phrases (``"a" OR b OR "c d"``),
    each as FTS5 text to MATCH alone; None for anything else (AND, NOT, NEAR, a prefix,
    a column filter, a syntax error), or a single phrase."""
    try:
        toks = _lex(match)
    except QuerySyntaxError:
        return None
    if len(toks) % 2 == 0:
        return None
    out: list[str] = []
    for k, (kind, value) in enumerate(toks):
        if k % 2:
            if (kind, value) != ("word", "OR"):
                return None
        elif kind == "str":
            out.append('"' + value.replace('"', '""') + '"')
        elif kind == "word" and value not in _KEYWORDS:
            out.append(value)
        else:
            return None
    return out if len(out) > 1 else None
