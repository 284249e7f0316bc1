"""MCP logging: what the daemon warns about a session's own requests, as
``notifications/message`` at or above the level the client chose.

A degraded tier, a sparse-only fallback, a withheld or refused injection: a model
sees those in a tool's text, but the client and its user only hear of them here.
Handshake-era clients choose their level with ``logging/setLevel`` (``warning``
until they do); 2026-07-28 clients opt in per request through ``_meta``, which the
SDK's ``allowed_log_levels`` reads. Messages ride the request's own stream.
"""

from __future__ import annotations

import logging
from typing import Any, get_args

import mcp_types as types
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger(__name__)

LOGGER = "memory-sidecar"
LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)  # ascending severity
LEVEL_KEY = "memory_log_level"  # key in a handshake-era Connection.state
DEFAULT_LEVEL: types.LoggingLevel = "warning"


async def set_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    connection = getattr(ctx.session, "_connection", None)
    if isinstance(connection, Connection):
        connection.state[LEVEL_KEY] = params.level
    return types.EmptyResult()


def install(server: Any) -> None:
    # Registered directly: the constructor's on_set_logging_level warns on every start.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)


def _allowed(ctx: ServerRequestContext[Any, Any], level: types.LoggingLevel) -> bool:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return level in allowed_log_levels(ctx.protocol_version, ctx.meta)
    connection = getattr(ctx.session, "_connection", None)
    chosen = DEFAULT_LEVEL
    if isinstance(connection, Connection):
        chosen = connection.state.get(LEVEL_KEY, DEFAULT_LEVEL)
    return LEVELS.index(level) >= LEVELS.index(chosen)


async def send(
    ctx: ServerRequestContext[Any, Any], level: types.LoggingLevel, message: str, **data: Any
) -> None:
    """One message about this request, if the client wants that level; never raises."""
    if not _allowed(ctx, level):
        return
    note = types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(
            level=level, logger=LOGGER, data={"message": message, **data}
        )
    )
    try:
        await ctx.session.send_notification(note, related_request_id=ctx.request_id)
    except Exception as exc:  # advisory: the request's answer matters more
        log.debug("log notification not delivered", extra={"error": repr(exc)})


def _flag_text(where: str, flag: dict[str, Any]) -> str:
    return (
        f"{where} looks like a prompt injection (category={flag.get('category')}, "
        f"pattern={flag.get('pattern')}); its text was withheld"
    )


async def after_read(ctx: ServerRequestContext[Any, Any], where: str, body: dict[str, Any]) -> None:
    if body.get("flagged"):
        await send(ctx, "warning", _flag_text(where, body["flagged"]), flagged=body["flagged"])


async def after_tool(
    ctx: ServerRequestContext[Any, Any], tool: str, result: types.CallToolResult
) -> None:
    """Warnings a tool's answer carries: degraded tiers or retrieval, withheld or refused
    injections, a write that stands but is not yet searchable or is near its cap."""
    body = result.structured_content or {}
    for reason in body.get("degraded") or ():
        await send(ctx, "warning", f"{tool}: degraded: {reason}", tool=tool)
    if body.get("flagged"):
        await after_read(ctx, f"{tool}: {body.get('scope')}/{body.get('file')}", body)
    for hit in body.get("results") or ():
        if isinstance(hit, dict) and hit.get("flagged"):
            where = f"{tool}: {hit.get('source')}/{hit.get('file')}"
            await send(ctx, "warning", _flag_text(where, hit["flagged"]), flagged=hit["flagged"])
    if body.get("error") == "injection_suspected":
        why = {"category": body.get("category"), "pattern": body.get("pattern")}
        await send(ctx, "warning", f"{tool}: blocked a possible prompt injection; nothing "
                   "was written", **why)  # fmt: skip
    elif result.is_error and body.get("error") in ("unavailable", "outcome_unknown"):
        await send(ctx, "error", f"{tool}: {body.get('detail')}", tool=tool)
    if not result.is_error and body.get("warning"):
        await send(ctx, "warning", f"{tool}: {body['warning']}", tool=tool)
