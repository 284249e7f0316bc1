"""``session_id`` and ``source`` with bidi controls are refused wherever they come in (the
API, the crew address, the MCP tools), with an error naming the field, and nothing is
written."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
from aiohttp.test_utils import TestClient, TestServer
from mcp import Client

from sidecar.api.crew import create_crew_app
from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.errors import check_label
from sidecar.journal.tools import RECALL, RECORD
from sidecar.learnings.tools import LEARNINGS
from sidecar.service import MemoryService
from sidecar.working.tools import REMEMBER
from tests.test_journal import day_file, iso, started, status
from tests.test_mcp_http import mcp_url

# Right-to-left override, left-to-right isolate, right-to-left mark, Arabic letter mark,
# zero-width space: each makes a label read as something it is not.
HIDDEN = ["\u202e", "\u2066", "\u200f", "\u061c", "\u200b"]
TOKEN = "crew-secret"


def labelled(char: str) -> str:
    return f"deploy{char}-42"


def http_cases(bad: str) -> list[tuple[str, str, dict[str, Any] | None, str]]:
    """(method, path, body, the field the error must name)."""
    event = {"type": "deploy.failed", "summary": "Staging deploy failed"}
    return [
        ("POST", "/memory/journal", {**event, "session_id": bad}, "session_id"),
        ("POST", "/memory/journal", {**event, "source": bad}, "source"),
        ("POST", "/memory/remember", {"content": "VPN down", "session_id": bad}, "session_id"),
        ("POST", "/memory/remember", {"content": "VPN down", "source": bad}, "source"),
        ("POST", "/memory/recall", {"query": "deploy", "session_id": bad}, "session_id"),
        ("POST", "/memory/learnings/search", {"query": "deploy", "session_id": bad}, "session_id"),
        ("POST", "/memory/session/end", {"session_id": bad}, "session_id"),
        ("GET", f"/memory/journal?session_id={bad}", None, "session_id"),
        ("GET", f"/memory/context?session_id={bad}", None, "session_id"),
    ]


@pytest.fixture
async def crew_client(service: MemoryService) -> AsyncIterator[TestClient]:
    app = create_crew_app(service, TOKEN)
    async with TestClient(TestServer(app, host="127.0.0.1")) as c:
        yield c


def nothing_recorded(service: MemoryService) -> bool:
    journal = service.settings.agent_dir / "journal"
    return not any(p.stat().st_size for p in journal.glob("*.jsonl")) if journal.is_dir() else True


@pytest.mark.parametrize("char", HIDDEN)
async def test_the_api_refuses_labels_with_hidden_characters(
    client: TestClient, crew_client: TestClient, service: MemoryService, char: str
) -> None:
    bad = labelled(char)
    for method, path, body, field in http_cases(bad):
        async with client.request(method, path, json=body) as resp:
            answer = await resp.json()
            assert resp.status == 400, (path, field, answer)
            assert answer["error"] == f"bad_{field}", (path, answer)
            assert f"'{field}'" in answer["detail"] and "bidi" in answer["detail"]
    for path, body in (
        ("/memory/session/end", {"session_id": bad}),
        ("/memory/recall", {"query": "deploy", "scope": "crew", "session_id": bad}),
        ("/memory/learnings/search", {"query": "deploy", "scope": "crew", "session_id": bad}),
    ):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with crew_client.post(path, json=body, headers=headers) as resp:
            answer = await resp.json()
            assert (resp.status, answer["error"]) == (400, "bad_session_id"), (path, answer)
    assert nothing_recorded(service)


async def test_the_mcp_tools_refuse_labels_with_hidden_characters(
    service: MemoryService,
) -> None:
    bad = labelled("\u202e")
    calls = [
        (RECORD, {"type": "deploy.failed", "summary": "x", "session_id": bad}, "session_id"),
        (REMEMBER, {"content": "VPN down", "session_id": bad}, "session_id"),
        (REMEMBER, {"content": "VPN down", "source": bad}, "source"),
        (RECALL, {"query": "deploy", "session_id": bad}, "session_id"),
        (LEARNINGS, {"query": "deploy", "session_id": bad}, "session_id"),
    ]
    async with (
        TestServer(create_app(service), host="127.0.0.1") as srv,
        Client(mcp_url(srv)) as client,
    ):
        for tool, arguments, field in calls:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, field)
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            assert f"bad_{field}" in block.text and f"'{field}'" in block.text, block.text
    assert nothing_recorded(service)


@pytest.mark.parametrize("label", ["deploy-42", "Bereitstellung Ü-7", "デプロイ", "ci 🚀"])
def test_plain_labels_in_any_script_pass(label: str) -> None:
    assert check_label(label, "session_id") == label


async def test_labels_with_hidden_characters_on_disk_are_read_as_defaults(
    settings: Settings,
) -> None:
    """A line another program (or a hand) wrote carries labels no request may send: they
    are read as their defaults and the line is listed in the journal's problems."""
    bad = labelled("\u202e")
    line = {"id": "e-1", "ts": iso(), "recorded_at": iso(), "type": "tool.call",
            "summary": "staging deploy", "session_id": bad, "source": bad,
            "agent_id": bad}  # fmt: skip
    path = day_file(settings.agent_dir)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(line) + "\n")
    svc = await started(settings)
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            journal = await status(client)
            (problem,) = journal["problems"]
            assert all(f"'{f}'" in problem["error"] for f in ("session_id", "source", "agent_id"))
            resp = await client.get("/memory/journal")
            (listed,) = (await resp.json())["events"]
            assert listed["session_id"] == "default" and bad not in json.dumps(listed)
    finally:
        await svc.stop()
