"""``sidecar ui``: the memory inspector's address, once the daemon there answers."""

from __future__ import annotations

import argparse
import webbrowser

from sidecar.daemon_client import call, client_command
from sidecar.ui import PATH


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(sub, "ui", cmd_ui, "print (or open) the memory inspector's URL",
                       json_help=None)  # fmt: skip
    p.add_argument("--open", action="store_true", help="open it in the default web browser")


def cmd_ui(args: argparse.Namespace) -> int:
    base = args.url.rstrip("/")
    health = call(base, "GET", "/healthz")  # a URL that leads nowhere helps no one
    url = base + PATH
    print(url)
    if health.get("status") != "ok":
        print(f"note: the daemon is {health.get('status')}: {'; '.join(health.get('reasons', []))}")
    if args.open and not webbrowser.open(url):
        print("no web browser found here: open the URL above in one")
    return 0
