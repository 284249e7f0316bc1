"""memory.session_start and memory.session_end: a session over MCP."""

from __future__ import annotations

from typing import Any

from sidecar.mcp_results import answer, tool
from sidecar.sessions import ops

START, END = "memory.session_start", "memory.session_end"


def _started(body: dict[str, Any], args: dict[str, Any]) -> str:
    opened = "Started" if body.get("started") else "Resumed"
    return (f"{opened} session {body.get('session_id')}: pass this session_id to memory.record, "
            f"memory.recall and memory.learnings.\n\n{body.get('context', '')}")  # fmt: skip


def _ended(body: dict[str, Any], args: dict[str, Any]) -> str:
    sid = body.get("session_id")
    if not body.get("started"):
        return f"Session {sid} was not started with memory.session_start: its learnings used " \
            "were reinforced, nothing else."  # fmt: skip
    if body.get("already_ended"):
        return f"Session {sid} had already ended; nothing more was done."
    return (f"Session {sid} ended: {body.get('events')} events summarised"
            f" (episode {body.get('summary_id')}), its working notes promoted.")  # fmt: skip


TOOLS = (
    tool(
        START,
        "Start a session",
        "Start a working session and get the memory that bears on its task (notes, "
        "learnings, past events, the operator's preferences) in one answer. Starting the "
        "same session_id again answers the same session.",
        ops.START.schema(omit=("budget",)),
        answer(ops.START, _started),
        "memory sidecar unavailable — no session was started",
        writes=True,
        idempotent=True,
    ),
    tool(
        END,
        "End a session",
        "End the session when its work is done: the learnings it used are reinforced, its "
        "working notes condensed, and a summary of it kept as an episode. Ending it again "
        "does nothing more.",
        ops.END.schema(),
        answer(ops.END, _ended),
        "memory sidecar unavailable — the session was not ended",
        writes=True,
        idempotent=True,
    ),
)
