"""End to end: a real SDK client against ``sidecar mcp`` (stdio) and ``/mcp`` (streamable HTTP).

The daemon is a real ``sidecar serve`` process; the stdio proxy is a real
``sidecar mcp`` process spawned by the SDK's stdio client. ``legacy`` is the
2025 initialize handshake, ``auto`` negotiates 2026-07-28.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from sidecar.notes.tools import READ, WRITE
from sidecar.retrieval.tools import SEARCH
from tests.sidecar_process import SidecarProcess
from tests.test_mcp_tools import NAMES

TIMEOUT = 15.0


@pytest.fixture
def daemon(tier_dirs: tuple[Path, Path]) -> Iterator[SidecarProcess]:
    proc = SidecarProcess(*tier_dirs).start()
    try:
        yield proc
    finally:
        proc.kill()


@asynccontextmanager
async def mcp_client(
    transport: str,
    url: str,
    log_dir: Path,
    mode: str = "auto",
    messages: asyncio.Queue[Any] | None = None,
) -> AsyncIterator[Client]:
    """A connected SDK client over ``transport``; server notifications go to ``messages``."""

    async def on_message(message: Any) -> None:
        if messages is not None and isinstance(message, types.ToolListChangedNotification):
            messages.put_nowait(message)

    async with AsyncExitStack() as stack:
        if transport == "stdio":
            errlog = stack.enter_context(open(log_dir / "mcp-stdio.log", "a"))  # noqa: SIM115
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "sidecar", "mcp", "--url", url, "--poll-interval", "0.05"],
            )
            server: Any = stdio_client(params, errlog=errlog)
        else:
            server = f"{url}/mcp"
        client = Client(server, mode=mode, message_handler=on_message, read_timeout_seconds=TIMEOUT)
        yield await stack.enter_async_context(client)


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def tool_names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def next_message(messages: asyncio.Queue[Any]) -> Any:
    async with asyncio.timeout(TIMEOUT):
        return await messages.get()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_write_read_search_overflow_and_mistakes(
    daemon: SidecarProcess, tmp_path: Path, transport: str, mode: str
) -> None:
    async with mcp_client(transport, daemon.url, tmp_path, mode) as client:
        assert await tool_names(client) == NAMES

        wrote = await client.call_tool(
            WRITE, {"scope": "agent", "file": "daily/today", "content": "- Staging is eu-west-2."}
        )
        assert not wrote.is_error, text(wrote)
        assert wrote.structured_content["indexed"] is True
        daily = wrote.structured_content["file"]
        assert daily.startswith("daily/") and daily.endswith(".md")

        read = await client.call_tool(READ, {"scope": "agent", "file": daily})
        assert not read.is_error
        assert read.structured_content["content"] == "- Staging is eu-west-2."
        assert "- Staging is eu-west-2." in text(read)

        found = await client.call_tool(SEARCH, {"query": "where is staging?"})
        assert not found.is_error
        assert [r["file"] for r in found.structured_content["results"]] == [daily]
        assert daily in text(found)

        facts = "".join(f"- fact {i:04d} about the walnut service\n" for i in range(100))
        assert 3500 < len(facts) < 4000
        full = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": facts, "mode": "replace"}
        )
        assert not full.is_error, text(full)
        assert "warning" in full.structured_content  # near the cap: consolidate soon
        over = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- one more " * 40}
        )
        assert over.is_error
        assert over.structured_content["error"] == "cap_exceeded"
        assert over.structured_content["current_entries"] == facts
        assert over.structured_content["cap"] == 4000
        assert "usage" in over.structured_content
        assert "mode=replace" in text(over)

        unknown = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "x", "append": True}
        )
        assert unknown.is_error
        assert "unknown argument(s) 'append'" in text(unknown)

        missing = await client.call_tool(READ, {"scope": "crew", "file": "CREW.md"})
        assert not missing.is_error
        assert missing.structured_content["exists"] is False
        assert missing.structured_content["content"] == ""
        assert "does not exist yet" in text(missing)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_proxy_withdraws_tools_while_the_daemon_is_down(
    daemon: SidecarProcess, tmp_path: Path, mode: str
) -> None:
    messages: asyncio.Queue[Any] = asyncio.Queue()
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            mcp_client("stdio", daemon.url, tmp_path, mode, messages)
        )
        if mode == "auto":  # 2026-07-28 clients opt in to change events
            await stack.enter_async_context(client.listen(tools_list_changed=True))
        assert await tool_names(client) == NAMES

        assert await asyncio.to_thread(daemon.terminate) == 0
        await next_message(messages)
        assert await tool_names(client) == []
        refused = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- lost?"}
        )
        assert refused.is_error
        assert text(refused).startswith("memory sidecar unavailable — nothing was written")

        await asyncio.to_thread(daemon.start)
        await next_message(messages)
        assert await tool_names(client) == NAMES
        saved = await client.call_tool(
            WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- back again"}
        )
        assert not saved.is_error, text(saved)
    assert (Path(daemon.args[daemon.args.index("--agent-dir") + 1]) / "AGENT.md").read_text() == (
        "- back again\n"
    )


async def test_stdio_proxy_starts_before_the_daemon(tmp_path: Path) -> None:
    """Tools appear once the daemon does; nothing is listed while it is away."""
    agent, crew = tmp_path / "agent", tmp_path / "crew"
    daemon = SidecarProcess(agent, crew)
    messages: asyncio.Queue[Any] = asyncio.Queue()
    try:
        async with mcp_client("stdio", daemon.url, tmp_path, "legacy", messages) as client:
            assert await tool_names(client) == []
            await asyncio.to_thread(daemon.start)
            await next_message(messages)
            assert await tool_names(client) == NAMES
    finally:
        daemon.kill()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_member_cannot_write_the_crew_tier(
    tier_dirs: tuple[Path, Path], tmp_path: Path, transport: str
) -> None:
    member = SidecarProcess(*tier_dirs, role="agent").start()
    try:
        async with mcp_client(transport, member.url, tmp_path) as client:
            result = await client.call_tool(
                WRITE, {"scope": "crew", "file": "CREW.md", "content": "- sneaky"}
            )
            own = await client.call_tool(
                WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- mine"}
            )
    finally:
        member.kill()
    assert result.is_error
    assert result.structured_content["error"] == "crew_read_only"
    assert "crew lead" in text(result)
    assert not (tier_dirs[1] / "CREW.md").exists()
    assert not own.is_error


async def test_stdio_proxy_hides_tools_when_the_daemon_cannot_write(
    tier_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Reachable is not enough: the daemon must report its write path healthy."""
    daemon = SidecarProcess(*tier_dirs)
    daemon.args += ["--min-free-mb", str(1 << 40)]  # more free disk than any machine has
    daemon.start()
    try:
        async with mcp_client("stdio", daemon.url, tmp_path) as client:
            assert await tool_names(client) == []
            refused = await client.call_tool(
                WRITE, {"scope": "agent", "file": "AGENT.md", "content": "- x"}
            )
    finally:
        daemon.kill()
    assert refused.is_error
    assert text(refused).startswith("memory sidecar unavailable — nothing was written (agent: only")
    assert not (tier_dirs[0] / "AGENT.md").exists()
