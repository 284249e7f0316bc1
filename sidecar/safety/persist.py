"""The matchers for the persistence rules: downloaded code wired to run again.

A plain ``curl ... | sh`` installer runs once; these find it (or a key, or a
downloaded file) wired into something that runs it again: authorized_keys, cron,
a shell start-up file, a systemd or launchd unit. The patterns are data in
:mod:`sidecar.safety.rules`.
"""

from __future__ import annotations

import re

from sidecar.safety.rules import (
    DOWNLOAD_ANCHORS,
    DOWNLOAD_HINTS,
    ECHOED,
    FETCH_TO_FILE,
    PIPE_TO_SHELL,
    RUN_FETCHED,
    DownloadHook,
    KeyWrite,
    UnitDownload,
)
from sidecar.safety.text import Doc, excerpt, line_bounds, span_excerpt

# --- persistence --------------------------------------------------------------------------------


def _downloads_and_runs(line: str) -> bool:
    """Whether a shell line fetches code from the network and executes it.

    ``curl ... | sh``, ``wget -O f ... && sh f``, ``bash -i >& /dev/tcp/...``,
    ``nc -e``, ``base64 -d | sh``. Each shape is matched linearly, so a long
    line costs a bounded look-ahead per curl, not one per character pair.
    """
    if not any(h in line for h in DOWNLOAD_HINTS):
        return False
    low = line.lower()
    piped = "|" in line or "/dev/" in low or " -e" in low or " -c" in low
    if piped and PIPE_TO_SHELL.search(line):
        return True
    if "&&" not in line and ";" not in line:
        return False
    if not ("-o" in low or "--output" in low or ">" in line):
        return False
    fetched = FETCH_TO_FILE.search(line)
    return bool(fetched) and bool(RUN_FETCHED.search(line, fetched.end()))


def _download_exec_lines(doc: Doc) -> list[str]:
    """Lines that fetch code and run it: each persistence rule asks where they are wired."""
    return doc.shell_lines(DOWNLOAD_ANCHORS, _downloads_and_runs)


def key_write(check: KeyWrite, doc: Doc) -> str | None:
    """A key appended to authorized_keys by echo/printf/curl, or a full key offered for it."""
    text = doc.text
    for pos in doc.find(check.anchor):
        start, end = line_bounds(text, pos)
        m = check.command.search(text, start, end)
        lo, hi = max(0, pos - 400), min(len(text), pos + 400)
        if not m and "AAAA" in text[lo:hi]:
            m = check.near_key.search(text, lo, hi)
        if m:
            return span_excerpt(text, m.start(), m.end())
    return None


def _fetches_into(regex: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """Whether curl/wget output goes where ``regex`` says, curl being the command, not a string.

    ``echo 'alias myip="curl -s https://..."' >> ~/.bashrc`` writes the word
    curl, not what curl downloads.
    """
    m = regex.search(text, start, end)
    return bool(m) and not ECHOED.search(text, start, m.start())


def download_hook(check: DownloadHook, doc: Doc) -> str | None:
    """A download-and-run line wired to run again, or a download written where it will be run."""
    for line in _download_exec_lines(doc):
        if check.runs_again.search(line):
            return excerpt(line)
    text = doc.text
    if all(doc.find(a) for a in check.required):
        for start, end in doc.lines((b"curl", b"wget")):
            low = text[start:end].lower()
            if any(n in low for n in check.names) and _fetches_into(
                check.fetch_into, text, start, end
            ):
                return excerpt(text[start:end])
    return None


def unit_download(check: UnitDownload, doc: Doc) -> str | None:
    """A unit whose Exec line (or ``systemctl enable`` line) fetches and runs code.

    Also a unit file downloaded straight into a systemd or launchd directory,
    and an ``ExecStart=`` pointing at a file the same text fetched with
    ``curl -o``/``wget -O`` (the payload lands first, the unit runs it at boot).
    A unit running a local program passes.
    """
    text = doc.text
    for line in _download_exec_lines(doc):
        if check.runs_at_boot.search(line):
            return excerpt(line)
    fetches = doc.lines((b"curl", b"wget"))
    if doc.find(b"systemd") or doc.find(b"launch"):
        for start, end in fetches:
            low = text[start:end].lower()
            if "systemd" in low or "launch" in low:
                m = check.unit_download.search(text, start, end)
                if m:
                    return span_excerpt(text, m.start(), m.end())
    if not doc.find(b"exec"):
        return None
    targets: set[str] = set()
    for start, end in fetches:
        low = text[start:end].lower()
        if "-o" in low or "--output" in low:
            found = check.download_target.finditer(text, start, end)
            targets.update(t.group(1).strip("'\"") for t in found)
    targets.discard("-")
    if targets:
        for start, end in doc.lines((b"exec",), logical=False):
            m = check.exec_line.match(text, start, end)
            if m and any(t in m.group(1) for t in targets):
                return excerpt(m.group().strip())
    return None
