"""``sidecar learn``, ``sidecar learnings`` and ``sidecar compact``: learnings from a shell,
through the running daemon (which owns the files and their index)."""

from __future__ import annotations

import argparse
import urllib.parse
from typing import Any

from sidecar.daemon_client import call, client_command, given, print_hits, print_json
from sidecar.learnings.ops import COMPACT, LEARN, LIST, SEARCH
from sidecar.ops import add_args, cli_body


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(sub, "learn", cmd_learn, "save a learning (durable when this returns)")
    add_args(p, LEARN, "text", "--type", "--domain", "--importance", "--institutional", "--file",
             "--scope")  # fmt: skip

    p = client_command(
        sub, "learnings", cmd_learnings, "learnings that bear on a query, best first"
    )
    add_args(p, SEARCH, "query", "--limit", "types=--type", "--scope", types="repeatable")

    p = client_command(
        sub, "list-learnings", cmd_list, "every learning in an order, no query needed"
    )
    add_args(p, LIST, "--order", "--limit", "--scope", "--status", "--type")

    p = client_command(
        sub, "compact", cmd_compact, "merge duplicate learnings and archive spent ones"
    )
    add_args(p, COMPACT, "--scope", "--file", "--dry-run", file="only learnings/<slug>.md",
             dry_run="show what it would do; change nothing")  # fmt: skip


def cmd_learn(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/learnings", cli_body(LEARN, args))
    if not print_json(args, answer):
        print(f"{answer['id']}  {answer['scope']}/{answer['file']}")
        for merge in (answer.get("compaction") or {}).get("merged", []):
            print(f"merged {merge['from']} into {merge['into']} ({merge['reason']})")
    return 0


def cmd_learnings(args: argparse.Namespace) -> int:
    body = given(**cli_body(SEARCH, args))
    answer = call(args.url, "POST", "/memory/learnings/search", body)
    print_hits(args, answer, "degraded", "no learnings match", "text", _found)
    return 0


def _found(h: dict[str, Any], text: str) -> list[str]:
    return [f"{h['score']:.3f}  {h['type']:<11} {h['tier']:<5}  {' '.join(text.split())[:100]}",
            f"       relevance {h['relevance']:.3f}  prominence {h['prominence']:.3f}  "
            f"x{h['scope_factor']}  reinforced {h['reinforcement_count']}x  "
            f"{h['file']}:{h['line']}"]  # fmt: skip


def cmd_list(args: argparse.Namespace) -> int:
    query = urllib.parse.urlencode(given(**cli_body(LIST, args)))
    answer = call(args.url, "GET", f"/memory/learnings?{query}")
    if print_json(args, answer):
        return 0
    listed = {**answer, "hits": answer["learnings"]}  # shown as search hits are: flagged withheld
    print_hits(args, listed, "degraded", "no learnings", "text", _listed)
    return 0


def _listed(e: dict[str, Any], text: str) -> list[str]:
    return [f"{e['prominence']:.3f}  reinforced {e['reinforcement_count']}x  {e['type']:<11} "
            f"{e['tier']:<5} {e['status']:<9} {' '.join(text.split())[:80]}"]  # fmt: skip


def cmd_compact(args: argparse.Namespace) -> int:
    body = given(**cli_body(COMPACT, args))
    answer = call(args.url, "POST", "/memory/learnings/compact", body)
    if print_json(args, answer):
        return 0
    verb = "would" if args.dry_run else "did"
    if not answer["files"]:
        print("nothing to compact")
    for plan in answer["files"]:
        print(f"{plan['file']}: {verb} merge {len(plan['merged'])}, "
              f"archive {len(plan['archived'])} to {plan['archive_file']}")  # fmt: skip
        for m in plan["merged"]:
            print(f"  merge {m['from']} into {m['into']} ({m['reason']})")
        for a in plan["archived"]:
            print(f"  archive {a['id']} ({a['reason']})")
    return 0
