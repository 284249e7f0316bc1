"""Memory files as MCP resources: ``memory://{tier}/{path}``, listed, read, completed and
followed, for both transports.

The backend lists and reads through the daemon's ``Browser`` (``notes/browse.py``), so a
resource read is ``memory.read``: confined, hard links refused, flagged text withheld.
Changes arrive from the daemon's watcher and fan out two ways: 2026-07-28 clients hear
them on their ``subscriptions/listen`` stream (the SDK filters by URI); handshake-era
clients get ``notifications/resources/updated`` for the URIs they subscribed to, and
every one of them ``notifications/resources/list_changed``.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol
from urllib.parse import unquote

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from sidecar.api.mcp import notices
from sidecar.disk.tiers import TIER_NAMES
from sidecar.errors import ApiError
from sidecar.mcp_results import Backend, withhold_flagged
from sidecar.notes.browse import kind_of
from sidecar.notes.files import check_path_shape
from sidecar.notes.ops import LIST_FILES, READ_FILE

log = logging.getLogger(__name__)

SCHEME = "memory://"
TEMPLATE = "memory://{tier}/{path}"
PATHS = (
    "AGENT.md, CREW.md, daily/YYYY-MM-DD.md, topics/<slug>.md, "
    "learnings/<slug>.md, journal/YYYY-MM-DD.jsonl or facts/FACTS.md"
)
PAGE_SIZE = 50
SUBSCRIBED = "memory_subscriptions"  # key in a handshake-era Connection.state
NOTIFY_TIMEOUT = 1.0
# A resource travels whole in one message, and clients cap a message (the Python SDK's
# streamable HTTP client at 1 MiB of SSE event): past this, answer the same clear error on
# every transport instead of a transport failure on some.
RESOURCE_BYTES = 512 * 1024  # escaped as JSON, at most about twice this
# What to use instead of a resource too large to send whole, by kind of file.
_INSTEAD = {
    "note": "read a line range with memory.read, or find the part you need with memory.search",
    "learning": "find the lessons you need with memory.learnings",
    "journal": "recall the events you need with memory.recall",
    "facts": "search the facts you need with memory.facts",
}
READY_TIMEOUT = 5.0  # how long a subscribe waits for the change feed to be in place
MIME = {"journal": "application/jsonl"}
DESCRIBE = {
    "note": "memory notes",
    "learning": "learnings (lessons, ranked by prominence)",
    "journal": "one UTC day of the episodic journal, one JSON event a line (read-only)",
    "facts": "facts distilled from the journal (read-only, regenerated)",
}


class ResourcesBackend(Backend, Protocol):
    """Lists and reads with ``run`` (``LIST_FILES``, ``READ_FILE``); raises ``ApiError``
    for failures the caller can act on."""

    def file_changes(self) -> AsyncIterator[dict[str, Any]]:
        """``{"ready": True}`` once following, then ``{"scope", "file", "change"}`` items."""
        ...


def uri(scope: str, file: str) -> str:
    return f"{SCHEME}{scope}/{file}"


def parse_uri(text: str) -> tuple[str, str]:
    """(tier, tier-relative path) of a ``memory://`` URI; the path is percent-decoded, so a
    client that expanded the template with encoding reaches the same file."""
    if not text.startswith(SCHEME):
        raise _invalid(f"{text!r} is not a memory:// URI; resources look like {TEMPLATE}")
    tier, _, path = text[len(SCHEME) :].partition("/")
    if tier not in TIER_NAMES or not path:
        raise _invalid(f"{text!r} names no file of a tier; resources look like {TEMPLATE}")
    return tier, unquote(path)


def target(text: str) -> tuple[str, str]:
    """(tier, path) of a URI naming a file a resource read may open, else the error the read
    answers. The one check of a URI that read, subscribe and listen share: a subscription
    to what no read would serve (``audit.jsonl``, a look-alike of a path) is refused alike,
    not kept. Whether the file exists yet is not asked: a subscription may wait for it."""
    scope, file = parse_uri(text)
    try:
        check_path_shape(file)
    except ApiError as exc:
        raise api_failure(exc) from None
    if kind_of(scope, file) is None:
        raise api_failure(
            ApiError(
                400,
                "file_not_allowed",
                f"{file!r} is not a browsable file of the {scope} tier; resources look like "
                f"{TEMPLATE} with path one of {PATHS}",
            )
        )
    return scope, file


def _invalid(message: str, data: dict[str, Any] | None = None) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message, data)


def api_failure(exc: ApiError) -> MCPError:
    """An ``ApiError`` as the protocol error a resource or prompt request answers with."""
    code = types.INVALID_PARAMS if exc.status < 500 else types.INTERNAL_ERROR
    return MCPError(code, f"{exc.error}: {exc.detail}", {"status": exc.status, **exc.to_json()})


def resource(scope: str, item: dict[str, Any]) -> types.Resource:
    kind = str(item.get("kind") or "note")
    return types.Resource(
        uri=uri(scope, item["file"]),
        name=f"{scope}/{item['file']}",
        title=f"{scope} memory: {item['file']}",
        description=f"{scope} tier, {DESCRIBE.get(kind, kind)}",
        mime_type=MIME.get(kind, "text/markdown"),
        size=item.get("bytes"),
        annotations=types.Annotations(last_modified=item.get("modified")),
    )


def _page(cursor: str | None, found: list[tuple[str, dict[str, Any]]]) -> int:
    """Where the page after ``cursor`` starts. A cursor is the URI the previous page
    ended with, not a count: files that vanish between pages then cost no other file
    its place in the listing."""
    if cursor is None:
        return 0
    try:
        parse_uri(cursor)
    except MCPError:
        raise _invalid(f"unknown cursor {cursor!r}; list again from the start") from None
    keys = [uri(scope, item["file"]) for scope, item in found]
    return bisect.bisect_right(keys, cursor)


class MemoryResources:
    """The resource handlers of one MCP server, and the fan-out of file changes."""

    def __init__(
        self,
        backend: ResourcesBackend,
        bus: SubscriptionBus,
        connections: Callable[[], Iterable[Connection]],
        healthy: Callable[[], str | None],
    ) -> None:
        self.backend = backend
        self.bus = bus
        self.connections = connections  # the handshake-era connections seen so far
        self.unhealthy = healthy  # why resources are withheld, or None
        self.following = asyncio.Event()
        # Each file's (bytes, modified) when the change feed last came up.
        self._listed: dict[tuple[str, str], tuple[Any, Any]] | None = None

    def install(self, server: Any) -> None:
        server.add_request_handler(
            "resources/list", types.PaginatedRequestParams, self._list_resources
        )
        server.add_request_handler(
            "resources/templates/list", types.PaginatedRequestParams, self._list_templates
        )
        server.add_request_handler("resources/read", types.ReadResourceRequestParams, self._read)
        server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._sub)
        server.add_request_handler(
            "resources/unsubscribe", types.UnsubscribeRequestParams, self._unsub
        )

    # -- listing and reading -----------------------------------------------------------

    async def all_files(self) -> list[tuple[str, dict[str, Any]]]:
        """Every tier's files; a tier this sidecar cannot list is left out, not an error."""
        found: list[tuple[str, dict[str, Any]]] = []
        for scope in TIER_NAMES:
            try:
                listed = await self.backend.run(LIST_FILES, {"scope": scope})
                found += [(scope, item) for item in listed.get("files") or []]
            except ApiError as exc:
                log.debug("tier not listed", extra={"tier": scope, "error": exc.detail})
        return found

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        if self.unhealthy() is not None:
            return types.ListResourcesResult(resources=[])
        found = await self.all_files()
        start = _page(params.cursor if params else None, found)
        page = found[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(found)
        return types.ListResourcesResult(
            resources=[resource(scope, item) for scope, item in page],
            next_cursor=uri(page[-1][0], page[-1][1]["file"]) if more else None,
        )

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="memory-file",
            title="A memory file",
            description=f"tier: agent or crew; path: {PATHS} (paths complete as you type)",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read(self, text: str) -> tuple[types.ReadResourceResult, dict[str, Any]]:
        """The resource's contents, and the backend's answer (``flagged`` and all)."""
        why = self.unhealthy()
        if why is not None:
            raise MCPError(types.INTERNAL_ERROR, f"memory sidecar unavailable ({why})")
        scope, file = target(text)
        try:
            body = await self.backend.run(READ_FILE, {"scope": scope, "file": file})
        except ApiError as exc:
            raise api_failure(exc) from None
        shown = withhold_flagged(body)
        size = len(shown["content"].encode("utf-8"))
        if size > RESOURCE_BYTES:
            instead = _INSTEAD.get(str(body.get("kind")), _INSTEAD["note"])
            raise _invalid(
                f"too_large: {text} holds {size:,} bytes, over the {RESOURCE_BYTES:,} a "
                f"resource is served whole in; {instead}",
                {"status": 413, "error": "too_large"},
            )
        mime = MIME.get(str(body.get("kind")), "text/markdown")
        contents = types.TextResourceContents(uri=text, mime_type=mime, text=shown["content"])
        return types.ReadResourceResult(contents=[contents]), body

    async def _read(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        result, body = await self.read(params.uri)
        await notices.after_read(ctx, params.uri, body)
        return result

    # -- subscriptions (handshake era) -----------------------------------------------------

    async def _sub(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        scope, file = target(params.uri)
        connection = getattr(ctx.session, "_connection", None)
        if isinstance(connection, Connection):
            # Kept under the file's own URI (what a change names), told with the client's.
            subscribed = connection.state.setdefault(SUBSCRIBED, {})
            subscribed.setdefault(uri(scope, file), set()).add(params.uri)
        await self.ready()
        return types.EmptyResult()

    async def ready(self) -> None:
        """Wait (briefly) until file changes are followed, so that a subscription answered
        after this hears of an edit made right after it."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(READY_TIMEOUT):
                await self.following.wait()

    async def _unsub(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        connection = getattr(ctx.session, "_connection", None)
        if isinstance(connection, Connection):
            for subscribed in connection.state.get(SUBSCRIBED, {}).values():
                subscribed.discard(params.uri)
        return types.EmptyResult()

    # -- following changes -----------------------------------------------------------

    async def follow(self, retry: float = 1.0) -> None:
        """Fan file changes out to clients forever; reconnect when the feed drops."""
        while True:
            try:
                async for item in self.backend.file_changes():
                    if item.get("ready"):
                        await self._catch_up()
                        self.following.set()
                    elif "file" in item:
                        await self.changed(item["scope"], item["file"], item["change"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("file change feed dropped", extra={"error": repr(exc)})
            self.following.clear()
            await asyncio.sleep(retry)

    async def _catch_up(self) -> None:
        """Once following (again), tell of what changed while the feed was down (the
        daemon restarted, say, and files were edited meanwhile): the listing now
        against the one taken when the feed last came up. What changed while the feed
        was up is told again then: a client refetches once more, which costs less than
        keeping this listing in step with every change."""
        try:
            now = {(scope, item["file"]): (item.get("bytes"), item.get("modified"))
                   for scope, item in await self.all_files()}  # fmt: skip
        except Exception as exc:  # the feed is up but listing failed: nothing to compare
            log.debug("could not list files to catch up", extra={"error": repr(exc)})
            return
        before, self._listed = self._listed, now
        if before is None:
            return
        for key in sorted(before.keys() | now.keys()):
            if key not in now:
                await self.changed(*key, "deleted")
            elif key not in before:
                await self.changed(*key, "created")
            elif before[key] != now[key]:
                await self.changed(*key, "changed")

    async def changed(self, scope: str, file: str, change: str) -> None:
        target = uri(scope, file)
        await self.bus.publish(ResourceUpdated(target))
        if change != "changed":
            await self.bus.publish(ResourcesListChanged())
        for connection in self._legacy():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(NOTIFY_TIMEOUT):
                    for asked in connection.state.get(SUBSCRIBED, {}).get(target, ()):
                        await connection.send_resource_updated(asked)
                    if change != "changed":
                        await connection.send_resource_list_changed()

    async def list_changed(self) -> None:
        """Health flipped: the listing appears or vanishes for every client."""
        await self.bus.publish(ResourcesListChanged())
        for connection in self._legacy():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(NOTIFY_TIMEOUT):
                    await connection.send_resource_list_changed()

    def _legacy(self) -> list[Connection]:
        return [c for c in self.connections() if c.protocol_version not in MODERN_PROTOCOL_VERSIONS]

    # -- completion ------------------------------------------------------------------

    async def complete(self, argument: str, value: str, context: dict[str, str]) -> list[str]:
        """Values for the template's ``tier`` or ``path`` that start with what was typed."""
        if argument == "tier":
            return [t for t in TIER_NAMES if t.startswith(value)]
        if argument != "path" or self.unhealthy() is not None:
            return []
        tier = context.get("tier") or None  # a prompt passes "" for a scope not given
        if tier is not None and tier not in TIER_NAMES:
            return []  # no such tier: nothing under it to offer
        tiers = [tier] if tier is not None else list(TIER_NAMES)
        paths = [item["file"] for scope, item in await self.all_files() if scope in tiers]
        return sorted({p for p in paths if p.startswith(value)})
