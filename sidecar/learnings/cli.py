"""``sidecar learn``, ``sidecar learnings`` and ``sidecar compact``: learnings from a shell,
through the running daemon (which owns the files and their index)."""

from __future__ import annotations

import argparse
from typing import Any

from sidecar.daemon_client import call, client_command, given, print_hits, print_json
from sidecar.disk.tiers import SCOPES, TIER_NAMES
from sidecar.learnings.entries import DOMAINS, TYPES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = client_command(sub, "learn", cmd_learn, "save a learning (durable when this returns)")
    p.add_argument("text")
    p.add_argument("--type", choices=TYPES, default="declarative")
    p.add_argument("--domain", choices=DOMAINS, default="task")
    p.add_argument("--importance", type=float, default=0.5)
    p.add_argument("--institutional", action="store_true", help="always in the memory block")
    p.add_argument("--file", default="general", help="slug: goes to learnings/<file>.md")
    p.add_argument("--scope", choices=TIER_NAMES, default="agent")

    p = client_command(
        sub, "learnings", cmd_learnings, "learnings that bear on a query, best first"
    )
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--type", action="append", choices=TYPES, help="repeatable")
    p.add_argument("--scope", choices=SCOPES)

    p = client_command(
        sub, "compact", cmd_compact, "merge duplicate learnings and archive spent ones"
    )
    p.add_argument("--scope", choices=TIER_NAMES, default="agent")
    p.add_argument("--file", help="only learnings/<slug>.md")
    p.add_argument("--dry-run", action="store_true", help="show what it would do; change nothing")


def cmd_learn(args: argparse.Namespace) -> int:
    fields = ("text", "type", "domain", "importance", "file", "scope")
    body = {f: getattr(args, f) for f in fields}
    body["institutional"] = args.institutional
    answer = call(args.url, "POST", "/memory/learnings", body)
    if not print_json(args, answer):
        print(f"{answer['id']}  {answer['scope']}/{answer['file']}")
        for merge in (answer.get("compaction") or {}).get("merged", []):
            print(f"merged {merge['from']} into {merge['into']} ({merge['reason']})")
    return 0


def cmd_learnings(args: argparse.Namespace) -> int:
    body = {"query": args.query, "limit": args.limit, **given(types=args.type, scope=args.scope)}
    answer = call(args.url, "POST", "/memory/learnings/search", body)
    print_hits(args, answer, "degraded", "no learnings match", "text", _found)
    return 0


def _found(h: dict[str, Any], text: str) -> list[str]:
    return [f"{h['score']:.3f}  {h['type']:<11} {h['tier']:<5}  {' '.join(text.split())[:100]}",
            f"       relevance {h['relevance']:.3f}  prominence {h['prominence']:.3f}  "
            f"x{h['scope_factor']}  reinforced {h['reinforcement_count']}x  "
            f"{h['file']}:{h['line']}"]  # fmt: skip


def cmd_compact(args: argparse.Namespace) -> int:
    body = {"scope": args.scope, "dry_run": args.dry_run, **given(file=args.file)}
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
