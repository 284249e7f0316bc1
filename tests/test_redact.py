"""The hooks' redactor: credential-looking values go, the words around them stay."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.harness import tool_use
from sidecar.harness.redact import MARK, redact, redact_value

# Each: the text, and the secret in it that must not survive.
SECRETS = [
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("creds: ASIAY34FZKBOKMUTVV7A in use", "ASIAY34FZKBOKMUTVV7A"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("curl -H 'Authorization: Bearer abc.def.ghi-123456' https://x", "abc.def.ghi-123456"),
    ("authorization: basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
    ("X-Api-Key: 5f4dcc3b5aa765d61d8327deb882cf99", "5f4dcc3b5aa765d61d8327deb882cf99"),
    ("the token was Bearer zzYYxx0099887766 ok", "zzYYxx0099887766"),
    ('{"password": "correct horse battery staple"}', "correct horse battery staple"),
    ("DB_PASSWORD='s3cr3t!!' ./run", "s3cr3t!!"),
    ("client_secret: 9a8b7c6d5e4f", "9a8b7c6d5e4f"),
    ("--api-key=sk-live-0000111122223333", "sk-live-0000111122223333"),
    ("GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
     "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("push with github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
    ("OPENAI sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234"),
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
    ("maps AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.SflKxwRJSMeKKF2QT4fwpM",
     "SflKxwRJSMeKKF2QT4fwpM"),
    ("DATABASE_URL=postgres://app:hunter2pass@db:5432/orders", "hunter2pass"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
     "MIIEowIBAAKCAQEA7"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n(cut off)",
     "b3BlbnNzaC1rZXktdjEAAAAA"),
    ("export MY_PASS=xyz12345", "xyz12345"),
    ("DB_PWD=abc123 ./migrate", "abc123"),
    ("psql --password hunter3 -h db", "hunter3"),
    ('deploy --db-password "two words" now', "two words"),
    ("curl -u admin:s3cr3tpass https://api", "s3cr3tpass"),
    ("curl -s --user=admin:s3cr3tpass https://api", "s3cr3tpass"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_every_credential_shape_is_redacted(text: str, secret: str) -> None:
    shown = redact(text)
    assert secret not in shown and MARK in shown
    assert redact(shown) == shown  # a second pass finds nothing more


@pytest.mark.parametrize("text", [
    "max_tokens: 4096, tokenizer=bert, pwd=/home/agent",
    "the author: Ada; session timed out after 30s",
    "ERROR: migration 0042 failed: lock timeout on table orders",
    "see https://example.com/docs?page=2 and git@github.com:org/repo.git",
    "a password policy requires 12 characters",
    "git push -u origin main; docker run -u 1000:1000 app --token-file /run/t",
    "my_passenger=3 bypass=on",
])  # fmt: skip
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    assert redact(text) == text


def test_a_key_named_like_a_secret_loses_its_whole_value() -> None:
    value = {"env": {"API_KEY": "x1", "HOME": "/root"}, "password": 12345678,
             "args": ["--token", "abc", "Bearer qwertyuiop12"], "max_tokens": 5}  # fmt: skip
    assert redact_value(value) == {
        "env": {"API_KEY": MARK, "HOME": "/root"}, "password": MARK,
        "args": ["--token", MARK, f"Bearer {MARK}"], "max_tokens": 5,
    }  # fmt: skip


@given(st.text(max_size=200))
def test_redaction_never_fails_and_never_grows_a_secret_back(text: str) -> None:
    shown = redact(text)
    assert redact(shown) == shown


def test_a_huge_tool_output_becomes_a_capped_event_without_its_secrets() -> None:
    out = ("line of output\n" * 50_000) + "AWS_SECRET_ACCESS_KEY=abcdEFGHijklMNOPqrst\n"
    event = tool_use.event("Bash", {"command": "env; cat big.log"},
                           {"stdout": "AKIAIOSFODNN7EXAMPLE\n" + out}, "toolu_1")  # fmt: skip
    raw = json.dumps(event["payload"], ensure_ascii=False, separators=(",", ":")).encode()
    assert len(raw) <= tool_use.MAX_PAYLOAD_BYTES
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(event)
    assert event["payload"]["outcome"].endswith("more characters]")


def test_a_failed_tool_use_is_a_warning_with_its_error_first() -> None:
    event = tool_use.event("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"},
                           {"success": False, "error": "old_string not found"}, None)  # fmt: skip
    assert event["severity"] == "warn"
    assert event["summary"] == "Edit a.py → failed: old_string not found"
    grep = tool_use.event("Grep", {"pattern": "TODO", "path": "src"}, "a.py:1: TODO", None)
    assert grep["summary"] == "Grep TODO in src" and grep["payload"]["outcome_chars"] == 12


def test_a_wide_or_deep_tool_input_is_cut_before_it_is_read() -> None:
    """A payload of 300k keys took the hook 11 s (the harness kills it at 5 s) and one
    nested 500 deep lost its event to a RecursionError."""
    wide = {f"k{i}": "password=abc" for i in range(10_000)}
    assert len(tool_use._trimmed(wide)) == tool_use.MAX_ITEMS
    deep: dict[str, object] = {"password": "hunter2"}
    for _ in range(500):
        deep = {"a": deep}
    event = tool_use.event("Bash", deep, {"stdout": [deep]}, None)
    assert "hunter2" not in json.dumps(event) and "…" in event["payload"]["input"]


def test_a_tools_name_id_and_argv_are_redacted_too() -> None:
    """An MCP tool's argv list, its name and its use id reached the journal as they came."""
    event = tool_use.event("Read ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                           ["--password", "pw444", "--verbose", "v"], None,
                           "toolu_1 password=zzz999")  # fmt: skip
    text = json.dumps(event)
    assert "pw444" not in text and "zzz999" not in text and "ghp_16C7" not in text
    assert '\\"--verbose\\",\\"v\\"' in text  # only a secret flag's value goes
