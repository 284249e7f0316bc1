"""``GET /openapi.json``: the API's contract, kept beside the code as ``openapi.yaml``.

The document is written by hand (YAML, so it reads well in review) and checked by
the tests against the routes the app really serves and, with schemathesis,
against its answers. It is parsed once, when the app is made, by libyaml: the pure
Python loader took a fifth of a second of every start.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml
from aiohttp import web

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def document() -> dict[str, Any]:
    text = resources.files("sidecar.api").joinpath("openapi.yaml").read_text("utf-8")
    loaded: dict[str, Any] = yaml.load(text, Loader=_LOADER)
    return loaded


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(document())


def add_routes(app: web.Application) -> None:
    document()  # read now, not on the event loop while serving
    app.router.add_get("/openapi.json", openapi)
