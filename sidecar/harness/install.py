"""``sidecar hook install claude-code``: the hooks written into Claude Code's settings.

The settings file is the user's: their own hooks and settings stay as they are, the
sidecar's entries are added once (installing again changes nothing) and ``--uninstall``
takes out those and nothing else. A file that is not the JSON object Claude Code reads
is refused and left untouched. The sidecar's entries are known by their command (the
sidecar's ``hook <event>``), so nothing foreign is added to Claude Code's schema.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from sidecar.disk.durable import write_file
from sidecar.disk.tiers import UnsafePath
from sidecar.harness.claude_code import EVENTS

TIMEOUT_S = 5  # the harness's own limit; a hook gives up on the daemon well before
# Tool events match on the tool's name ("*": all); the others take no matcher.
MATCHERS = {"PostToolUse": "*"}
# Claude Code's Stop comes at the end of every answer, not of the session: ending the
# session there would close it after its first turn, and the turns after that would never
# be summarised or learned from (an end runs once). SessionEnd ends it, and a session the
# harness leaves without one ends when idle. ``sidecar hook stop`` stays for a harness
# whose stop is final.
INSTALLED = tuple(event for event in EVENTS if event != "stop")
_OURS = re.compile(r"(?:^|[\s/])(?:sidecar|-m sidecar) hook (?:" + "|".join(EVENTS) + r")\b")


class InstallError(Exception):
    """The settings cannot be changed as asked; the message says why."""


def settings_path(project: Path | None) -> Path:
    """The project's ``.claude/settings.json``, else the user's."""
    return (project if project is not None else Path.home()) / ".claude" / "settings.json"


def command(event: str) -> str:
    """How the harness runs a hook: this interpreter, so that the agent's PATH (and
    whichever virtual environment it has) does not matter."""
    return f"{shlex.quote(sys.executable)} -m sidecar hook {event}"


def ours(hook: Any) -> bool:
    return isinstance(hook, dict) and bool(_OURS.search(str(hook.get("command", ""))))


def _group(event: str) -> dict[str, Any]:
    name = EVENTS[event]
    group: dict[str, Any] = {"matcher": MATCHERS[name]} if name in MATCHERS else {}
    group["hooks"] = [{"type": "command", "command": command(event), "timeout": TIMEOUT_S}]
    return group


def _load(path: Path, raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        settings = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix or move it, then install "
                           "again (it was left untouched)") from None  # fmt: skip
    if not isinstance(settings, dict):
        raise InstallError(f"{path} must hold a JSON object; it was left untouched")
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise InstallError(f"{path}: 'hooks' must map each event to a list of matcher "
                           "groups, as Claude Code documents; it was left untouched")  # fmt: skip
    return settings


def _without_ours(groups: list[Any]) -> list[Any]:
    """The event's groups with the sidecar's hooks taken out; a group left with none is
    dropped, any other group is kept exactly as it was."""
    kept = []
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(map(ours, inner)):
            kept.append(group)
        elif rest := [h for h in inner if not ours(h)]:
            kept.append({**group, "hooks": rest})
    return kept


def change(settings: dict[str, Any], install: bool) -> dict[str, Any]:
    """The settings with the sidecar's hooks in (once each) or out."""
    hooks = dict(settings.get("hooks", {}))
    for event in INSTALLED if install else EVENTS:
        name = EVENTS[event]
        groups = hooks.get(name, [])
        if install and _group(event) in groups:
            continue
        groups = _without_ours(groups) + ([_group(event)] if install else [])
        if groups:
            hooks[name] = groups
        else:
            hooks.pop(name, None)
    out = {**settings, "hooks": hooks}
    if not hooks:
        del out["hooks"]
    return out


def apply(path: Path, install: bool) -> bool:
    """Install or uninstall in the file at ``path``; whether it changed."""
    changed = False

    def build(raw: bytes | None) -> bytes:
        nonlocal changed
        settings = _load(path, raw)
        new = change(settings, install)
        changed = new != settings
        if not changed and raw is not None:
            return raw
        return (json.dumps(new, indent=2, ensure_ascii=False) + "\n").encode()

    if not install and not path.exists():
        return False
    if path.is_symlink():  # a dotfiles checkout's link: the file it points to is theirs
        path = path.resolve()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path.parent, path.name, build)
    except (OSError, UnsafePath) as exc:
        raise InstallError(f"cannot write {path}: {exc}") from None
    return changed
