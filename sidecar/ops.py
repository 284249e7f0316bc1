"""Each operation's inputs, declared once, and the field types they are declared with.

An operation (a recall, a learnings search, a write) lists its fields as an ``Op``;
from that one declaration come the HTTP body check with its ``{"error", "detail"}``
answers (``Op.parse``), the MCP tool's input schema (``Op.schema``, which the MCP
server checks arguments against) and the OpenAPI request body it must agree with.
A ``Route`` serves an op: its HTTP route and the MCP tools' calls run one handler.
A client command that mirrors an op takes its arguments from it too (``add_args``,
``cli_body``). The field types below are the one vocabulary every capability uses: a scope, a
label, a 0..1 score, a bounded whole number, a choice of words, a query. A field's
check and its schema are written side by side, so they cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.disk.tiers import SCOPE_ALIASES, TIER_NAMES, parse_scope
from sidecar.errors import MAX_LABEL_CHARS, ApiError, check_label, json_type

if TYPE_CHECKING:  # the command line reads the declarations without the HTTP stack
    from aiohttp import web
    from multidict import MultiMapping

MAX_QUERY_CHARS = 4096  # longer is not a question; every caller refuses it (check_length)


@dataclass(frozen=True, slots=True)
class Field:
    """One input: its JSON schema, what it reads as when absent, and its check.

    ``check(value, name)`` gets the value sent (``default`` when absent) and returns it
    checked, or raises the 400 naming the field."""

    schema: dict[str, Any]
    check: Callable[[Any, str], Any]
    default: Any = None
    required: bool = False
    # For a query parameter: its text as the value to check (text that will not convert
    # is passed on as is, for ``check`` to refuse); ``many``: every value of a repeated one.
    from_text: Callable[[str], Any] = str
    many: bool = False


@dataclass(frozen=True, slots=True)
class Op:
    """One operation's inputs, in the order the schema lists them, and the routes
    (``"POST /memory/recall"``) that take them: the OpenAPI document must agree.

    ``unsure``: for a change, what to check before retrying when a request of it was cut
    off and may or may not have happened (``{name}`` reads a field sent). ``via``: the
    route an MCP tool's call goes to when the op declares none of its own."""

    at: tuple[str, ...]
    fields: Mapping[str, Field]
    unsure: str | None = None
    via: str | None = None

    @classmethod
    def of(cls, *at: str, unsure: str | None = None, via: str | None = None, **fields: Field) -> Op:
        return cls(at, fields, unsure, via)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.fields)

    @property
    def route(self) -> str:
        """Where a call of it goes (``"POST /memory/write"``): the MCP proxy's request."""
        return self.at[0] if self.at else str(self.via)

    def parse(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body's fields checked, every absent one at its default; a 400 naming the
        first field at fault (an unknown one first)."""
        check_fields(body, self.names)
        return {name: f.check(body.get(name, f.default), name) for name, f in self.fields.items()}

    def parse_query(self, params: MultiMapping[str]) -> dict[str, Any]:
        """The same for a GET's query parameters; an empty one reads as absent."""
        unknown = sorted(set(params) - set(self.fields))
        if unknown:
            takes = f"; allowed: {', '.join(self.fields)}" if self.fields else "; it takes none"
            raise ApiError(400, "unknown_parameter", f"unknown parameter(s) {unknown}{takes}")
        out = {}
        for name, f in self.fields.items():
            given = [f.from_text(v) for v in params.getall(name, ()) if v != ""]
            value = given if f.many else (given[0] if given else f.default)
            out[name] = f.check(value, name)
        return out

    def schema(
        self, omit: tuple[str, ...] = (), require: tuple[str, ...] = (), **narrow: dict[str, Any]
    ) -> dict[str, Any]:
        """The JSON schema of the body: an MCP tool's ``inputSchema``. ``omit``: fields the
        tool does not offer; ``require``: fields it makes a model name, default or not;
        ``narrow``: schema keys a tool sets otherwise (a lower limit)."""
        kept = {n: f for n, f in self.fields.items() if n not in omit}
        props = {n: {**f.schema, **narrow.get(n, {})} for n, f in kept.items()}
        for name in require:
            props[name].pop("default", None)
        required = [n for n, f in kept.items() if f.required or n in require]
        return {
            "type": "object",
            "properties": props,
            **({"required": required} if required else {}),
            "additionalProperties": False,
        }


@dataclass(frozen=True, slots=True)
class Route:
    """One operation served: its ``Op``, which of the op's routes, and what it does with
    the capability given the checked arguments (path parameters among them). The HTTP
    route and the daemon's own MCP backend both call ``call``, so they cannot differ.

    ``parse``: False when ``call`` checks the raw body itself (an event batch)."""

    op: Op
    call: Callable[[Any, dict[str, Any]], Awaitable[Any]]
    at: str = ""
    status: int | Callable[[Any], int] = 200
    parse: bool = True

    @property
    def where(self) -> str:
        return self.at or self.op.route

    def args(self, body: dict[str, Any]) -> dict[str, Any]:
        """A JSON body's arguments, as ``call`` takes them."""
        return self.op.parse(body) if self.parse else body

    async def handle(self, request: web.Request, capability: Any) -> web.Response:
        from aiohttp.web import json_response

        from sidecar.web import json_body

        if self.where.startswith("GET "):
            args = self.op.parse_query(request.query)
        else:
            args = self.args(await json_body(request))
        answer = await self.call(capability, {**args, **request.match_info})
        status = self.status if isinstance(self.status, int) else self.status(answer)
        return json_response(answer, status=status)


def add_routes(app: web.Application, key: web.AppKey[Any], capability: Any, *routes: Route) -> None:
    """Serve ``capability`` (kept under ``key``) on each route, as its ``Route`` says."""
    app[key] = capability
    for route in routes:
        method, path = route.where.split(" ", 1)

        async def handle(request: web.Request, route: Route = route) -> web.Response:
            return await route.handle(request, request.app[key])

        if method == "GET":
            app.router.add_get(path, handle)  # and HEAD, as aiohttp does
        else:
            app.router.add_route(method, path, handle)


def check_fields(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ApiError(
            400, "unknown_field", f"unknown field(s) {unknown}; allowed: {', '.join(allowed)}"
        )


def _with_default(schema: dict[str, Any], default: Any, described: str | None) -> dict[str, Any]:
    out = dict(schema)
    if default is not None:
        out["default"] = default
    if described:
        out["description"] = described
    return out


def number(kind: type[int] | type[float]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            return text

    return convert


# -- the command line -----------------------------------------------------------------

_ARG_TYPES: dict[str, Callable[[str], Any]] = {
    "integer": int,
    "number": float,
    "object": json.loads,
}


def add_args(
    parser: argparse.ArgumentParser, op: Op, *spellings: str, **given: str | dict[str, Any]
) -> None:
    """Add ``op``'s fields to a command's parser, each as ``spellings`` writes it, in that
    order: ``"query"`` a positional, ``"-k"`` or ``"--session-id"`` a flag for the field of
    that name, ``"-S --scope --tier"`` one with aliases, ``"types=--type"`` one named
    otherwise. The type, choices, default, required and help come from the field: a list
    is a repeated flag, a boolean or a 0/1 whole number a bare flag (``--no-x``
    for one true by default).
    ``given``: by field, the help (a string) or argparse's keywords, where the command
    line says it its own way."""
    for spelling in spellings:
        name, _, flags = spelling.rpartition("=")
        names = flags.split()
        positional = not names[0].startswith("-")
        longs = [n for n in names if n.startswith("--")] or names
        name = name or longs[0].lstrip("-").replace("-", "_")
        field = op.fields[name]
        kind = field.schema.get("type", "string")
        kw: dict[str, Any] = {} if positional else {"dest": name}
        if kind == "boolean" or _is_count(field):
            kw["action"] = "store_false" if field.default else "store_true"
        elif kind == "array":
            kw |= {"action": "append", "choices": field.schema["items"].get("enum")}
        else:
            kw |= {"type": _ARG_TYPES.get(kind), "choices": field.schema.get("enum")}
            kw["default"] = field.schema.get("default", field.default)
            if field.required and not positional:
                kw["required"] = True
        kw["help"] = field.schema.get("description")
        extra = given.get(name, {})
        kw |= {"help": extra} if isinstance(extra, str) else extra
        parser.add_argument(*names, **{k: v for k, v in kw.items() if v is not None})


def cli_body(op: Op, args: argparse.Namespace) -> dict[str, Any]:
    """The request a command's parsed arguments make: each of ``op``'s fields it was
    given (one it left out stays out, so the daemon's default holds), a bare flag for a
    0/1 whole number sent as one."""
    body = {}
    for name, field in op.fields.items():
        value = getattr(args, name, None)
        if value is not None:
            body[name] = int(value) if _is_count(field) else value
    return body


def _is_count(field: Field) -> bool:
    """A whole number from 0 to 1 (recall's ``walk``): on the command line, a bare flag."""
    return field.schema.get("type") == "integer" and field.schema.get("maximum") == 1


# -- the vocabulary -------------------------------------------------------------------


def string_value(value: object, name: str) -> str | None:
    """A string field's value (None for null), or a 400 naming the field."""
    if value is not None and not isinstance(value, str):
        raise ApiError(400, f"bad_{name}", f"'{name}' must be a string, not {json_type(value)}")
    return value


def text(
    default: str | None = None, *, required: bool = False, about: str | None = None, **schema: Any
) -> Field:
    """A string (``schema``: ``maxLength`` and the like, for the MCP schema only; the
    capability checks what the text may hold)."""
    return Field(
        _with_default({"type": "string", **schema}, default, about),
        string_value,
        default,
        required,
    )


def label(default: str | None = None, about: str | None = None) -> Field:
    """A ``session_id`` or ``source``: printable, at most ``MAX_LABEL_CHARS``."""
    return Field(
        _with_default({"type": "string", "maxLength": MAX_LABEL_CHARS}, default, about),
        lambda value, name: check_label(string_value(value, name), name),
        default,
    )


def choice(options: tuple[str, ...], default: str | None = None, about: str | None = None) -> Field:
    """One of a few words; null or empty reads as ``default`` (None: optional)."""

    def check(value: object, name: str) -> str | None:
        word = string_value(value, name) or default
        if word is not None and word not in options:
            raise ApiError(400, f"bad_{name}", f"'{name}' must be one of {', '.join(options)}")
        return word

    return Field(
        _with_default({"type": "string", "enum": list(options)}, default, about), check, default
    )


def scope(
    allowed: tuple[str, ...] = TIER_NAMES,
    default: str | None = "agent",
    about: str | None = None,
    aliases: bool = False,
) -> Field:
    """A tier (``TIER_NAMES``) or a tier or both (``SCOPES``), read by ``parse_scope``:
    one ``bad_scope`` answer everywhere. ``aliases``: the schema lists recall's old words."""
    words = [*allowed, *(w for w, to in SCOPE_ALIASES.items() if aliases and to in allowed)]

    def check(value: object, name: str) -> str | None:
        if default is None and value in (None, ""):
            return None  # an optional scope: the capability's own default
        return parse_scope(value, allowed)

    return Field(_with_default({"type": "string", "enum": words}, default, about), check, default)


def whole(low: int, high: int | None, default: int | None = None) -> Field:
    """A whole number from ``low`` to ``high`` (no upper bound if None)."""

    def check(value: object, name: str) -> int | None:
        if value is None and default is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < low
            or (high is not None and value > high)
        ):
            bounds = f"from {low} to {high}" if high is not None else f"of {low} or more"
            raise ApiError(400, f"bad_{name}", f"'{name}' must be a whole number {bounds}")
        return value

    schema: dict[str, Any] = {"type": "integer", "minimum": low}
    if high is not None:
        schema["maximum"] = high
    return Field(_with_default(schema, default, None), check, default, from_text=number(int))


def score(default: float | None = None) -> Field:
    """A number from 0 to 1: an importance, a weight."""

    def check(value: object, name: str) -> float | None:
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ApiError(400, f"bad_{name}", f"'{name}' must be a number from 0 to 1")
        return float(value)

    schema = {"type": "number", "minimum": 0, "maximum": 1}
    return Field(_with_default(schema, default, None), check, default, from_text=number(float))


def flag(default: bool, about: str | None = None) -> Field:
    def check(value: object, name: str) -> bool:
        if not isinstance(value, bool):
            raise ApiError(
                400, f"bad_{name}", f"'{name}' must be true or false, not {json_type(value)}"
            )
        return value

    return Field(_with_default({"type": "boolean"}, default, about), check, default)


def words(options: tuple[str, ...] | None, max_items: int | None, detail: str) -> Field:
    """An array of strings (of ``options``, if given), at most ``max_items``; absent, ()."""
    items: dict[str, Any] = {"type": "string"}
    if options is not None:
        items["enum"] = list(options)

    def check(value: object, name: str) -> tuple[str, ...]:
        if (
            not isinstance(value, list)
            or not all(isinstance(v, str) for v in value)
            or (options is not None and not all(v in options for v in value))
            or (max_items is not None and len(value) > max_items)
        ):
            raise ApiError(400, f"bad_{name}", f"'{name}' must be {detail}")
        return tuple(value)

    schema: dict[str, Any] = {"type": "array", "items": items}
    if max_items is not None:
        schema["maxItems"] = max_items
    return Field(schema, check, [], many=True)


def obj(about: str | None = None) -> Field:
    """A JSON object, checked by the capability that reads it."""

    def check(value: object, name: str) -> dict[str, Any] | None:
        if value is not None and not isinstance(value, dict):
            raise ApiError(
                400, f"bad_{name}", f"'{name}' must be an object, not {json_type(value)}"
            )
        return value

    return Field(_with_default({"type": "object"}, None, about), check)


def check_length(text: str) -> None:
    """Refuse a query over ``MAX_QUERY_CHARS`` the same way on every route and tool."""
    if len(text) > MAX_QUERY_CHARS:
        raise ApiError(
            400, "query_too_long", f"'query' is limited to {MAX_QUERY_CHARS} characters "
            f"(got {len(text):,}): ask about one thing at a time",
        )  # fmt: skip


def query(
    code: str = "bad_query", detail: str = "'query' is required: what the task at hand is about"
) -> Field:
    """A required, non-blank query of at most ``MAX_QUERY_CHARS``; ``code`` and ``detail``
    for one that is absent, blank or not a string."""

    def check(value: object, name: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ApiError(400, code, detail)
        check_length(value)
        return value

    schema = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS}
    return Field(schema, check, required=True)
