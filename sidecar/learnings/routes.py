"""The learnings' HTTP routes: learn, search, end a session, compact."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from sidecar.disk.tiers import parse_scope
from sidecar.errors import ApiError, check_label
from sidecar.learnings import entries
from sidecar.learnings.learnings import RANKINGS, Learnings, SearchQuery
from sidecar.retrieval.modes import MODES
from sidecar.retrieval.routes import task_query
from sidecar.web import bool_field, check_fields, int_field, json_body, string_field

LEARNINGS: web.AppKey[Learnings] = web.AppKey("learnings", Learnings)
LEARN_FIELDS = ("text", "type", "domain", "importance", "institutional", "file", "scope")
SEARCH_FIELDS = (
    "query",
    "types",
    "limit",
    "max_chars_per_type",
    "scope",
    "session_id",
    "mode",
    "ranking",
)
_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_RULE_LINE = re.compile(r"^---\s*$", re.MULTILINE)


def _choice(body: dict[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    value = string_field(body, name, default) or default
    if value not in options:
        raise ApiError(400, f"bad_{name}", f"'{name}' must be one of {', '.join(options)}")
    return value


def _session(body: dict[str, Any]) -> str | None:
    return check_label(string_field(body, "session_id"), "session_id")


def learn_body(body: dict[str, Any]) -> dict[str, Any]:
    """A new learning checked field by field; the same checks for HTTP and MCP."""
    check_fields(body, LEARN_FIELDS)
    text = string_field(body, "text")
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
    if _RULE_LINE.search(text):
        raise ApiError(
            400,
            "bad_text",
            "'text' must not contain a line of just '---', which "
            "separates entries in a learnings file",
        )
    importance = body.get("importance", entries.DEFAULT_IMPORTANCE)
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not (0 <= importance <= 1)
    ):
        raise ApiError(400, "bad_importance", "'importance' must be a number from 0 to 1")
    slug = string_field(body, "file", "general") or "general"
    slug = slug.removeprefix("learnings/").removesuffix(".md")
    if not _SLUG.fullmatch(slug):
        raise ApiError(
            400,
            "bad_file",
            "'file' is a slug (lowercase letters, digits, '-' and "
            "'_', at most 64), e.g. deploys: the entry goes to learnings/<file>.md",
        )
    return {
        "text": text,
        "type": _choice(body, "type", entries.TYPES, "declarative"),
        "domain": _choice(body, "domain", entries.DOMAINS, "task"),
        "importance": float(importance),
        "institutional": bool_field(body, "institutional", False),
        "file": slug,
        "scope": _choice(body, "scope", ("agent", "crew"), "agent"),
    }


def search_query(body: dict[str, Any], default_scope: str) -> SearchQuery:
    check_fields(body, SEARCH_FIELDS)
    text = task_query(body)
    types = body.get("types", [])
    if not isinstance(types, list) or not all(t in entries.TYPES for t in types):
        raise ApiError(400, "bad_types", f"'types' must be an array of {', '.join(entries.TYPES)}")
    budgets = body.get("max_chars_per_type", {})
    if isinstance(budgets, int) and not isinstance(budgets, bool):
        budgets = dict.fromkeys(entries.TYPES, budgets)
    if not isinstance(budgets, dict) or not all(
        k in entries.TYPES and isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 100_000
        for k, v in budgets.items()
    ):
        raise ApiError(
            400,
            "bad_max_chars_per_type",
            "'max_chars_per_type' must be a number of "
            "characters (1-100000) for every type, or an object of them by type",
        )
    mode = string_field(body, "mode")
    if mode is not None and mode not in MODES:
        raise ApiError(400, "bad_mode", f"'mode' must be one of {', '.join(MODES)}")
    return SearchQuery(
        text,
        parse_scope(string_field(body, "scope") or default_scope),
        int_field(body, "limit", 10, 1, 50),
        tuple(types),
        budgets,
        _session(body),
        mode,
        _choice(body, "ranking", RANKINGS, "default"),
    )


async def learn(request: web.Request) -> web.Response:
    body = learn_body(await json_body(request))
    return web.json_response(await request.app[LEARNINGS].learn(body), status=201)


async def search(request: web.Request) -> web.Response:
    capability = request.app[LEARNINGS]
    q = search_query(await json_body(request), capability.default_scope())
    return web.json_response(await capability.search(q))


async def end_session(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("session_id",))
    session_id = _session(body)
    if session_id is None:
        raise ApiError(400, "bad_session_id", "'session_id' is required")
    return web.json_response(await request.app[LEARNINGS].end_session(session_id))


async def compact(request: web.Request) -> web.Response:
    body = await json_body(request)
    check_fields(body, ("scope", "file", "dry_run"))
    scope = _choice(body, "scope", ("agent", "crew"), "agent")
    file = string_field(body, "file")
    if file is not None and not re.fullmatch(r"learnings/[a-z0-9][a-z0-9_-]{0,63}\.md", file):
        raise ApiError(400, "bad_file", "'file' must be learnings/<slug>.md")
    dry_run = bool_field(body, "dry_run", False)
    return web.json_response(await request.app[LEARNINGS].compact(scope, file, dry_run))


def add_routes(app: web.Application, capability: Learnings) -> None:
    app[LEARNINGS] = capability
    app.router.add_post("/memory/learnings", learn)
    app.router.add_post("/memory/learnings/search", search)
    app.router.add_post("/memory/learnings/compact", compact)
    app.router.add_post("/memory/session/end", end_session)
