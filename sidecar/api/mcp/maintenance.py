"""memory.reindex: rebuild a tier's indexes from its files, with progress.

The one tool that can take a while (a large tier, an embedder still warming up), so
it reports ``notifications/progress`` when the client passed a progress token: once
queued, once per tier rebuilt, once done. The server sets ``PROGRESS`` for the call
(a context variable, so the tool signature stays that of every other tool).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Protocol

import mcp_types as types

from sidecar.api.ops import SCOPED
from sidecar.mcp_results import result, tool

REINDEX = "memory.reindex"
POLL = 0.05  # seconds between looks at a rebuilding tier
TIMEOUT = 300.0

Report = Callable[[float, float | None, str | None], Awaitable[None]]
PROGRESS: ContextVar[Report | None] = ContextVar("mcp_progress", default=None)


class ReindexBackend(Protocol):
    """Raises ``ApiError`` for failures the caller can act on."""

    async def reindex(self, scope: str) -> dict[str, Any]: ...

    async def status(self, scope: str) -> dict[str, Any]: ...


def _busy(status: dict[str, Any]) -> bool:
    journal = status.get("journal") or {}
    return bool(status.get("indexing") or journal.get("indexing"))


async def reindex(backend: ReindexBackend, args: dict[str, Any]) -> types.CallToolResult:
    report = PROGRESS.get()

    async def progress(done: float, total: float, message: str) -> None:
        if report is not None:
            await report(done, total, message)

    accepted = await backend.reindex(args["scope"])
    scopes: list[str] = list(accepted.get("scopes") or [])
    total = len(scopes) + 1
    await progress(0, total, f"rebuild queued for {', '.join(scopes)}")
    statuses: dict[str, dict[str, Any]] = {}
    async with asyncio.timeout(TIMEOUT):
        for i, scope in enumerate(scopes, 1):
            while _busy(status := await backend.status(scope)):  # noqa: ASYNC110 - over HTTP too
                await asyncio.sleep(POLL)
            statuses[scope] = status
            await progress(i, total, f"{scope} rebuilt: {status.get('total_chunks')} chunks")
    await progress(total, total, "done")
    text = "Rebuilt " + "; ".join(
        f"{s}: {st.get('total_files')} files, {st.get('total_chunks')} chunks"
        for s, st in statuses.items()
    )
    return result(text + ".", {"scopes": scopes, "status": statuses})


TOOLS = (
    tool(
        REINDEX,
        "Rebuild the memory index",
        "Rebuild a tier's search index from its markdown files (searches keep answering from "
        "the old index meanwhile). Not needed in normal operation: use it when searches miss "
        "what memory.read shows is there. Reports progress.",
        SCOPED.schema(),
        reindex,
        "memory sidecar unavailable — nothing was rebuilt",
        writes=True,
        idempotent=True,
    ),
)
