"""The learnings' HTTP routes: learn, search, end a session, compact."""

from __future__ import annotations

from aiohttp import web

from sidecar.learnings import ops
from sidecar.learnings.learnings import Learnings
from sidecar.web import json_body

LEARNINGS: web.AppKey[Learnings] = web.AppKey("learnings", Learnings)


async def learn(request: web.Request) -> web.Response:
    body = ops.learn_body(await json_body(request))
    return web.json_response(await request.app[LEARNINGS].learn(body), status=201)


async def search(request: web.Request) -> web.Response:
    capability = request.app[LEARNINGS]
    q = ops.search_query(await json_body(request), capability.default_scope())
    return web.json_response(await capability.search(q))


async def end_session(request: web.Request) -> web.Response:
    session_id = ops.END_SESSION.parse(await json_body(request))["session_id"]
    return web.json_response(await request.app[LEARNINGS].end_session(session_id))


async def compact(request: web.Request) -> web.Response:
    answer = await request.app[LEARNINGS].compact(**ops.COMPACT.parse(await json_body(request)))
    return web.json_response(answer)


def add_routes(app: web.Application, capability: Learnings) -> None:
    app[LEARNINGS] = capability
    app.router.add_post("/memory/learnings", learn)
    app.router.add_post("/memory/learnings/search", search)
    app.router.add_post("/memory/learnings/compact", compact)
    app.router.add_post("/memory/session/end", end_session)
