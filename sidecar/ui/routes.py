"""``GET /ui`` and its assets: static files shipped in the package, read once at start.

The page only calls the JSON API the daemon already serves, so it exposes nothing new;
the Host and Origin guards apply to it as to every route. Every answer carries a strict
Content-Security-Policy, so memory text the page shows can never run as script, and
no asset comes from anywhere but this daemon.
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web

from sidecar.errors import ApiError
from sidecar.ui import PATH

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
# The page's files and their types: nothing else under /ui/ is served.
ASSETS = {
    "index.html": "text/html",
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "dom.js": "text/javascript",
    "views.js": "text/javascript",
    "journal.js": "text/javascript",
    "knowledge.js": "text/javascript",
    "health.js": "text/javascript",
    "lifecycle.js": "text/javascript",
    "ui.css": "text/css",
}
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_BODIES: web.AppKey[dict[str, bytes]] = web.AppKey("ui_assets", dict)


def load() -> dict[str, bytes]:
    """Every asset's bytes, read once: serving them then never touches the disk."""
    static = resources.files("sidecar.ui").joinpath("static")
    return {name: static.joinpath(name).read_bytes() for name in ASSETS}


def _answer(request: web.Request, name: str) -> web.Response:
    body = request.app[_BODIES][name]
    return web.Response(body=body, content_type=ASSETS[name], charset="utf-8", headers=HEADERS)


async def page(request: web.Request) -> web.Response:
    return _answer(request, "index.html")


async def asset(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in ASSETS:
        raise ApiError(404, "not_found", f"no such asset: {PATH}/{name}; the page is at {PATH}")
    return _answer(request, name)


def add_routes(app: web.Application) -> None:
    app[_BODIES] = load()
    app.router.add_get(PATH, page)
    app.router.add_get(PATH + "/{name}", asset)
