"""``/mcp``: streamable HTTP MCP served by the daemon itself, on the same port as the API.

The SDK's streamable HTTP transport is an ASGI application; the daemon is
aiohttp. Rather than run a second server on a second port, ``handle`` turns
each aiohttp request into an ASGI call: the body is read once (aiohttp's 1 MiB
limit applies) and handed over as one ``http.request`` message, and every
``http.response.body`` message is written through to the client as it comes,
so SSE streams (the GET stream, ``subscriptions/listen``) flow event by event.

The tools call ``MemoryService`` directly: no HTTP hop, and the same durable
write path and errors as ``POST /memory/write``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from aiohttp import web
from mcp.server.transport_security import TransportSecuritySettings

from sidecar.api.mcp.sessions import BoundedSessions
from sidecar.api.mcp.tools import MemoryTools, quiet_sdk_logs
from sidecar.facts import routes as facts_routes
from sidecar.journal import routes as journal_routes
from sidecar.learnings import routes as learnings_routes
from sidecar.lifecycle import routes as lifecycle_routes
from sidecar.notes import routes as notes_routes
from sidecar.ops import Op, Route
from sidecar.retrieval import routes as search_routes
from sidecar.service import MemoryService
from sidecar.sessions import routes as sessions_routes
from sidecar.web import HTTP_CODES, MAX_BODY_BYTES, error_response
from sidecar.working import routes as working_routes

log = logging.getLogger(__name__)

DISCONNECT_POLL = 0.5  # how often a waiting stream checks whether its client left
APP_GRACE = 5.0  # how long a request whose client left may take to wind down


class ServiceBackend:
    """``MemoryBackend`` over the daemon's own ``MemoryService``."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        # Each route a tool may run, with the capability (by its attribute) serving it.
        self._routes: dict[str, tuple[Route, str]] = {
            route.where: (route, capability)
            for capability, routes in (
                ("notes", notes_routes.ROUTES),
                ("browser", notes_routes.BROWSE_ROUTES),
                ("search", search_routes.ROUTES),
                ("journal", journal_routes.ROUTES),
                ("working", working_routes.ROUTES),
                ("learnings", learnings_routes.ROUTES),
                ("facts", facts_routes.ROUTES),
                ("sessions", sessions_routes.ROUTES),
                ("lifecycle", lifecycle_routes.ROUTES),
            )
            for route in routes
        }

    async def run(self, op: Op, body: dict[str, Any]) -> dict[str, Any]:
        """The handler the op's route calls, on the same capability: no HTTP hop."""
        route, capability = self._routes[op.route]
        answer: dict[str, Any] = await route.call(
            getattr(self.service, capability), route.args(body)
        )
        return answer

    async def write_health(self) -> tuple[bool, str | None]:
        return await self.service.notes.write_health()

    async def file_changes(self) -> AsyncIterator[dict[str, Any]]:
        async with self.service.browser.follow() as changes:
            yield {"ready": True}
            while (change := await changes.get()) is not None:
                yield change.to_json()

    async def context(
        self, budget: int, query: str | None, user_id: str | None, workspace_id: str | None
    ) -> str:
        return (await self.service.context.build(budget, query, user_id, workspace_id)).text

    async def reindex(self, scope: str) -> dict[str, Any]:
        return await self.service.reindex(scope)

    async def status(self, scope: str) -> dict[str, Any]:
        return await self.service.status(scope)


class McpEndpoint:
    """The session manager, the health monitor and the aiohttp handler for ``/mcp``."""

    def __init__(self, service: MemoryService, poll_interval: float = 1.0, **limits: Any) -> None:
        """``limits``: ``max_sessions`` and ``idle_timeout`` other than ``sessions.py``'s."""
        quiet_sdk_logs()
        self.tools = MemoryTools(ServiceBackend(service))
        self.poll_interval = poll_interval
        self.manager = BoundedSessions(
            self.tools.server,
            **limits,
            # The daemon's Host guard already ran for this request. The SDK's copy
            # knows only 127.0.0.1/localhost/[::1] and would refuse --allowed-host names.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=MAX_BODY_BYTES,
        )
        self._stop = asyncio.Event()
        self._sessions: asyncio.Task[None] | None = None
        self._monitor: asyncio.Task[None] | None = None
        self._follow: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Check health once, then run the session manager and the monitor in their own tasks.

        ``manager.run()`` holds an anyio task group, whose scope must be entered and
        left by the same task; aiohttp runs startup and cleanup hooks in different
        tasks, so the manager gets a task of its own that lives until ``stop``.
        """
        await self.tools.refresh_health()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sessions = asyncio.create_task(self._run_manager(ready), name="mcp-sessions")
        await ready
        self._monitor = asyncio.create_task(self.tools.monitor(self.poll_interval))
        self._follow = asyncio.create_task(self.tools.resources.follow(), name="mcp-files")

    async def _run_manager(self, ready: asyncio.Future[None]) -> None:
        try:
            async with self.manager.run():
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def stop(self) -> None:
        """End open streams and sessions first, so the server's drain does not wait on them."""
        if self._stop.is_set():
            return
        self._stop.set()
        self.tools.listen.close()
        for task in (self._monitor, self._follow):
            if task is not None:
                task.cancel()
        for task in (self._monitor, self._follow, self._sessions):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    # -- the ASGI bridge ------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        finished = asyncio.Event()
        response: web.StreamResponse | None = None
        body_taken = False
        lock = asyncio.Lock()  # the SDK writes from more than one task (events, pings)

        async def receive() -> dict[str, Any]:
            nonlocal body_taken
            if not body_taken:
                body_taken = True
                return {"type": "http.request", "body": body, "more_body": False}
            await _until_disconnected(request, finished)
            return {"type": "http.disconnect"}

        failed: dict[str, Any] | None = None  # an HTTP-level error, answered once complete
        failed_body = b""

        async def send(message: dict[str, Any]) -> None:
            async with lock:
                try:
                    await deliver(message)
                except ConnectionResetError:
                    # The client left (a session closed as soon as its answer came): the
                    # SDK hears a disconnect, not an error to log with a traceback.
                    finished.set()

        async def deliver(message: dict[str, Any]) -> None:
            nonlocal response, failed, failed_body
            if message["type"] == "http.response.start":
                if message["status"] >= 400:
                    failed = message
                    return
                response = web.StreamResponse(status=message["status"])
                for name, value in message.get("headers", ()):
                    response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
                await response.prepare(request)
            elif message["type"] == "http.response.body" and failed is not None:
                failed_body += message.get("body", b"")
                if not message.get("more_body", False):
                    response = _api_error(failed, failed_body)
                    await response.prepare(request)
                    await response.write_eof()
            elif message["type"] == "http.response.body" and response is not None:
                if message.get("body"):
                    await response.write(message["body"])
                if not message.get("more_body", False):
                    await response.write_eof()

        app = asyncio.create_task(self.manager.handle_request(_scope(request), receive, send))
        try:
            await asyncio.shield(app)
        except asyncio.CancelledError:
            # aiohttp may cancel the handler of a client that left. An ASGI app
            # expects to hear that as http.disconnect, not as a cancellation in the
            # middle of its own bookkeeping (the SDK would drop a session whose
            # opening response had already gone out), so tell it and let it finish.
            finished.set()
            await _finish(app)
            raise
        except Exception:
            if response is None or not response.prepared:
                raise  # nothing sent yet: the API's error middleware answers
            # Headers are out; usually the client went away mid-stream.
            log.debug("MCP stream ended with an error", exc_info=True)
        finally:
            finished.set()
        if response is None:
            raise RuntimeError("the MCP transport sent no response")
        return response


def _api_error(start: dict[str, Any], body: bytes) -> web.Response:
    """The transport's own HTTP error (a bad Accept header, an unknown session) in the
    API's ``{"error", "detail"}`` shape, with the transport's reason as the detail; a
    JSON-RPC error answering a request passes through."""
    status = start["status"]
    try:
        parsed = json.loads(body)
        detail = parsed["error"]["message"]
    except (ValueError, KeyError, TypeError):
        parsed, detail = None, body.decode("utf-8", errors="replace").strip() or f"HTTP {status}"
    if isinstance(parsed, dict) and parsed.get("jsonrpc") and parsed.get("id") is not None:
        # A method's own error (a refused resource URI, say): 2026-07-28 answers it with
        # a 4xx status, and the client needs the JSON-RPC body to read it. Left as is.
        response = web.Response(status=status, body=body, content_type="application/json")
    else:
        if status == 405:  # as every other route's 405: name the methods it takes
            allow = [
                v.decode("latin-1") for n, v in start.get("headers", ()) if n.lower() == b"allow"
            ]
            detail = f"the MCP endpoint takes {allow[0] if allow else 'GET, POST, DELETE'}"
        response = error_response(status, HTTP_CODES.get(status, "mcp_transport_error"), detail)
    for name, value in start.get("headers", ()):
        key = name.decode("latin-1")
        if key.lower() not in ("content-type", "content-length"):
            response.headers.add(key, value.decode("latin-1"))
    return response


def _scope(request: web.Request) -> dict[str, Any]:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport else None
    local = transport.get_extra_info("sockname") if transport else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.rel_url.raw_path.encode("latin-1"),
        "query_string": request.rel_url.raw_query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(local[:2]) if isinstance(local, tuple) else None,
        "state": {},
    }


async def _finish(app: asyncio.Task[None]) -> None:
    """Give a told-to-stop ASGI call a moment to wind down, then cancel it."""
    done, _ = await asyncio.wait({app}, timeout=APP_GRACE)
    if not done:
        app.cancel()
    elif not app.cancelled() and app.exception() is not None:
        log.debug("MCP request ended with an error after its client left", exc_info=app.exception())


async def _until_disconnected(request: web.Request, finished: asyncio.Event) -> None:
    """Return once the client has gone (or the exchange is over).

    aiohttp offers no callback for a lost connection on a handler that is not
    reading a body, so the transport is checked at a slow tick. The SDK cancels
    this wait with anyio cancel scopes, which ``asyncio.wait_for`` can swallow on
    Python 3.11, hence anyio's own timeout.
    """
    while not finished.is_set():
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        with anyio.move_on_after(DISCONNECT_POLL):
            await finished.wait()
