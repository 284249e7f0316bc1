"""The learnings file format: markdown entries, each a YAML front-matter block and its text.

    ---
    id: 0d6c2f1e-...
    type: corrective
    domain: task
    importance: 0.8
    reinforcement_count: 3
    last_reinforced: '2026-11-20'
    status: active
    ---
    The staging deploy needs the VPN up; run `vpn up staging` first.

The file is the source of truth; everything here is a plain function of its text.
A block that is not valid YAML, or a field with a wrong value, never hides the entry:
it is read with default metadata and the problem is reported with its line. Edits
(reinforcement, compaction) change only the named fields' lines and keep every
other byte of the file.
"""

from __future__ import annotations

import io
import re
import reprlib
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import yaml

from sidecar import strict_yaml

TYPES = ("declarative", "procedural", "directive", "corrective")
DOMAINS = ("task", "team")
STATUSES = ("active", "retired", "compacted")
DEFAULT_IMPORTANCE = 0.5
MAX_TEXT_CHARS = 4000  # one learning is a few sentences; longer text belongs in a note
# Far above any real count, far below what a float (prominence) cannot hold.
MAX_COUNT = 1_000_000_000
MAX_SOURCE_CHARS = 160  # "session:" and a session id (at most 128)
MAX_PROBLEM_CHARS = 200  # a problem quotes at most an excerpt of the value it is about

_LOADER = strict_yaml.LOADER
_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:")
_WORD = re.compile(r"\w+")
# A line in a learning's text that the parser could take for a separator (``_rule``, and
# more: any leading blanks or byte-order mark), so a text holding one is refused.
RULE_LINE = re.compile(r"^[\s\ufeff]*---\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Entry:
    """One learning as read from its file: metadata, text and where it is."""

    id: str
    type: str
    domain: str
    importance: float
    reinforcement_count: int
    last_reinforced: str | None  # ISO date
    status: str
    created: str | None
    institutional: bool
    text: str
    line: int  # 1-based line of its opening ``---`` (of its text if it has no block)
    end_line: int  # last line of its text
    fields_ok: bool = True  # the block parsed as a mapping: it can be edited in place
    problems: tuple[str, ...] = field(default=())
    source: str | None = None  # what wrote it, when not the agent: "session:<id>"

    def meta(self) -> dict[str, Any]:
        """What the index keeps of an entry: all but the text, which only institutional
        entries carry (the memory block loads them without a search)."""
        meta = {
            "id": self.id, "type": self.type, "domain": self.domain,
            "importance": self.importance, "reinforcement_count": self.reinforcement_count,
            "last_reinforced": self.last_reinforced, "status": self.status,
            "created": self.created, "institutional": self.institutional,
            "line": self.line, "end_line": self.end_line, "editable": self.fields_ok,
        }  # fmt: skip
        if self.source is not None:
            meta["source"] = self.source
        if self.institutional:
            meta["text"] = self.text
        return meta


@dataclass(frozen=True, slots=True)
class Problem:
    line: int
    error: str


def decode(data: bytes | None) -> str:
    """A learnings file's text for editing: bytes that are not UTF-8 survive the round trip."""
    return (data or b"").decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def words(text: str) -> frozenset[str]:
    """The word set Jaccard similarity is taken over (diversity and compaction)."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        return date.fromisoformat(value.strip()).isoformat()  # ValueError if not a date
    raise ValueError(f"not a date: {_excerpt(value)}")


def derived_id(rel: str, text: str) -> str:
    """A stable id for an entry that has none: the same text in the same file keeps it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"learning:{rel}:{text.strip()}"))


def _excerpt(value: Any) -> str:
    """``repr(value)``, cut short: a problem report never carries a whole value."""
    text = reprlib.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _short(problem: str) -> str:
    if len(problem) <= MAX_PROBLEM_CHARS:
        return problem
    return problem[: MAX_PROBLEM_CHARS - 3] + "..."


def _fields(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """Each known field checked; a bad value falls back to its default and is reported."""
    out: dict[str, Any] = {}

    def take(name: str, check: Any) -> None:
        if name not in data or data[name] is None:
            return
        try:
            out[name] = check(data[name])
        except (ValueError, TypeError) as exc:
            problems.append(f"{name}: {exc}")

    def choice(options: tuple[str, ...]) -> Any:
        def check(v: Any) -> str:
            if v not in options:
                raise ValueError(f"{_excerpt(v)} is not one of {', '.join(options)}")
            return str(v)

        return check

    def unit(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
            raise ValueError(f"{_excerpt(v)} is not a number from 0 to 1")
        return float(v)

    def count(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COUNT:
            raise ValueError(f"{_excerpt(v)} is not a whole number from 0 to {MAX_COUNT:,}")
        return v

    def flag(v: Any) -> bool:
        if not isinstance(v, bool):
            raise ValueError(f"{_excerpt(v)} is not true or false")
        return v

    def ident(v: Any) -> str:
        text = str(v).strip()
        if not text or len(text) > 128:
            raise ValueError("must be 1 to 128 characters")
        return text

    def source(v: Any) -> str:
        text = str(v).strip()
        if not text or len(text) > MAX_SOURCE_CHARS:
            raise ValueError(f"must be 1 to {MAX_SOURCE_CHARS} characters")
        return text

    take("id", ident)
    take("type", choice(TYPES))
    take("domain", choice(DOMAINS))
    take("importance", unit)
    take("reinforcement_count", count)
    take("last_reinforced", _iso)
    take("status", choice(STATUSES))
    take("created", _iso)
    take("institutional", flag)
    take("source", source)
    return out


def _rule(line: str) -> bool:
    return line.lstrip("\ufeff").rstrip() == "---"


def _looks_open(lines: list[str], i: int) -> bool:
    """Line ``i`` is a ``---`` at the top or after a blank line, and the first line after
    it that is not a comment is a ``key:`` line: what a front-matter block starts with."""
    if not _rule(lines[i]) or (i > 0 and lines[i - 1].strip()):
        return False
    j = i + 1
    while j < len(lines) and lines[j].lstrip().startswith("#"):
        j += 1
    return j < len(lines) and bool(_KEY_LINE.match(lines[j]))


def _opens_block(lines: list[str], i: int) -> int | None:
    """The index of the closing ``---`` if line ``i`` opens a front-matter block.

    A markdown rule inside an entry's text does not look like an opening. A block that
    reaches the next entry's opening before any closing line never closed: it opens
    nothing, so the next entry keeps its own fields.
    """
    if not _looks_open(lines, i):
        return None
    for j in range(i + 1, len(lines)):
        if lines[j].rstrip() in ("---", "..."):
            if not lines[j - 1].strip() and _looks_open(lines, j):
                return None
            return j
    return None


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse(rel: str, text: str) -> tuple[list[Entry], list[Problem]]:
    """Every entry of a learnings file, in order, and what was wrong with their blocks."""
    lines = [line.removesuffix("\r") for line in split_lines(text.removeprefix("\ufeff"))]
    # (first line index, closing index or None, body start index)
    starts: list[tuple[int, int | None, int]] = []
    unclosed: list[Problem] = []
    i = 0
    while i < len(lines):
        close = _opens_block(lines, i)
        if close is not None:
            starts.append((i, close, close + 1))
            i = close + 1
            continue
        if _looks_open(lines, i):
            unclosed.append(Problem(i + 1, "front matter never closed: its lines are read as text"))
        if not starts and lines[i].strip() and not lines[i].lstrip().startswith("#"):
            starts.append((i, None, i))  # text before any block (not a title): no block
        i += 1
    entries: list[Entry] = []
    problems: list[Problem] = list(unclosed)
    for n, (first, close, body) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        last = end
        while last > body and not lines[last - 1].strip():
            last -= 1
        body_text = "\n".join(lines[body:last]).strip("\n")
        found: list[str] = []
        data: Any = {}
        if close is None:
            found.append("no front matter: read with default metadata")
        else:
            try:
                data = strict_yaml.load("\n".join(lines[first + 1 : close]))
            except (yaml.YAMLError, ValueError, RecursionError) as exc:
                found.append(f"front matter is not valid YAML ({str(exc).splitlines()[0]})")
                data = None
            if data is not None and not isinstance(data, dict):
                found.append("front matter is not a mapping of fields")
        ok = isinstance(data, dict) and close is not None
        values = _fields(data, found) if isinstance(data, dict) else {}
        if not body_text.strip():
            found.append("the entry has no text")
        found = [_short(p) for p in found]
        entries.append(
            Entry(
                id=values.get("id") or derived_id(rel, body_text),
                type=values.get("type", "declarative"),
                domain=values.get("domain", "task"),
                importance=values.get("importance", DEFAULT_IMPORTANCE),
                reinforcement_count=values.get("reinforcement_count", 0),
                last_reinforced=values.get("last_reinforced"),
                status=values.get("status", "active"),
                created=values.get("created"),
                institutional=values.get("institutional", False),
                text=body_text,
                line=first + 1,
                end_line=max(last, body + 1) if body_text else (close + 1 if close else first + 1),
                fields_ok=ok,
                problems=tuple(found),
                source=values.get("source"),
            )
        )
        problems += [Problem(first + 1, p) for p in found]
    problems.sort(key=lambda p: p.line)
    return entries, problems


def render(fields: dict[str, Any], text: str) -> str:
    """A new entry's block and text, fields in the order the format lists them."""
    lines = ["---"]
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, bool):
            shown = "true" if value else "false"
        elif isinstance(value, str) and name in ("last_reinforced", "created", "source"):
            shown = "'" + value.replace("'", "''") + "'"
        else:
            shown = str(value)
        lines.append(f"{name}: {shown}")
    lines += ["---", text.strip("\n")]
    return "\n".join(lines) + "\n"


# -- editing in place ------------------------------------------------------------------


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/+-]*")


def _scalar(value: Any, old: str | None) -> str:
    """``value`` written the way the line it replaces wrote its value (a string's quotes
    kept: a number written over a quoted one is a number again); a new
    string that YAML would read back as something else (a date, null, a number, a
    mapping) is quoted."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if isinstance(value, str) and old is not None and old[:1] in ("'", '"'):
        return f"{old[0]}{text}{old[0]}"
    if isinstance(value, str) and old is None and not _reads_back(value):
        return "'" + value.replace("'", "''") + "'"
    return text


def _reads_back(text: str) -> bool:
    """Whether YAML reads ``text``, written bare, as the same string."""
    return bool(_PLAIN.fullmatch(text)) and yaml.load(text, Loader=_LOADER) == text


def _edit_block_lines(block: list[str], changes: dict[str, Any]) -> list[str] | None:
    """Change (or add) top-level ``key: value`` lines; None when the block is not a plain
    list of such lines (flow style, a multi-line value being changed)."""
    out = list(block)
    todo = dict(changes)
    done: set[str] = set()
    for i, raw in enumerate(out):
        line, cr = (raw[:-1], "\r") if raw.endswith("\r") else (raw, "")
        m = _KEY_LINE.match(line)
        if not m or m.group(1) not in changes:
            continue
        value_and_comment = line[m.end() :]
        comment = ""
        cm = re.search(r"[ \t]+#.*$", value_and_comment)
        if cm:
            comment = value_and_comment[cm.start() :]
            value_and_comment = value_and_comment[: cm.start()]
        old = value_and_comment.strip()
        if not old or old[:1] in ("|", ">", "[", "{", "&", "*", "!"):
            return None
        key = m.group(1)
        out[i] = f"{line[: m.end()]} {_scalar(changes[key], old)}{comment}{cr}"
        done.add(key)  # every line of a key given twice: YAML reads the last one
    if any(not (ln.strip() == "" or ln.startswith("#") or _KEY_LINE.match(ln) or ln[:1] in " \t")
           for ln in out):  # fmt: skip
        return None
    cr = "\r" if out and out[-1].endswith("\r") else ""
    out += [f"{k}: {_scalar(v, None)}{cr}" for k, v in todo.items() if k not in done]
    return out


def _edit_with_ruamel(block: list[str], changes: dict[str, Any]) -> list[str]:
    """The general case: a round-trip load and dump, which keeps comments and order. Only
    plain data is edited: ``strict_yaml.Refused`` for a block with an anchor or alias.
    ruamel is imported here, on the rare edit that needs it, not by every reader of
    learnings (the session-start hook, the daemon at idle)."""
    from ruamel.yaml import YAML

    strict_yaml.load("\n".join(block))
    rt = YAML()
    rt.preserve_quotes = True
    rt.width = 1 << 16
    data = rt.load("\n".join(block))
    for key, value in changes.items():
        data[key] = value
    out = io.StringIO()
    rt.dump(data, out)
    return split_lines(out.getvalue())


def edit_lines(lines: list[str], line: int, changes: dict[str, Any]) -> None:
    """Change, in place, the fields of the entry whose block opens on ``line`` (1-based)."""
    first = line - 1
    close = _opens_block(lines, first)
    if close is None:
        raise ValueError(f"no front-matter block opens on line {line}")
    block = lines[first + 1 : close]
    edited = _edit_block_lines(block, changes)
    if edited is None:
        edited = _edit_with_ruamel(block, changes)
    lines[first + 1 : close] = edited


def edit_fields(text: str, line: int, changes: dict[str, Any]) -> str:
    """``text`` with the fields of the entry whose block opens on ``line`` changed.

    Only the changed fields' lines differ; every other byte of the file is kept.
    """
    lines = text.split("\n")
    edit_lines(lines, line, changes)
    return "\n".join(lines)
