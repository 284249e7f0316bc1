"""``sidecar learn``, ``sidecar learnings`` and ``sidecar compact``: learnings from a shell,
through the running daemon (which owns the files and their index)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sidecar.daemon_client import call
from sidecar.learnings.entries import DOMAINS, TYPES


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser], default_url: str) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--url", default=default_url, help="the local daemon (env SIDECAR_URL)")
        p.add_argument("--json", action="store_true", help="print the daemon's JSON answer")

    p = sub.add_parser("learn", help="save a learning (durable when this returns)")
    common(p)
    p.add_argument("text")
    p.add_argument("--type", choices=TYPES, default="declarative")
    p.add_argument("--domain", choices=DOMAINS, default="task")
    p.add_argument("--importance", type=float, default=0.5)
    p.add_argument("--institutional", action="store_true", help="always in the memory block")
    p.add_argument("--file", default="general", help="slug: goes to learnings/<file>.md")
    p.add_argument("--scope", choices=("agent", "crew"), default="agent")
    p.set_defaults(func=cmd_learn)

    p = sub.add_parser("learnings", help="learnings that bear on a query, best first")
    common(p)
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--type", action="append", choices=TYPES, help="repeatable")
    p.add_argument("--scope", choices=("agent", "crew", "both"))
    p.set_defaults(func=cmd_learnings)

    p = sub.add_parser("compact", help="merge duplicate learnings and archive spent ones")
    common(p)
    p.add_argument("--scope", choices=("agent", "crew"), default="agent")
    p.add_argument("--file", help="only learnings/<slug>.md")
    p.add_argument("--dry-run", action="store_true", help="show what it would do; change nothing")
    p.set_defaults(func=cmd_compact)


def _print(args: argparse.Namespace, body: Any) -> bool:
    if args.json:
        print(json.dumps(body, indent=2, ensure_ascii=False))
    return bool(args.json)


def cmd_learn(args: argparse.Namespace) -> int:
    fields = ("text", "type", "domain", "importance", "file", "scope")
    body = {f: getattr(args, f) for f in fields}
    body["institutional"] = args.institutional
    answer = call(args.url, "POST", "/memory/learnings", body)
    if not _print(args, answer):
        print(f"{answer['id']}  {answer['scope']}/{answer['file']}")
        for merge in (answer.get("compaction") or {}).get("merged", []):
            print(f"merged {merge['from']} into {merge['into']} ({merge['reason']})")
    return 0


def cmd_learnings(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if args.type:
        body["types"] = args.type
    if args.scope:
        body["scope"] = args.scope
    answer = call(args.url, "POST", "/memory/learnings/search", body)
    if _print(args, answer):
        return 0
    for note in answer.get("degraded", []):
        print(f"warning: {note}")
    if not answer["hits"]:
        print("no learnings match")
    for h in answer["hits"]:
        text = "[withheld: flagged as a prompt injection]" if h.get("flagged") else h["text"]
        print(f"{h['score']:.3f}  {h['type']:<11} {h['tier']:<5}  {' '.join(text.split())[:100]}")
        print(f"       relevance {h['relevance']:.3f}  prominence {h['prominence']:.3f}  "
              f"x{h['scope_factor']}  reinforced {h['reinforcement_count']}x  "
              f"{h['file']}:{h['line']}")  # fmt: skip
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"scope": args.scope, "dry_run": args.dry_run}
    if args.file:
        body["file"] = args.file
    answer = call(args.url, "POST", "/memory/learnings/compact", body)
    if _print(args, answer):
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
