"""Each operation's inputs are declared once (``sidecar/*/ops.py``): the HTTP checks and
the MCP schemas come from the declaration, and the OpenAPI document must agree with it."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

import sidecar.api.http  # noqa: F401 (loads every capability's declarations)
from sidecar.api.mcp.http import ServiceBackend
from sidecar.api.openapi import document
from sidecar.ops import Op
from sidecar.service import MemoryService

SCHEMA_KEYS = ("type", "enum", "minimum", "maximum", "default")


def _declared() -> dict[tuple[str, str], Op]:
    found: dict[tuple[str, str], Op] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("sidecar."):
            continue
        for value in vars(module).values():
            if isinstance(value, Op):
                for at in value.at:
                    method, path = at.split(" ", 1)
                    found[(method.lower(), path)] = value
    return found


DECLARED = _declared()


def _inputs(operation: dict[str, Any], method: str) -> tuple[dict[str, Any], set[str]]:
    """(schema by input name, required names) of an OpenAPI operation."""
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None and "properties" in body["schema"]:
        schema = body["schema"]
        return schema.get("properties", {}), set(schema.get("required", []))
    components = document()["components"]["parameters"]
    params = [components[p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
              for p in operation.get("parameters", [])]  # fmt: skip
    params = [p for p in params if p["in"] == "query"]
    return {p["name"]: p.get("schema", {}) for p in params}, {
        p["name"] for p in params if p.get("required")
    }


def _comparable(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: schema[k] for k in SCHEMA_KEYS if k in schema}
    if "enum" in out:
        out["enum"] = sorted(out["enum"])  # the order of the words means nothing
    return out


@pytest.mark.parametrize(
    ("method", "path"), sorted(DECLARED), ids=[" ".join(k) for k in sorted(DECLARED)]
)
def test_the_openapi_document_agrees_with_the_declaration(method: str, path: str) -> None:
    op = DECLARED[(method, path)]
    documented, required = _inputs(document()["paths"][path][method], method)
    assert set(documented) == set(op.names)
    for name, field in op.fields.items():
        mine = _comparable(field.schema)
        theirs = _comparable(documented[name])
        shared = set(mine) & set(theirs)
        assert {k: mine[k] for k in shared} == {k: theirs[k] for k in shared}, name
    assert required <= {n for n, f in op.fields.items() if f.required}


def test_every_documented_json_body_is_declared() -> None:
    """A route that takes a body checks it through a declaration (recording an event is
    the journal's own batch check, with ``events[i]`` in its answers)."""
    undeclared = [
        (method, path)
        for path, item in document()["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation and (method, path) not in DECLARED
    ]
    assert undeclared == [("post", "/memory/journal")]


async def test_the_journal_lists_only_events_of_at_least_an_importance(
    client: TestClient,
) -> None:
    """The filter added to show the structure: one declared field, passed on (before
    it, `min_importance` was an unknown parameter)."""
    for n, importance in enumerate((0.2, 0.9, 0.6)):
        body = {"type": "a.note", "summary": f"event {n}", "importance": importance}
        resp = await client.post("/memory/journal", json=body)
        assert resp.status == 201, await resp.json()
    page = await (await client.get("/memory/journal?min_importance=0.5")).json()
    assert [e["summary"] for e in page["events"]] == ["event 1", "event 2"]
    for bad in ("2", "x", "nan"):
        resp = await client.get("/memory/journal", params={"min_importance": bad})
        assert (resp.status, (await resp.json())["error"]) == (400, "bad_min_importance")


def test_every_route_and_tool_call_goes_where_its_op_is_declared(
    client: TestClient, service: MemoryService
) -> None:
    """A ``Route`` serves one of its op's declared routes (recording an event: the op's
    ``via``), the app serves it, and the daemon's MCP backend runs the same handler."""
    served = {(r.method, r.resource.canonical) for r in client.app.router.routes() if r.resource}
    backend = ServiceBackend(service)
    assert backend._routes
    for where, (route, _) in backend._routes.items():
        assert where in route.op.at or (not route.op.at and where == route.op.via)
        method, path = where.split(" ", 1)
        assert (method, path) in served
