"""Credential-looking values out of what a harness hands the journal.

A tool's input and output (a shell command, a file it printed, an HTTP exchange) may
hold a key, a token or a password; the journal keeps its events for months and shows
them to later sessions, so a hook replaces such values with ``[REDACTED]`` before
anything leaves the hook's process. It errs on the side of redacting: a name that says
it holds a secret loses its value whatever the value looks like, and known token shapes
are removed wherever they appear. The name of what was redacted stays, so the event
still reads ("GITHUB_TOKEN=[REDACTED]").
"""

from __future__ import annotations

import re
from typing import Any

MARK = "[REDACTED]"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
# "Authorization: Bearer x", "Proxy-Authorization: Basic x", "-H 'X-Api-Key: x'".
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie)"
    r"(\s*[:=]\s*)(?:(bearer|basic|token|digest|negotiate)\s+)?([^\s\"'`,;]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^@\s/]+)(@)", re.IGNORECASE)
# Shapes providers give their keys, found wherever they are.
_TOKENS = re.compile(
    r"\b(?:"
    r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"  # AWS key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"  # Anthropic, OpenAI
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JSON web tokens
    r")"
)
# A name that says it holds a secret, then = or : (JSON, YAML, env, flags), then a value.
_SECRET_NAME = (
    r"[\w.-]*?(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|credentials?|session[_-]?key|signature|[_-]pass|[_-]pwd)"
    r"(?:[_-]?(?:key|id|value))?"
)
_ASSIGNED = re.compile(
    rf"(?i)(\b{_SECRET_NAME})\b([\"']?\s*(?:=|:|=>)\s*)(?!\[REDACTED\])"
    r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'`,;&}\]]{3,})"
)
_NAME_ONLY = re.compile(rf"(?i)\A{_SECRET_NAME}\Z")
# A command line's flag and its value after a space: "--password hunter2", "--api-key k".
_FLAG = re.compile(
    rf"(?i)((?<![\w-])--{_SECRET_NAME})\b(\s+)(?!-|\[REDACTED\])"
    r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'`,;&}\]]{3,})"
)
_FLAG_ONLY = re.compile(rf"(?i)\A--{_SECRET_NAME}\Z")
# curl's "-u user:password" / "--user=user:password".
_CURL_USER = re.compile(
    r"(\bcurl\b[^\n|;&]*?\s(?:-u|--user)(?:\s+|=)[\"']?[^\s:\"']*:)(?!\[REDACTED\])([^\s\"'@]+)"
)


def _assigned(m: re.Match[str]) -> str:
    value = m.group(3)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{m.group(1)}{m.group(2)}{quote}{MARK}{quote}"


def _header(m: re.Match[str]) -> str:
    scheme = f"{m.group(3)} " if m.group(3) else ""
    return f"{m.group(1)}{m.group(2)}{scheme}{MARK}"


def redact(text: str) -> str:
    """``text`` with every credential-looking value replaced by ``[REDACTED]``."""
    text = _PRIVATE_KEY.sub(f"{MARK} (private key)", text)
    text = _HEADER.sub(_header, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MARK}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MARK}{m.group(3)}", text)
    text = _TOKENS.sub(MARK, text)
    text = _CURL_USER.sub(lambda m: f"{m.group(1)}{MARK}", text)
    text = _FLAG.sub(_assigned, text)
    return _ASSIGNED.sub(_assigned, text)


def redact_value(value: Any) -> Any:
    """A JSON value with its strings redacted, and the whole value of any key named like
    a secret (``{"password": ...}``) replaced."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            k: MARK if isinstance(k, str) and _NAME_ONLY.match(k) and v else redact_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list):  # an argv: ["--password", "x"] hides the x
        return [MARK if i and _flag_before(value[i - 1]) and v else redact_value(v)
                for i, v in enumerate(value)]  # fmt: skip
    return value


def _flag_before(value: Any) -> bool:
    return isinstance(value, str) and bool(_FLAG_ONLY.match(value))
