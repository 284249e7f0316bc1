"""``sidecar facts search|history|invalidate`` and ``sidecar consolidate``, through the
running daemon (which owns the facts log)."""

from __future__ import annotations

import argparse
import urllib.parse
from typing import Any

from sidecar.daemon_client import call, client_command, given, print_json
from sidecar.disk.tiers import TIER_NAMES
from sidecar.facts.log import CATEGORIES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--scope", choices=TIER_NAMES, default="agent")

    facts = sub.add_parser("facts", help="facts distilled from the journal")
    fsub = facts.add_subparsers(dest="facts_command", required=True)
    p = client_command(fsub, "search", cmd_search, "facts true now (or --as-of), best first")
    common(p)
    p.add_argument("query")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--as-of", help="what was true then, ISO 8601 with a zone")
    p.add_argument("--limit", type=int, default=10)
    p = client_command(fsub, "history", cmd_history, "every version of a fact")
    common(p)
    p.add_argument("id")
    p = client_command(
        fsub, "invalidate", cmd_invalidate, "mark a wrong fact no longer true (kept in history)"
    )
    common(p)
    p.add_argument("id")
    p.add_argument("--reason", default="")

    p = client_command(
        sub, "consolidate", cmd_consolidate, "distil every waiting episode into facts now"
    )
    p.add_argument("--scope", choices=TIER_NAMES, help="default: every tier")


def _line(f: dict[str, Any]) -> str:
    until = f" until {f['invalid_at'][:10]}" if f.get("invalid_at") else ""
    return (f"[{f['category']}] {f['fact']}  (sources {f['sources']}, since "
            f"{f['valid_at'][:10]}{until}, id {f['id']})")  # fmt: skip


def cmd_search(args: argparse.Namespace) -> int:
    body = {"query": args.query, "scope": args.scope, "limit": args.limit,
            **given(category=args.category, as_of=args.as_of)}  # fmt: skip
    answer = call(args.url, "POST", "/memory/facts", body)
    if not print_json(args, answer):
        for f in answer["facts"]:
            print(_line(f))
        if not answer["facts"]:
            print("no known facts match")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    path = f"/memory/facts/{urllib.parse.quote(args.id)}/history?scope={args.scope}"
    answer = call(args.url, "GET", path)
    if not print_json(args, answer):
        for f in answer["versions"]:
            print(_line(f))
    return 0


def cmd_invalidate(args: argparse.Namespace) -> int:
    path = f"/memory/facts/{urllib.parse.quote(args.id)}/invalidate"
    answer = call(args.url, "POST", path, {"scope": args.scope, "reason": args.reason})
    if not print_json(args, answer):
        print(f"invalidated: {_line(answer)}")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/consolidate", {"scope": args.scope} if args.scope
                  else {})  # fmt: skip
    if not print_json(args, answer):
        for tier, summaries in answer.get("promoted", {}).items():
            if summaries:
                notes = sum(p["summary_of"] for p in summaries)
                print(f"{tier}: {notes} working note(s) promoted to {len(summaries)} episode(s)")
        if "facts" in answer:  # no LLM: nothing is distilled, and the answer says why
            print(f"facts: {answer['facts']}")
        for tier, jobs in answer["jobs"].items():
            if not jobs:
                print(f"{tier}: nothing waiting")
            for job in jobs:
                acts = ", ".join(f"{k} {v}" for k, v in job["actions"].items() if v) or "no change"
                print(f"{tier}: {job['episodes']} episode(s): {acts} "
                      f"({job['prompt_tokens'] + job['answer_tokens']} tokens)")  # fmt: skip
    return 0
