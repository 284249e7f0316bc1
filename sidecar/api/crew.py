"""The lead's crew address: crew-tier reads for the members, and nothing else.

It listens on the crew network (``--crew-listen``), so unlike the loopback API
it trusts no Host header: every request must carry the crew token, compared in
constant time. Only crew search, crew status and a crew-only health check are
routed here, the crew journal's high-value events for a member's ``crew_shared``
recall, crew learnings with the end of a member's session (which reinforces
them) and those extracted from it, and the lead's model for members that borrow it
(OpenAI-compatible ``/v1/embeddings``); the agent tier has no route on this app at all.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from aiohttp import web

from sidecar.api.crew_embeddings import LIMITS, MAX_INPUT_CHARS, MemberLimits, embeddings
from sidecar.api.http import SERVICE, error_middleware
from sidecar.errors import ApiError
from sidecar.journal.ops import recall_query
from sidecar.learnings.ops import search_query
from sidecar.learnings.sessions import CREW
from sidecar.retrieval.embedders.base import MAX_INPUTS
from sidecar.retrieval.ops import SEARCH
from sidecar.service import MemoryService
from sidecar.sessions.ops import END
from sidecar.web import Handler, json_body

log = logging.getLogger(__name__)

# A full batch of the longest texts, JSON-escaped, and room to spare.
MAX_BODY_BYTES = 2 * MAX_INPUTS * MAX_INPUT_CHARS


def _auth(token: str) -> Any:
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return web.json_response(
                {"error": "unauthorized", "detail": "a valid crew token is required"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="crew"'},
            )
        return await handler(request)

    return middleware


async def search(request: web.Request) -> web.Response:
    args = SEARCH.parse(await json_body(request))
    if args["scope"] != "crew":
        raise ApiError(403, "crew_only", "the crew address serves only scope=crew")
    response = await request.app[SERVICE].search.search(**args)
    return web.json_response(response.to_json())


async def recall(request: web.Request) -> web.Response:
    """A member's crew_shared recall: the crew journal's high-value events only."""
    q, _, mark = recall_query(await json_body(request))
    return web.json_response(await request.app[SERVICE].journal.recall_crew(q, mark))


async def learnings_search(request: web.Request) -> web.Response:
    """A member's crew learnings; the lead remembers them for the member's session."""
    q = search_query(await json_body(request), "crew")
    if q.scope != "crew":
        raise ApiError(403, "crew_only", "the crew address serves only scope=crew")
    return web.json_response(await request.app[SERVICE].learnings.search(q, CREW))


async def end_session(request: web.Request) -> web.Response:
    """A member's session ended: reinforce the crew learnings it was shown. Crew sessions
    are their own namespace: a lead's local session id means nothing here."""
    session_id = END.parse(await json_body(request))["session_id"]
    return web.json_response(await request.app[SERVICE].learnings.end_session(session_id, CREW))


async def learnings_extracted(request: web.Request) -> web.Response:
    """A member's ended session taught the crew something: the lead applies it."""
    body = await json_body(request)
    return web.json_response(await request.app[SERVICE].extraction.apply_from_member(body))


async def status(request: web.Request) -> web.Response:
    if request.query.get("scope", "crew") != "crew":
        raise ApiError(403, "crew_only", "the crew address serves only scope=crew")
    return web.json_response(await request.app[SERVICE].status("crew"))


async def healthz(request: web.Request) -> web.Response:
    """The lead's health as the crew sees it: no agent-tier paths or state."""
    health = await request.app[SERVICE].health()
    crew = {k: v for k, v in health["tiers"]["crew"].items() if k != "root"}
    ok = crew["state"] == "ready" and not crew.get("last_error")
    body = {"status": "ok" if ok else "degraded", "role": health["role"], "tiers": {"crew": crew}}
    return web.json_response(body)


def create_crew_app(service: MemoryService, token: str) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY_BYTES, middlewares=[_auth(token), error_middleware]
    )
    app[SERVICE] = service
    app[LIMITS] = MemberLimits()
    app.router.add_post("/memory/search", search)
    app.router.add_post("/memory/recall", recall)
    app.router.add_post("/memory/learnings/search", learnings_search)
    app.router.add_post("/memory/session/end", end_session)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_post("/memory/learnings/extracted", learnings_extracted)
    app.router.add_get("/memory/status", status)
    app.router.add_get("/healthz", healthz)
    return app
