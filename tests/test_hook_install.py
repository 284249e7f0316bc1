"""``sidecar hook install claude-code``: merged into the user's settings, never clobbering
them; installed once however often it runs; uninstalled to exactly what was there."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.cli import main
from sidecar.harness.claude_code import EVENTS
from sidecar.harness.install import INSTALLED, command

THEIRS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "npx prettier --write"}],
            }
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
    },
}


def settings_file(project: Path, content: str | None) -> Path:
    path = project / ".claude" / "settings.json"
    if content is not None:
        path.parent.mkdir(parents=True)
        path.write_text(content)
    return path


def install(project: Path, *more: str) -> int:
    return main(["hook", "install", "claude-code", "--project", str(project), *more])


def commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_install_merges_with_the_users_hooks_once_and_uninstall_restores_them(
    tmp_path: Path,
) -> None:
    path = settings_file(tmp_path, json.dumps(THEIRS, indent=4))
    assert install(tmp_path) == 0
    first = path.read_bytes()
    settings = json.loads(first)
    assert settings["model"] == "opus" and settings["permissions"] == THEIRS["permissions"]
    assert settings["hooks"]["Notification"] == THEIRS["hooks"]["Notification"]
    assert commands(settings, "PostToolUse") == ["npx prettier --write", command("post-tool-use")]
    for event in INSTALLED:
        assert command(event) in commands(settings, EVENTS[event])
    assert "Stop" not in settings["hooks"]  # it ends every answer, not the session
    ours = settings["hooks"]["PostToolUse"][1]
    assert ours == {"matcher": "*", "hooks": [
        {"type": "command", "command": f"{sys.executable} -m sidecar hook post-tool-use",
         "timeout": 5}]}  # fmt: skip
    assert "matcher" not in settings["hooks"]["UserPromptSubmit"][0]  # it takes none
    assert install(tmp_path) == 0
    assert path.read_bytes() == first  # installing twice adds nothing
    assert install(tmp_path, "--uninstall") == 0
    assert json.loads(path.read_text()) == THEIRS


def test_a_hook_group_shared_with_the_users_keeps_their_hook(tmp_path: Path) -> None:
    """A user who put their own command beside ours in one group keeps it on uninstall."""
    mixed = {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "say done"},
        {"type": "command", "command": "/opt/venv/bin/sidecar hook stop", "timeout": 9},
    ]}]}}  # fmt: skip
    path = settings_file(tmp_path, json.dumps(mixed))
    assert install(tmp_path, "--uninstall") == 0
    assert json.loads(path.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }


def test_install_creates_the_file_and_uninstall_of_nothing_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = settings_file(tmp_path, None)
    assert install(tmp_path, "--uninstall") == 0 and not path.exists()
    assert install(tmp_path) == 0
    assert sorted(json.loads(path.read_text())["hooks"]) == sorted(
        ["SessionStart", "UserPromptSubmit", "PostToolUse", "SessionEnd"]
    )
    assert install(tmp_path, "--uninstall") == 0
    assert json.loads(path.read_text()) == {}
    assert "uninstalled from" in capsys.readouterr().out


def test_the_user_settings_are_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["hook", "install", "claude-code"]) == 0
    assert (
        "SessionStart" in json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"hooks": {"Stop": [}', "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"hooks": {"Stop": {"command": "x"}}}', "'hooks' must map each event to a list"),
        ('{"hooks": "none"}', "'hooks' must map each event to a list"),
    ],
)
def test_settings_that_are_not_claude_codes_are_refused_and_left_untouched(
    tmp_path: Path, content: str, why: str
) -> None:
    path = settings_file(tmp_path, content)
    for more in ((), ("--uninstall",)):
        with pytest.raises(SystemExit) as exc:
            install(tmp_path, *more)
        assert why in str(exc.value) and "left untouched" in str(exc.value)
        assert path.read_text() == content


def test_a_settings_file_linked_from_a_dotfiles_checkout_is_changed_where_it_lives(
    tmp_path: Path,
) -> None:
    """It used to end in an UnsafePath traceback; the link stays a link."""
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text(json.dumps(THEIRS))
    path = settings_file(tmp_path / "project", None)
    path.parent.mkdir(parents=True)
    path.symlink_to(real)
    assert install(tmp_path / "project") == 0
    assert path.is_symlink() and commands(json.loads(real.read_text()), "SessionStart")
    assert install(tmp_path / "project", "--uninstall") == 0
    assert path.is_symlink() and json.loads(real.read_text()) == THEIRS
