"""A tool use as one compact journal event: its name, a short summary of its input and
outcome, and a capped payload, with every credential-looking value redacted.

An agent uses tools by the hundred in a session; most are reads and searches whose
output is the file or the listing itself, which the journal need not hold again. Those
become one line; the rest keep the start of their input and the gist of their outcome.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from sidecar.harness.redact import redact, redact_value

MAX_PAYLOAD_BYTES = 2048  # as compact JSON
SUMMARY_CHARS = 300
INPUT_CHARS = 600
MAX_ITEMS = 50  # of a list or object the event reads; the rest cannot fit its cap anyway
MAX_DEPTH = 20  # nesting read; deeper values show as "…"
# Tools whose output is what they read or found: the event says what was looked at.
HIGH_VOLUME = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "WebSearch", "TodoWrite"})
# Their events rank as the journal ranks telemetry: dozens of reads a session must not
# crowd a correction or a failure out of recall.
HIGH_VOLUME_IMPORTANCE = 0.1
# The input field that says what a tool acted on, for the tools that have one.
_SUBJECT = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Glob": "pattern",
    "Grep": "pattern",
    "LS": "path",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "description",
}


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def subject(tool: str, tool_input: Any) -> str:
    """What the tool acted on: its command, path, pattern or URL, else its whole input."""
    if isinstance(tool_input, dict):
        field = _SUBJECT.get(tool)
        if field and isinstance(tool_input.get(field), str):
            where = tool_input.get("path")
            found = tool_input[field]
            return f"{found} in {where}" if tool in ("Glob", "Grep") and where else found
        return _compact(tool_input)
    return "" if tool_input is None else _compact(tool_input)


def failed(response: Any) -> bool:
    """Whether the tool's own answer says it failed (Claude Code answers a failed use
    with an error flag, a false ``success`` or an interrupted command)."""
    if not isinstance(response, dict):
        return False
    return bool(response.get("is_error") or response.get("isError") or response.get("error")
                or response.get("interrupted") or response.get("success") is False)  # fmt: skip


def outcome(response: Any) -> str:
    """The gist of a tool's answer: its error, else a command's output, else the answer."""
    if isinstance(response, dict):
        for key in ("error", "stderr", "stdout", "content", "output", "result", "message"):
            value = response.get(key)
            if value:
                return _compact(value)
        return _compact(response) if response else ""
    return "" if response is None else _compact(response)


def _trimmed(value: Any, limit: int = 4 * INPUT_CHARS, depth: int = 0) -> Any:
    """Long strings, wide objects and deep nesting cut before the redactor reads them: it
    need not read a megabyte of output to keep a few hundred characters (what is cut is
    never shown), and a hook must answer within the harness's timeout whatever the shape."""
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return "…"
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, dict):
        items = list(itertools.islice(value.items(), MAX_ITEMS))
        return {k: _trimmed(v, limit, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_trimmed(v, limit, depth + 1) for v in value[:MAX_ITEMS]]
    return value


def event(tool: str, tool_input: Any, response: Any, tool_use_id: str | None) -> dict[str, Any]:
    """The ``tool.result`` event (less its session) for one tool use."""
    tool = redact(_one_line(tool, 64)) or "unknown"
    tool_input, shown = redact_value(_trimmed(tool_input)), redact_value(_trimmed(response))
    what = redact(_one_line(subject(tool, tool_input), SUMMARY_CHARS))
    bad = failed(response)
    payload: dict[str, Any] = {"tool": tool}
    if tool_use_id:
        payload["tool_use_id"] = redact(tool_use_id[:128])
    if tool in HIGH_VOLUME and not bad:
        summary = f"{tool} {what}" if what else tool
        payload["input"] = what
        payload["outcome_chars"] = len(outcome(response))
    else:
        gist = redact(outcome(shown))
        head = _one_line(gist, SUMMARY_CHARS // 2)
        summary = f"{tool} {what}" + (f" → {'failed: ' if bad else ''}{head}" if head else "")
        payload["input"] = redact(_compact(tool_input))[:INPUT_CHARS]
        payload["outcome"] = gist
        _fit(payload)
    out = {
        "type": "tool.result",
        "summary": _one_line(summary, SUMMARY_CHARS),
        "severity": "warn" if bad else "info",
        "payload": payload,
    }
    if tool in HIGH_VOLUME and not bad:
        out["importance"] = HIGH_VOLUME_IMPORTANCE
    return out


def _fit(payload: dict[str, Any]) -> None:
    """Cut the outcome (marking the cut) until the payload is within its cap."""
    size = len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())
    if size <= MAX_PAYLOAD_BYTES:
        return
    text: str = payload["outcome"]
    over = size - MAX_PAYLOAD_BYTES
    keep = max(0, len(text) - over - 64)  # a character may take up to 4 bytes: loop once more
    while True:
        payload["outcome"] = text[:keep] + f"… [{len(text) - keep} more characters]"
        size = len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())
        if size <= MAX_PAYLOAD_BYTES or keep == 0:
            return
        keep = max(0, keep - (size - MAX_PAYLOAD_BYTES) - 8)
