"""``sidecar`` command line: the daemon, the commands that talk to it, and offline ones.

Each capability registers its own commands (``register(subparsers)`` in its ``cli.py``,
as it registers its routes and tools); this package composes them, and holds the
commands of no one capability: ``serve``, ``mcp``, ``doctor`` and ``seed-demo``.

A command imports what only it needs (the daemon, the MCP SDK, numpy) when it runs:
``serve`` starts parsing a cold tier's notes before it loads the daemon, so the two
overlap, and every other command starts faster. ``hook``, which a harness runs on every
tool use, does not even load the other commands.
"""

from __future__ import annotations

import argparse
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    from sidecar.cli import demo, doctor, mcp, serve
    from sidecar.context import cli as context_cli
    from sidecar.facts import cli as facts_cli
    from sidecar.harness import cli as harness_cli
    from sidecar.journal import cli as journal_cli
    from sidecar.learnings import cli as learnings_cli
    from sidecar.lifecycle import cli as lifecycle_cli
    from sidecar.notes import cli as notes_cli
    from sidecar.retrieval import cli as retrieval_cli
    from sidecar.sessions import cli as sessions_cli
    from sidecar.ui import cli as ui_cli

    parser = argparse.ArgumentParser(prog="sidecar", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    # In the order ``sidecar --help`` lists their commands.
    for module in (serve, retrieval_cli, notes_cli, mcp, context_cli, doctor, journal_cli,
                   learnings_cli, facts_cli, lifecycle_cli, sessions_cli, harness_cli,
                   ui_cli, demo):  # fmt: skip
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hook"]:
        from sidecar.harness import cli as harness_cli

        return harness_cli.main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep the interpreter's exit
        # flush from failing on the same closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
