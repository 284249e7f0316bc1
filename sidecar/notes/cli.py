"""``sidecar write`` and ``sidecar read``: a note from a shell, through the running daemon
(which takes the file's lock, writes it durably and indexes it before answering)."""

from __future__ import annotations

import argparse
import sys
import urllib.parse

from sidecar.daemon_client import call, client_command, print_json
from sidecar.notes.ops import READ, WRITE
from sidecar.ops import Op, add_args, cli_body

FILES = "AGENT.md, CREW.md, daily/today, daily/YYYY-MM-DD.md, topics/<slug>.md (crew)"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def common(p: argparse.ArgumentParser, op: Op) -> None:
        add_args(p, op, "file", "-S --scope --tier", file=f"as search results name it: {FILES}",
                 scope="which tier's file (default agent)")  # fmt: skip

    p = client_command(sub, "write", cmd_write, "write a note: the text from --text or stdin")
    common(p, WRITE)
    p.add_argument("--text", help="the text to write (default: read stdin)")
    p.add_argument("--append", action="store_true",
                   help="add to the end of the file instead of replacing it")  # fmt: skip

    p = client_command(sub, "read", cmd_read, "print a note, or some of its lines")
    common(p, READ)
    p.add_argument("--lines", type=line_range, metavar="A-B",
                   help="only lines A to B (1-based, inclusive; A- to the end)")  # fmt: skip


def line_range(value: str) -> tuple[int, int | None]:
    """``A-B``, ``A-`` or ``A``: the first and last line (None: to the end)."""
    first, sep, last = value.partition("-")
    try:
        start = int(first)
        end = start if not sep else int(last) if last else None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected A-B with line numbers, such as 3-9 (or 3- to the end), not {value!r}"
        ) from None
    return start, end


def _content(args: argparse.Namespace) -> str:
    if args.text is not None:
        return str(args.text)
    if sys.stdin.isatty():
        raise SystemExit("sidecar: give the text with --text, or on stdin "
                         f"(echo '- a fact' | sidecar write {args.file} --append)")  # fmt: skip
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SystemExit(f"sidecar: stdin is not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start}); nothing was written") from None  # fmt: skip


def cmd_write(args: argparse.Namespace) -> int:
    content = _content(args)
    if not content.strip() and not args.append:  # a pipe that produced nothing, say
        raise SystemExit(f"sidecar: nothing to write (the text is empty): {args.file} is "
                         "unchanged, as a replace with nothing would erase it; give the "
                         "text with --text or on stdin")  # fmt: skip
    mode = "append" if args.append else "replace"
    body = {**cli_body(WRITE, args), "content": content, "mode": mode}
    answer = call(args.url, "POST", "/memory/write", body)
    if print_json(args, answer):
        return 0
    usage = answer.get("usage") or {}
    print(f"wrote {answer.get('scope')}/{answer.get('file')} ({answer.get('bytes_written')} bytes; "
          f"{usage.get('bytes')} of {usage.get('cap')} bytes, {usage.get('pct')}%)")  # fmt: skip
    if answer.get("warning"):
        print(f"warning: {answer['warning']}")
    return 0


def cmd_read(args: argparse.Namespace) -> int:
    params = cli_body(READ, args)
    if args.lines is not None:
        params["start_line"], end = args.lines
        if end is not None:
            params["end_line"] = end
    answer = call(args.url, "GET", f"/memory/read?{urllib.parse.urlencode(params)}")
    if print_json(args, answer):
        return 0
    if answer.get("flagged"):  # shown to the operator asking, as over HTTP; said so first
        flagged = answer["flagged"]
        print(f"sidecar: {args.file} looks like a prompt injection ({flagged.get('category')}, "
              f"{flagged.get('pattern')}); the MCP tools withhold it", file=sys.stderr)  # fmt: skip
    if answer.get("content"):
        print(answer["content"])
    return 0
