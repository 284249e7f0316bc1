"""Which memory files an agent may write or read through the API, and their size caps.

The API is narrower than the folder on purpose: a model can only touch the
files the memory layout defines, so a confused or injected instruction cannot
scatter notes (or anything else) around the tier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sidecar.disk.tiers import decode_text, is_archived, is_note
from sidecar.errors import ApiError

_DAILY = re.compile(r"daily/(\d{4}-\d{2}-\d{2})\.md")
_TOPIC = re.compile(r"topics/[a-z0-9][a-z0-9_-]{0,63}\.md")
_OPERATORS = "users/"  # operator models: only the operator API and their own block use them
_LEARNINGS = re.compile(r"learnings/(?:[a-z0-9][a-z0-9_-]{0,63}|archive/\d{4})\.md")
_NAME_MAX = 255  # bytes in one path component (Linux's NAME_MAX)
# The one documented alias: today's daily file (UTC).
TODAY_ALIAS = "daily/today"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

# File kinds, each with its own cap (the field of the same name in ``config.Caps``).
CORE = "core"  # AGENT.md or CREW.md
DAILY = "daily"
TOPIC = "topic"  # topics/, and users/ (which only the operator API writes)
LEARNING = "learning"  # learnings/<slug>.md and learnings/archive/YYYY.md
NOTE = "note"  # any other *.md of the tier: indexed and searchable, so readable; never written

CORE_FILE = {"agent": "AGENT.md", "crew": "CREW.md"}
_SLUG = "slug: lowercase letters, digits, '-' and '_', at most 64"
ALLOWED = {
    "agent": f"AGENT.md, daily/YYYY-MM-DD.md (or {TODAY_ALIAS}), learnings/<slug>.md ({_SLUG})",
    "crew": f"CREW.md, daily/YYYY-MM-DD.md (or {TODAY_ALIAS}), topics/<slug>.md, "
    f"learnings/<slug>.md ({_SLUG})",
}


@dataclass(frozen=True, slots=True)
class MemoryFile:
    scope: str
    rel: str  # tier-relative path
    kind: str  # CORE, DAILY or TOPIC


def today_utc() -> date:
    return datetime.now(UTC).date()


def check_path_shape(file: str) -> None:
    """Refuse what can only be an attempt to leave the tier (403), before any other check."""
    if (
        file.startswith("/")
        or "\\" in file
        or "\x00" in file
        or ".." in file.split("/")
        or re.match(r"^[A-Za-z]:", file)
    ):
        raise ApiError(
            403, "forbidden_path", f"{file!r} is not a plain path inside the memory folder"
        )


def resolve(scope: str, file: object, today: date | None = None) -> MemoryFile:
    """Map the ``file`` an agent named to an allowed tier-relative path, or raise ApiError."""
    if not isinstance(scope, str) or scope not in CORE_FILE:
        raise ApiError(400, "bad_scope", "'scope' must be agent or crew")
    if not isinstance(file, str):
        raise ApiError(400, "bad_file", f"'file' must be a string; allowed: {ALLOWED[scope]}")
    check_path_shape(file)
    if _CONTROL.search(file) or file != file.strip():
        raise ApiError(
            400, "file_not_allowed", f"{file!r} has control characters or surrounding "
            f"whitespace; allowed: {ALLOWED[scope]}",
        )  # fmt: skip
    if file.startswith(_OPERATORS):
        raise ApiError(
            400, "file_not_allowed", f"{file!r} is an operator model: those are written only "
            "by POST /memory/operator on the crew lead (and removed by its opt-out), and shown "
            "only in their own operator's memory block (GET /memory/context with user_id and "
            f"workspace_id); notes cannot read or write them; allowed: {ALLOWED[scope]}",
        )  # fmt: skip
    name = file
    if name == TODAY_ALIAS:
        name = f"daily/{(today or today_utc()).isoformat()}.md"
    if name == CORE_FILE[scope]:
        return MemoryFile(scope, name, CORE)
    m = _DAILY.fullmatch(name)
    if m:
        try:
            date.fromisoformat(m.group(1))
        except ValueError:
            raise ApiError(
                400, "file_not_allowed", f"{m.group(1)} is not a real date (YYYY-MM-DD)"
            ) from None
        return MemoryFile(scope, name, DAILY)
    if scope == "crew" and _TOPIC.fullmatch(name):
        return MemoryFile(scope, name, TOPIC)
    if _LEARNINGS.fullmatch(name):
        return MemoryFile(scope, name, LEARNING)
    raise ApiError(
        400,
        "file_not_allowed",
        f"{file!r} is not a memory file of the {scope} tier; allowed: {ALLOWED[scope]}",
    )


def _log_day(target: MemoryFile) -> date:
    """The day a daily log is of (``resolve`` checked its name is a real date)."""
    return date.fromisoformat(target.rel[len("daily/") : -len(".md")])


def refuse_future_daily(target: MemoryFile, today: date | None = None) -> None:
    """A daily log records what happened: a date more than a day past today in UTC (as
    far as any time zone is ahead) is a slip, 2062 for 2026, not a plan."""
    if target.kind != DAILY:
        return
    day, now = _log_day(target), today or today_utc()
    if day > now + timedelta(days=1):
        raise ApiError(
            400, "file_not_allowed", f"{target.rel} is more than a day after today "
            f"({now.isoformat()} UTC): a daily log is for what happened; write to {TODAY_ALIAS}",
        )  # fmt: skip


def archived_daily(target: MemoryFile, retention_days: int, today: date | None = None) -> str:
    """Where a daily log past the retention window went (``lifecycle`` moves it into its
    month file), for the answer to a read that no longer finds it; empty otherwise."""
    if target.kind != DAILY:
        return ""
    day = _log_day(target)
    if day >= (today or today_utc()) - timedelta(days=retention_days):
        return ""
    return (
        f"{target.rel} is not in daily/: logs older than {retention_days} days are archived; "
        f"read archive/daily/{day.isoformat()[:7]}.md (its section '## {day.isoformat()}'), "
        "or search with archive: true"
    )


def resolve_read(scope: str, file: object, today: date | None = None) -> MemoryFile:
    """What a read may open: every file ``resolve`` allows, and any other note the tier's
    index holds (a regular ``*.md`` outside hidden folders, put there by a person), so
    every search hit can be read. Reads stay confined to the tier like writes."""
    try:
        return resolve(scope, file, today)
    except ApiError as exc:
        if exc.error != "file_not_allowed" or not _other_note(file):
            raise
    assert isinstance(file, str)
    return MemoryFile(scope, file, NOTE)


def _other_note(file: object) -> bool:
    """A path the notes index would hold: ``*.md``, no hidden part, outside the folders
    with a format of their own (learnings, facts). Names with surrounding whitespace or
    control characters stay refused: from a model they are far likelier a slip, and so are
    names longer than a file system allows (255 bytes), which no note can have."""
    if not isinstance(file, str) or _CONTROL.search(file) or file != file.strip():
        return False
    parts = file.split("/")
    return (
        file.endswith(".md")
        and all(p and not p.startswith(".") and len(p.encode()) <= _NAME_MAX for p in parts)
        and (is_note(file) or is_archived(file))  # archived history is read like a note
    )


def compose(current: bytes | None, content: str, mode: str) -> bytes:
    """The file's next bytes. Appends start on a fresh line; every write ends with one."""
    text = content.encode("utf-8")
    if text and not text.endswith(b"\n"):
        text += b"\n"
    if mode == "replace" or not current:
        return text
    return current + (b"" if current.endswith(b"\n") else b"\n") + text


def usage(size: int, cap: int) -> dict[str, int | float]:
    return {"bytes": size, "cap": cap, "pct": round(100 * size / cap, 1)}


def usage_text(size: int, cap: int) -> str:
    return f"{size} of {cap} bytes, {100 * size // cap}%"


WARN_PCT = 80


class CapExceeded(Exception):
    """Raised inside the write lock: the projected file (or tier) is over its cap.
    ``tier_bytes`` is what the tier holds now when it is the tier's cap that was hit, and
    None when it is the file's own."""

    def __init__(
        self,
        what: str,
        cap: int,
        projected: int,
        current: bytes | None,
        tier_bytes: int | None = None,
    ) -> None:
        super().__init__(what)
        self.what = what
        self.cap = cap
        self.projected = projected
        self.current = current
        self.tier_bytes = tier_bytes

    def to_api_error(self) -> ApiError:
        entries = decode_text(self.current or b"")
        held = len(self.current or b"")
        if self.tier_bytes is None:
            advice = (
                "Consolidate the current entries (merge duplicates, drop what is outdated or "
                "already done) and retry in this same turn with mode=replace and the "
                "consolidated content plus the new entry."
            )
            usage = usage_text(held, self.cap)
        else:  # most of the tier may be in other files, which consolidating this one won't free
            advice = (
                f"This file holds {held} of those bytes: consolidate it (mode=replace) if "
                "that is much, else the tier's other files need shrinking or removing "
                "(GET /memory/files lists their sizes), or a larger --cap-tier-bytes."
            )
            usage = f"{self.what} holds {usage_text(self.tier_bytes, self.cap)}; this file {held}"
        return ApiError(
            422,
            "cap_exceeded",
            f"{self.what} would be {self.projected} bytes, over its cap of {self.cap}; "
            f"nothing was written. {advice}",
            {
                "cap": self.cap,
                "projected": self.projected,
                "current_entries": entries,
                "usage": usage,
            },
        )
