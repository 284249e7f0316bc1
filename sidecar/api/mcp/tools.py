"""The MCP server a model talks to, shared by the stdio proxy and ``/mcp``.

Each capability defines its own tools (``notes/tools.py``, ``retrieval/tools.py``);
this server lists them, checks arguments against their schemas, gates them on
health and runs them. Both transports put the same tools over a small
``MemoryBackend`` whose ``run(op, body)`` takes any operation by its declaration:
the stdio proxy's backend sends it to the op's route on the local daemon, the
daemon's own backend calls the handler that route calls. Everything a model can
get wrong or a daemon can fail at comes back as a tool result with ``isError``
and an actionable message, never as a protocol error (which most clients hide
from the model) and never as a success that did not happen.

The tools are listed only while the backend says writes can succeed. A
background task polls ``write_health()``; when the answer flips, the listing
changes and every connected client is told: handshake-era (2025) connections
get ``notifications/tools/list_changed`` on their standalone channel, and
2026-07-28 clients get the same event on their ``subscriptions/listen`` stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from importlib import metadata
from typing import Any, Protocol

import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from sidecar.api.mcp import maintenance, notices
from sidecar.api.mcp.maintenance import ReindexBackend
from sidecar.api.mcp.prompts import MemoryPrompts, PromptsBackend
from sidecar.api.mcp.resources import MemoryResources, ResourcesBackend, target
from sidecar.errors import ApiError, json_type
from sidecar.facts import tools as facts_tools
from sidecar.journal import tools as journal_tools
from sidecar.learnings import tools as learnings_tools
from sidecar.lifecycle import tools as lifecycle_tools
from sidecar.mcp_results import error, result, with_entries
from sidecar.notes import tools as notes_tools
from sidecar.retrieval import tools as search_tools
from sidecar.sessions import tools as sessions_tools
from sidecar.working import tools as working_tools

log = logging.getLogger(__name__)

HEALTH_TIMEOUT = 3.0  # a health check that takes longer counts as unhealthy
NOTIFY_TIMEOUT = 1.0  # per connection, for a list-changed notice


class MemoryBackend(ResourcesBackend, PromptsBackend, ReindexBackend, Protocol):
    """What the tools need from a memory daemon: any operation by its declaration
    (``run``), what resources, prompts and reindexing read, and health.

    Methods raise ``ApiError`` for failures the caller can act on; any other
    exception means the daemon could not be reached or failed unexpectedly.
    """

    async def write_health(self) -> tuple[bool, str | None]: ...


# Every capability's tools, in the order clients list them.
SPECS = {
    spec.definition.name: spec
    for spec in (
        *notes_tools.TOOLS,
        *search_tools.TOOLS,
        *journal_tools.TOOLS,
        *working_tools.TOOLS,
        *learnings_tools.TOOLS,
        *facts_tools.TOOLS,
        *sessions_tools.TOOLS,
        *lifecycle_tools.TOOLS,
        *maintenance.TOOLS,
    )
}
TOOLS = [spec.definition for spec in SPECS.values()]

INSTRUCTIONS = (
    "Long-term memory that outlives this conversation. Search it before answering questions "
    "about earlier work, decisions or people; save lasting facts, decisions and preferences "
    "with memory.write as they come up."
)


# -- argument checking -------------------------------------------------------------


class BadArguments(Exception):
    """The model's arguments do not fit the tool's schema; the message says how."""


def check_arguments(schema: dict[str, Any], raw: dict[str, Any] | None) -> dict[str, Any]:
    """Validate flat arguments against our own schemas and fill defaults.

    Our schemas use flat properties (strings, numbers, booleans, a JSON object, an
    array of strings) with enum, bounds and lengths, so a few lines give messages a
    model can act on ("unknown argument 'path'; allowed: ...") instead of a
    validator's generic ones.
    """
    args = dict(raw or {})
    props: dict[str, dict[str, Any]] = schema["properties"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        raise BadArguments(
            f"unknown argument(s) {', '.join(repr(u) for u in unknown)}; "
            f"allowed: {', '.join(props)}"
        )
    missing = [name for name in schema.get("required", ()) if name not in args]
    if missing:
        raise BadArguments(f"missing required argument(s) {', '.join(repr(m) for m in missing)}")
    for name, spec in props.items():
        if name not in args:
            if "default" in spec:
                args[name] = spec["default"]
            continue
        value = args[name]
        if spec["type"] == "string" and not isinstance(value, str):
            raise BadArguments(f"'{name}' must be a string, not {json_type(value)}")
        if spec["type"] == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            raise BadArguments(f"'{name}' must be a whole number, not {json_type(value)}")
        if spec["type"] == "number" and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise BadArguments(f"'{name}' must be a number, not {json_type(value)}")
        if spec["type"] == "boolean" and not isinstance(value, bool):
            raise BadArguments(f"'{name}' must be true or false, not {json_type(value)}")
        if spec["type"] == "object" and not isinstance(value, dict):
            raise BadArguments(f"'{name}' must be an object, not {json_type(value)}")
        if spec["type"] == "array":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise BadArguments(f"'{name}' must be an array of strings")
            if len(value) > spec.get("maxItems", len(value)):
                raise BadArguments(f"'{name}' holds at most {spec['maxItems']} items")
            continue
        if "enum" in spec and value not in spec["enum"]:
            raise BadArguments(f"'{name}' must be one of {', '.join(spec['enum'])}; got {value!r}")
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"{low} or more"
            raise BadArguments(f"'{name}' must be {bounds}; got {value}")
        if spec.get("minLength") and not value.strip():
            raise BadArguments(f"'{name}' must not be empty")
        if "maxLength" in spec and len(value) > spec["maxLength"]:
            raise BadArguments(f"'{name}' is limited to {spec['maxLength']} characters")
    return args


# -- results -----------------------------------------------------------------------


def render_failure(tool: str, exc: ApiError) -> str:
    return with_entries(f"{tool} failed ({exc.error}): {exc.detail}", exc.extra)


# -- the server --------------------------------------------------------------------


class _Server(Server[Any]):
    """A low-level server that advertises ``tools.listChanged`` on every transport.

    The streamable HTTP session manager builds its initialize answer from
    ``create_initialization_options()`` with no arguments, so the flag has to be
    the default rather than something each caller remembers to pass.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options
            or NotificationOptions(
                tools_changed=True, resources_changed=True, prompts_changed=True
            ),
            experimental_capabilities,
            extensions,
        )


def quiet_sdk_logs() -> None:
    """The SDK logs every session at INFO; the sidecar's INFO is for its own lifecycle."""
    sdk = logging.getLogger("mcp")
    if not sdk.isEnabledFor(logging.DEBUG):
        sdk.setLevel(logging.WARNING)


def _version() -> str:
    try:
        return metadata.version("memory-sidecar")
    except metadata.PackageNotFoundError:
        return "0"


class MemoryTools:
    """The MCP server for one backend: tool handlers, health gating, change fan-out."""

    def __init__(self, backend: MemoryBackend, *, name: str = "memory-sidecar") -> None:
        self.backend = backend
        self.healthy = False
        self.reason: str | None = "health not checked yet"
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        # Handshake-era connections, weakly: a closed one drops out by itself.
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.server = _Server(
            name,
            version=_version(),
            instructions=INSTRUCTIONS,
            # The lists change with health, the files under them: never fresh for long.
            cache_hints={
                method: CacheHint(ttl_ms=0)
                for method in ("tools/list", "resources/list", "resources/read", "prompts/list")
            },
            get_tool_input_schema=lambda tool: (
                SPECS[tool].definition.input_schema if tool in SPECS else None
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._listen,
        )
        self.server.middleware.append(self._track_connection)
        # Resources, prompts, completion and logging: each in its own module.
        self.resources = MemoryResources(
            backend, self.bus, lambda: list(self._connections), self._withheld
        )
        self.resources.install(self.server)
        MemoryPrompts(backend, self.resources).install(self.server)
        notices.install(self.server)

    async def _listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        for asked in params.notifications.resource_subscriptions or ():
            target(asked)  # refused as resources/subscribe refuses it
        await self.resources.ready()  # a listen stream hears of every edit after its ack
        return await self.listen(ctx, params)

    def _withheld(self) -> str | None:
        """Why resources and prompts are withheld with the tools, or None."""
        return None if self.healthy else self.reason

    # -- health gating -------------------------------------------------------------

    async def refresh_health(self) -> bool:
        """Ask the backend once; on a change, update the listing and tell every client."""
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT):
                healthy, reason = await self.backend.write_health()
        except TimeoutError:
            healthy, reason = False, f"health check took longer than {HEALTH_TIMEOUT:g}s"
        except Exception as exc:
            healthy, reason = False, f"health check failed: {exc or type(exc).__name__}"
        changed = healthy != self.healthy
        self.healthy, self.reason = healthy, None if healthy else (reason or "unhealthy")
        if changed:
            if healthy:
                log.info("memory tools available")
            else:
                log.warning("memory tools withdrawn", extra={"reason": self.reason})
            await self.notify_tools_changed()
            await self.resources.list_changed()
        return changed

    async def monitor(self, interval: float) -> None:
        """Poll health forever; handlers only ever read the last answer."""
        while True:
            await self.refresh_health()
            await asyncio.sleep(interval)

    async def notify_tools_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        await self.bus.publish(PromptsListChanged())
        for connection in list(self._connections):
            if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue  # 2026 clients hear it on their listen stream, published above
            # Best effort, and bounded: a client that stopped reading must not
            # stall the health monitor for everyone else.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(NOTIFY_TIMEOUT):
                    await connection.send_tool_list_changed()
                    await connection.send_prompt_list_changed()

    async def _track_connection(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        # SDK 2.3 gives low-level handlers no public handle on the connection, only
        # the per-request session around it; the pin in pyproject keeps this honest
        # and the stdio tests fail if it stops delivering.
        connection = getattr(ctx.session, "_connection", None)
        if isinstance(connection, Connection):
            self._connections.add(connection)
        return await call_next(ctx)

    # -- handlers ---------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(TOOLS) if self.healthy else [])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        token = maintenance.PROGRESS.set(ctx.session.report_progress)
        try:
            answer = await self.call(params.name, params.arguments)
        finally:
            maintenance.PROGRESS.reset(token)
        await notices.after_tool(ctx, params.name, answer)
        return answer

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run one tool call; every failure becomes an ``isError`` result."""
        spec = SPECS.get(name)
        if spec is None:
            return error(
                f"unknown tool {name!r}; this server has {', '.join(SPECS)}", "unknown_tool"
            )
        try:
            args = check_arguments(spec.definition.input_schema, arguments)
        except BadArguments as exc:
            text = f"{name}: {exc}. Nothing was done; fix the arguments and retry."
            return error(text, "bad_arguments")
        if not self.healthy:
            return error(f"{spec.unavailable} ({self.reason})", "unavailable")
        try:
            return await spec.run(self.backend, args)
        except ApiError as exc:
            body = {"status": exc.status, **exc.to_json()}
            return result(render_failure(name, exc), body, is_error=True)
        except Exception as exc:
            log.warning("memory tool call failed", extra={"tool": name, "error": repr(exc)})
            return error(f"{spec.unavailable} ({exc or type(exc).__name__})", "unavailable")
