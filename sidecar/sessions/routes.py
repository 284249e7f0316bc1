"""``POST /memory/session/start`` and ``/memory/session/end``."""

from __future__ import annotations

from aiohttp import web

from sidecar import ops as shared
from sidecar.sessions import ops
from sidecar.sessions.sessions import Sessions

SESSIONS: web.AppKey[Sessions] = web.AppKey("sessions", Sessions)

ROUTES = (
    shared.Route(ops.START, lambda sessions, a: sessions.begin(a)),
    shared.Route(ops.END, lambda sessions, a: sessions.end(a["session_id"])),
)


def add_routes(app: web.Application, capability: Sessions) -> None:
    shared.add_routes(app, SESSIONS, capability, *ROUTES)
