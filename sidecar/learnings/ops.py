"""The learnings' operations, declared once: the HTTP routes (and the lead's crew address)
check requests with them, the MCP tools take their schemas from them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sidecar import ops
from sidecar.disk.tiers import SCOPES
from sidecar.errors import ApiError
from sidecar.learnings import entries
from sidecar.learnings.ranking import ANY_STATUS, MAX_LIST, ORDERS, PROMINENCE, RANKINGS
from sidecar.retrieval.modes import MODES

if TYPE_CHECKING:  # the capability loads the safety scanner: the command line reads these
    from sidecar.learnings.learnings import SearchQuery

_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_FILE = re.compile(r"learnings/[a-z0-9][a-z0-9_-]{0,63}\.md")


def _text(value: object, name: str) -> str:
    text = ops.string_value(value, name)
    if not text or not text.strip():
        raise ApiError(
            400, "bad_text", "'text' is required: what was learned, in a sentence or few"
        )
    if len(text) > entries.MAX_TEXT_CHARS:
        raise ApiError(
            413,
            "text_too_long",
            f"'text' is limited to {entries.MAX_TEXT_CHARS} characters; a learning is "
            "a few sentences (put longer material in a note and refer to it)",
        )
    if entries.RULE_LINE.search(text):
        raise ApiError(
            400,
            "bad_text",
            "'text' must not contain a line of just '---', which "
            "separates entries in a learnings file",
        )
    return text


def _slug(value: object, name: str) -> str:
    slug = (ops.string_value(value, name) or "general").removeprefix("learnings/")
    slug = slug.removesuffix(".md")
    if not _SLUG.fullmatch(slug):
        raise ApiError(
            400,
            "bad_file",
            "'file' is a slug (lowercase letters, digits, '-' and "
            "'_', at most 64), e.g. deploys: the entry goes to learnings/<file>.md",
        )
    return slug


def _budgets(value: object, name: str) -> dict[str, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = dict.fromkeys(entries.TYPES, value)
    if not isinstance(value, dict) or not all(
        k in entries.TYPES and isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 100_000
        for k, v in value.items()
    ):
        raise ApiError(
            400,
            "bad_max_chars_per_type",
            "'max_chars_per_type' must be a number of "
            "characters (1-100000) for every type, or an object of them by type",
        )
    return value


def _file(value: object, name: str) -> str | None:
    file = ops.string_value(value, name)
    if file is not None and not _FILE.fullmatch(file):
        raise ApiError(400, "bad_file", "'file' must be learnings/<slug>.md")
    return file


LEARN = ops.Op.of(
    "POST /memory/learnings",
    text=ops.Field(
        {"type": "string", "minLength": 1, "maxLength": entries.MAX_TEXT_CHARS},
        _text,
        required=True,
    ),
    type=ops.choice(entries.TYPES, "declarative"),
    domain=ops.choice(entries.DOMAINS, "task"),
    importance=ops.score(entries.DEFAULT_IMPORTANCE),
    institutional=ops.flag(False, "a standing directive loaded into every memory block"),
    file=ops.Field(
        {
            "type": "string",
            "maxLength": 64,
            "default": "general",
            "description": "topic slug: the entry goes to learnings/<file>.md",
        },
        _slug,
    ),
    scope=ops.scope(),
    unsure="the learning may or may not have been saved. Look it up with memory.learnings "
    "before saving it again.",
)

SEARCH = ops.Op.of(
    "POST /memory/learnings/search",
    query=ops.query(),
    types=ops.words(entries.TYPES, None, f"an array of {', '.join(entries.TYPES)}"),
    limit=ops.whole(1, 50, 10),
    scope=ops.scope(SCOPES, None),  # absent: the capability's own default
    session_id=ops.label(),
    max_chars_per_type=ops.Field({}, _budgets, {}),
    mode=ops.choice(MODES),
    ranking=ops.choice(RANKINGS, "default"),
)
SEARCH_TOOL_SCHEMA = SEARCH.schema(
    omit=("max_chars_per_type", "mode", "ranking"), types={"maxItems": 4}
)

LIST = ops.Op.of(
    "GET /memory/learnings",
    order=ops.choice(ORDERS, PROMINENCE, "prominence, reinforced or recent: best first"),
    limit=ops.whole(1, MAX_LIST, 50),
    scope=ops.scope(SCOPES, None),  # absent: the capability's own default
    status=ops.choice((*entries.STATUSES, ANY_STATUS), "active"),
    type=ops.choice(entries.TYPES),
)

COMPACT = ops.Op.of(
    "POST /memory/learnings/compact",
    scope=ops.scope(),
    file=ops.Field({"type": "string"}, _file),
    dry_run=ops.flag(False),
)


def search_query(body: dict[str, Any], default_scope: str) -> SearchQuery:
    """A search request checked (the lead's crew address reads members' with it)."""
    return search_args(SEARCH.parse(body), default_scope)


def search_args(a: dict[str, Any], default_scope: str) -> SearchQuery:
    from sidecar.learnings.learnings import SearchQuery

    return SearchQuery(
        a["query"],
        a["scope"] or default_scope,
        a["limit"],
        a["types"],
        a["max_chars_per_type"],
        a["session_id"],
        a["mode"],
        a["ranking"],
    )
