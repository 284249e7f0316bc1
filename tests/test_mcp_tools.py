"""The memory tools' handlers and health gating, over a fake ``MemoryBackend``.

A real SDK client talks to the real low-level server in-process, in both protocol
eras: ``legacy`` (initialize handshake, 2025) and the default ``auto`` (2026-07-28,
list changes delivered on a ``subscriptions/listen`` stream).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from sidecar.api.mcp.maintenance import REINDEX
from sidecar.api.mcp.tools import TOOLS, MemoryTools, check_arguments
from sidecar.errors import ApiError
from sidecar.facts.tools import FACTS
from sidecar.journal.tools import RECALL, RECORD
from sidecar.learnings.tools import LEARN, LEARNINGS
from sidecar.lifecycle.tools import MAINTAIN
from sidecar.notes.tools import READ, WRITE
from sidecar.ops import Op
from sidecar.retrieval.tools import SEARCH
from sidecar.sessions.tools import END as SESSION_END
from sidecar.sessions.tools import START as SESSION_START
from sidecar.working.tools import REMEMBER

# The tools every MCP endpoint lists, in order (test_mcp and test_mcp_http hold theirs to it).
NAMES = [WRITE, READ, SEARCH, RECORD, RECALL, REMEMBER, LEARN, LEARNINGS, FACTS, SESSION_START,
         SESSION_END, MAINTAIN, REINDEX]  # fmt: skip


class FakeBackend:
    """Records calls; answers from a script a test can change."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.health: tuple[bool, str | None] | Exception = (True, None)
        self.write_answer: dict[str, Any] | Exception = {
            "file": "AGENT.md",
            "scope": "agent",
            "bytes_written": 12,
            "usage": {"bytes": 12, "cap": 4000, "pct": 0.3},
            "indexed": True,
        }
        self.read_answer: dict[str, Any] | Exception = {
            "file": "AGENT.md",
            "scope": "agent",
            "content": "- one\n- two",
            "bytes": 12,
            "start_line": 1,
            "end_line": 2,
            "total_lines": 2,
        }
        self.search_answer: dict[str, Any] | Exception = {
            "results": [
                {
                    "file": "daily/2026-11-21.md",
                    "source": "agent",
                    "start_line": 4,
                    "end_line": 5,
                    "heading": "Decisions",
                    "snippet": "We moved billing to PostgreSQL 16.",
                    "score": 4.2,
                }
            ],
            "count": 1,
            "query_mode": "terms",
        }

    @staticmethod
    def _answer(answer: dict[str, Any] | Exception) -> dict[str, Any]:
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def run(self, op: Op, body: dict[str, Any]) -> dict[str, Any]:
        methods = {"POST /memory/write": self.write, "GET /memory/read": self.read,
                   "POST /memory/search": self.search}  # fmt: skip
        return await methods[op.route](body)

    async def write(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("write", tuple(body[k] for k in ("scope", "file", "content", "mode"))))
        return self._answer(self.write_answer)

    async def read(self, body: dict[str, Any]) -> dict[str, Any]:
        lines = (body.get("start_line"), body.get("end_line"))
        self.calls.append(("read", (body["scope"], body["file"], *lines)))
        return self._answer(self.read_answer)

    async def search(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("search", (body["query"], body["scope"], body["limit"])))
        return self._answer(self.search_answer)

    async def write_health(self) -> tuple[bool, str | None]:
        if isinstance(self.health, Exception):
            raise self.health
        return self.health


@pytest.fixture
async def fake() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
async def tools(fake: FakeBackend) -> MemoryTools:
    t = MemoryTools(fake)
    await t.refresh_health()
    return t


@asynccontextmanager
async def connect(
    tools: MemoryTools, mode: str = "auto", seen: asyncio.Queue[Any] | None = None
) -> AsyncIterator[Client]:
    async def on_message(message: Any) -> None:
        if seen is not None:
            seen.put_nowait(message)

    async with Client(tools.server, mode=mode, message_handler=on_message) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_lists_three_strict_tools_and_announces_list_changes(
    tools: MemoryTools, mode: str
) -> None:
    async with connect(tools, mode) as client:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == NAMES
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
    for tool in listed:
        assert tool.input_schema["additionalProperties"] is False
        assert tool.description
    write = listed[0]
    assert write.input_schema["required"] == ["scope", "file", "content"]
    needles = ["AGENT.md", "daily/YYYY-MM-DD.md", "daily/today", "CREW.md", "topics/<slug>.md"]
    needles += ["4,000 bytes", "100 KB", "16 KB", "mode=replace", "same turn"]
    for needle in needles:
        assert needle in (write.description or ""), needle
    assert "users/" not in json.dumps(write.model_dump())  # operator models: not for notes


async def test_write_passes_arguments_and_returns_every_field(
    tools: MemoryTools, fake: FakeBackend
) -> None:
    fake.write_answer = {
        "file": "AGENT.md",
        "scope": "agent",
        "bytes_written": 20,
        "usage": {"bytes": 3300, "cap": 4000, "pct": 82.5},
        "indexed": True,
        "current_entries": "- old fact\n- new fact\n",
        "usage_text": "3300 of 4000 bytes, 82%",
        "warning": "AGENT.md is at 3300 of 4000 bytes, 82% of its cap. Consolidate now.",
    }
    async with connect(tools) as client:
        result = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- new fact"}
        )
    assert not result.is_error
    assert fake.calls == [("write", ("agent", "AGENT.md", "- new fact", "append"))]
    assert result.structured_content == fake.write_answer
    assert "Saved to agent/AGENT.md" in text(result)
    assert "Consolidate now" in text(result)
    assert "- old fact" in text(result)  # the model may only see the text


async def test_cap_exceeded_is_an_error_carrying_current_entries(
    tools: MemoryTools, fake: FakeBackend
) -> None:
    fake.write_answer = ApiError(
        422,
        "cap_exceeded",
        "AGENT.md would be 4100 bytes, over its cap of 4000; nothing was written.",
        {"cap": 4000, "projected": 4100, "current_entries": "- a\n- b\n", "usage": "3990 of 4000"},
    )
    async with connect(tools, "legacy") as client:
        result = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- c", "mode": "append"}
        )
    assert result.is_error
    assert result.structured_content == {
        "status": 422,
        "error": "cap_exceeded",
        "detail": "AGENT.md would be 4100 bytes, over its cap of 4000; nothing was written.",
        "cap": 4000,
        "projected": 4100,
        "current_entries": "- a\n- b\n",
        "usage": "3990 of 4000",
    }
    assert "nothing was written" in text(result)
    assert "- a\n- b" in text(result)


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        (
            WRITE,
            {"scope": "agent", "file": "AGENT.md", "content": "x", "path": "y"},
            "unknown argument(s) 'path'; allowed: scope, file, content, mode",
        ),
        (WRITE, {"scope": "agent", "file": "AGENT.md"}, "missing required argument(s) 'content'"),
        (
            WRITE,
            {"scope": "team", "file": "AGENT.md", "content": "x"},
            "'scope' must be one of agent, crew; got 'team'",
        ),
        (
            WRITE,
            {"scope": "agent", "file": "AGENT.md", "content": 5},
            "'content' must be a string, not a whole number",
        ),
        (
            WRITE,
            {"scope": "agent", "file": "AGENT.md", "content": "x", "mode": "overwrite"},
            "'mode' must be one of append, replace",
        ),
        (
            READ,
            {"scope": "agent", "file": "AGENT.md", "start_line": "3"},
            "'start_line' must be a whole number, not a string",
        ),
        (
            READ,
            {"scope": "agent", "file": "AGENT.md", "end_line": 0},
            "'end_line' must be 1 or more",
        ),
        (SEARCH, {"query": "x", "limit": 21}, "'limit' must be from 1 to 20; got 21"),
        (SEARCH, {"query": "x", "limit": True}, "'limit' must be a whole number, not a boolean"),
        (
            SEARCH,
            {"query": "x", "limit": 2.5},
            "'limit' must be a whole number, not a fraction (2.5)",
        ),
        (SEARCH, {"query": "   "}, "'query' must not be empty"),
        (SEARCH, {"query": "x", "scope": "all"}, "'scope' must be one of agent, crew, both"),
    ],
)
async def test_bad_arguments_are_error_results_naming_the_problem(
    tools: MemoryTools, fake: FakeBackend, name: str, arguments: dict[str, Any], problem: str
) -> None:
    async with connect(tools) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error
    assert problem in text(result)
    assert result.structured_content["error"] == "bad_arguments"
    assert fake.calls == []


async def test_unknown_tool_is_an_error_result(tools: MemoryTools) -> None:
    async with connect(tools) as client:
        result = await client.call_tool("memory.delete", {})
    assert result.is_error
    assert "unknown tool 'memory.delete'" in text(result)


async def test_read_renders_lines_and_missing_file_is_not_an_error(
    tools: MemoryTools, fake: FakeBackend
) -> None:
    async with connect(tools) as client:
        found = await client.call_tool(
            READ, {"scope": "agent", "file": "AGENT.md", "start_line": 1, "end_line": 2}
        )
        assert not found.is_error
        assert text(found) == "agent/AGENT.md, lines 1-2 of 2:\n- one\n- two"
        assert found.structured_content == {"exists": True, **fake.read_answer}
        fake.read_answer = ApiError(404, "not_found", "daily/2026-11-22.md does not exist yet")
        missing = await client.call_tool(READ, {"scope": "agent", "file": "daily/today"})
    assert not missing.is_error
    assert "does not exist yet" in text(missing)
    assert missing.structured_content["exists"] is False
    assert missing.structured_content["content"] == ""
    assert fake.calls[-1] == ("read", ("agent", "daily/today", None, None))


async def test_other_read_failures_stay_errors(tools: MemoryTools, fake: FakeBackend) -> None:
    fake.read_answer = ApiError(400, "file_not_allowed", "'notes.md' is not a memory file")
    async with connect(tools) as client:
        result = await client.call_tool(READ, {"scope": "agent", "file": "notes.md"})
    assert result.is_error
    assert result.structured_content["error"] == "file_not_allowed"


async def test_search_defaults_and_rendering(tools: MemoryTools, fake: FakeBackend) -> None:
    async with connect(tools) as client:
        result = await client.call_tool(SEARCH, {"query": "billing database"})
        assert fake.calls == [("search", ("billing database", "agent", 10))]
        assert not result.is_error
        assert result.structured_content == fake.search_answer
        assert "1. [agent] daily/2026-11-21.md:4-5 — Decisions" in text(result)
        assert "PostgreSQL 16" in text(result)
        fake.search_answer = {"results": [], "count": 0, "query_mode": "terms"}
        empty = await client.call_tool(SEARCH, {"query": "kumquat", "scope": "both", "limit": 3})
    assert not empty.is_error
    assert "No memory matches 'kumquat'" in text(empty)
    assert fake.calls[-1] == ("search", ("kumquat", "both", 3))


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (
            WRITE,
            {"scope": "agent", "file": "AGENT.md", "content": "x"},
            "memory sidecar unavailable — nothing was written",
        ),
        (
            READ,
            {"scope": "agent", "file": "AGENT.md"},
            "memory sidecar unavailable — nothing was read",
        ),
        (SEARCH, {"query": "x"}, "memory sidecar unavailable — search unavailable"),
    ],
)
async def test_backend_crash_is_unavailable_never_success(
    tools: MemoryTools, fake: FakeBackend, name: str, arguments: dict[str, Any], message: str
) -> None:
    boom = ConnectionRefusedError("connection refused")
    fake.write_answer = fake.read_answer = fake.search_answer = boom
    async with connect(tools) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error
    assert text(result).startswith(message)
    assert "connection refused" in text(result)


async def test_unhealthy_hides_tools_and_refuses_calls(
    tools: MemoryTools, fake: FakeBackend
) -> None:
    fake.health = (False, "only 12 MiB free on /memory")
    assert await tools.refresh_health() is True
    async with connect(tools) as client:
        assert (await client.list_tools()).tools == []
        result = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "x"}
        )
    assert result.is_error
    assert text(result) == (
        "memory sidecar unavailable — nothing was written (only 12 MiB free on /memory)"
    )
    assert fake.calls == []


@pytest.mark.parametrize("failure", [RuntimeError("socket closed"), TimeoutError()])
async def test_failing_health_check_counts_as_unhealthy(
    tools: MemoryTools, fake: FakeBackend, failure: Exception
) -> None:
    fake.health = failure
    await tools.refresh_health()
    assert tools.healthy is False
    assert tools.reason and "health check" in tools.reason


async def test_slow_health_check_counts_as_unhealthy(
    tools: MemoryTools, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sidecar.api.mcp.tools.HEALTH_TIMEOUT", 0.01)
    never = asyncio.Event()

    async def hang() -> tuple[bool, str | None]:
        await never.wait()
        return True, None

    monkeypatch.setattr(fake, "write_health", hang)
    await tools.refresh_health()
    assert tools.healthy is False
    assert tools.reason == "health check took longer than 0.01s"


async def test_legacy_client_hears_list_changed_both_ways(
    tools: MemoryTools, fake: FakeBackend
) -> None:
    seen: asyncio.Queue[Any] = asyncio.Queue()
    # Tools, prompts and resources are gated together, so all three lists change.
    lists = {
        types.ToolListChangedNotification,
        types.PromptListChangedNotification,
        types.ResourceListChangedNotification,
    }
    async with connect(tools, "legacy", seen) as client:
        fake.health = (False, "daemon down")
        await tools.refresh_health()
        assert {type(await next_message(seen)) for _ in lists} == lists
        assert (await client.list_tools()).tools == []
        assert await tools.refresh_health() is False  # no change, no notice
        fake.health = (True, None)
        await tools.refresh_health()
        assert {type(await next_message(seen)) for _ in lists} == lists
        assert [t.name for t in (await client.list_tools()).tools] == NAMES
    assert seen.empty()


async def test_modern_client_hears_list_changed_on_its_listen_stream(
    tools: MemoryTools, fake: FakeBackend
) -> None:
    async with connect(tools) as client, client.listen(tools_list_changed=True) as subscription:
        fake.health = (False, "daemon down")
        await tools.refresh_health()
        async with asyncio.timeout(5):
            event = await anext(aiter(subscription))
        assert isinstance(event, ToolsListChanged)
        assert (await client.list_tools()).tools == []


async def next_message(seen: asyncio.Queue[Any]) -> Any:
    async with asyncio.timeout(5):
        return await seen.get()


def test_check_arguments_fills_defaults_without_touching_input() -> None:
    schema = next(t.input_schema for t in TOOLS if t.name == SEARCH)
    raw = {"query": "x"}
    filled = {"query": "x", "scope": "agent", "limit": 10, "archive": False}
    assert check_arguments(schema, raw) == filled
    assert raw == {"query": "x"}
