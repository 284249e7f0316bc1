"""Handshake-era MCP sessions over HTTP, bounded to what one container's agents need.

The SDK's session manager keeps up to 10,000 sessions for 30 idle minutes and, once
full, refuses every new client with a 503: a loop of bare ``initialize`` requests (a
buggy client, a hostile one) grows the daemon by hundreds of MB and locks the real
agent out for half an hour. Here few sessions are kept, an idle one expires in
minutes, and a new client is admitted by ending the session that has been idle
longest, preferring one whose client never came back after its ``initialize``; when
none is idle, the one that has only held its GET stream open longest (a client that
leaked its MCP client object keeps one open per session). A client whose session ended
hears ``404 Session not found`` and initializes again, as the protocol has it.
2026-07-28 clients hold no session and are unaffected.

The eviction reaches into the SDK manager's session table (``mcp`` is pinned; the
tests exercise it against that version).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    MCP_SESSION_ID_HEADER,
    StreamableHTTPServerTransport,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

MAX_SESSIONS = 32  # an agent, its subagents and an inspector, with room to spare
IDLE_TIMEOUT = 600.0  # seconds without a request in flight (an open GET stream is one)
_HEADER = MCP_SESSION_ID_HEADER.encode("latin-1")
# (used again after its opening request, idle deadline or last request, id, transport)
_Candidate = tuple[bool, float, str, StreamableHTTPServerTransport]


class BoundedSessions(StreamableHTTPSessionManager):
    """The SDK's manager with a small session limit that evicts instead of refusing."""

    def __init__(
        self,
        app: Any,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle_timeout: float = IDLE_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            app, max_sessions=max_sessions, session_idle_timeout=idle_timeout, **kwargs
        )
        self._returned: set[str] = set()  # sessions used again after their opening request
        self._active_at: dict[str, float] = {}  # a session's last request but its GET stream
        self._warned = False  # the log was told of the limit, until there is room again

    @property
    def open_sessions(self) -> int:
        return len(self._server_instances)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = next((v.decode("latin-1") for k, v in scope["headers"] if k == _HEADER), None)
        if session_id is not None and session_id in self._server_instances:
            self._returned.add(session_id)
            if scope.get("method") != "GET":
                self._active_at[session_id] = time.monotonic()
        await super()._handle_stateful_request(scope, receive, send)

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._evict_one()
        else:
            self._warned = False
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._active_at[transport.mcp_session_id] = time.monotonic()
        return transport

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self._returned.discard(session_id)
        self._active_at.pop(session_id, None)
        await super()._discard_session(session_id, transport)

    def _evict_one(self) -> None:
        """End the idle session least worth keeping: one never used after its opening
        request before one that was, and of those the one idle longest. A session with a
        request in flight is never ended but for its GET stream: with none idle, the one
        that has only held its stream open longest goes. If every session is serving a
        request, the SDK refuses the newcomer with a 503 as before."""
        idle: list[_Candidate] = []
        streaming: list[_Candidate] = []
        for session_id, transport in self._server_instances.items():
            scope = transport.idle_scope
            if scope is None or scope.cancel_called:
                continue
            returned = session_id in self._returned
            # An idle session's scope has a deadline; a busy one's (or one whose opening
            # request is still being served) is infinite.
            if math.isfinite(scope.deadline):
                idle.append((returned, scope.deadline, session_id, transport))
            elif _only_streaming(transport):
                active_at = self._active_at.get(session_id, 0.0)
                streaming.append((returned, active_at, session_id, transport))
        if not (idle or streaming):
            return
        returned, _, session_id, transport = min(idle or streaming, key=lambda item: item[:2])
        # Forgotten now, so the newcomer takes its place at once; cancelling the idle
        # scope ends its message loop, whose own cleanup terminates the transport.
        self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        self._returned.discard(session_id)
        self._active_at.pop(session_id, None)
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()
        # Once per spell at the limit: a flood of initializes evicts at every request.
        if not self._warned:
            self._warned = True
            log.warning(
                "MCP sessions at their limit: the idlest is ended for each new client",
                extra={"limit": self.max_sessions, "idle_timeout_s": self.session_idle_timeout},
            )
        log.debug("MCP session evicted", extra={"session": session_id, "used": returned})


def _only_streaming(transport: StreamableHTTPServerTransport) -> bool:
    """The session's one request in flight is its GET stream (the SDK's own counters)."""
    in_flight = transport._requests_in_flight
    return in_flight == 1 and GET_STREAM_KEY in transport._request_streams
