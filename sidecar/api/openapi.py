"""``GET /openapi.json``: the API's contract, kept beside the code as ``openapi.yaml``.

The document is written by hand (YAML, so it reads well in review) and checked by
the tests against the routes the app really serves and, with schemathesis,
against its answers. It is parsed once, when the app is made.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from aiohttp import web
from ruamel.yaml import YAML


@functools.cache
def document() -> dict[str, Any]:
    text = resources.files("sidecar.api").joinpath("openapi.yaml").read_text("utf-8")
    loaded: dict[str, Any] = YAML(typ="safe", pure=True).load(text)
    return loaded


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(document())


def add_routes(app: web.Application) -> None:
    document()  # read now, not on the event loop while serving
    app.router.add_get("/openapi.json", openapi)
