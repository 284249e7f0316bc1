"""``sidecar seed-demo``: example memory to try the daemon on."""

from __future__ import annotations

import argparse
from pathlib import Path

from sidecar import demo


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("seed-demo", help="create example agent/ and crew/ memory under PATH")
    p.add_argument("path", type=Path)
    p.set_defaults(func=cmd_seed_demo)


def cmd_seed_demo(args: argparse.Namespace) -> int:
    agent, crew = demo.seed(args.path)
    print(f"demo memory in {agent} and {crew}")
    return 0
