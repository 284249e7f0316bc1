"""``sidecar facts search|history|invalidate`` and ``sidecar consolidate``, through the
running daemon (which owns the facts log)."""

from __future__ import annotations

import argparse
import urllib.parse
from typing import Any

from sidecar.daemon_client import call, client_command, given, print_json
from sidecar.facts.ops import CONSOLIDATE, HISTORY, INVALIDATE, SEARCH
from sidecar.ops import add_args, cli_body


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    facts = sub.add_parser("facts", help="facts distilled from the journal")
    fsub = facts.add_subparsers(dest="facts_command", required=True)
    p = client_command(fsub, "search", cmd_search, "facts true now (or --as-of), best first")
    add_args(p, SEARCH, "--scope", "query", "--category", "--as-of", "--limit",
             as_of="what was true then, ISO 8601 with a zone")  # fmt: skip
    p = client_command(fsub, "history", cmd_history, "every version of a fact")
    add_args(p, HISTORY, "--scope")
    p.add_argument("id")
    p = client_command(
        fsub, "invalidate", cmd_invalidate, "mark a wrong fact no longer true (kept in history)"
    )
    add_args(p, INVALIDATE, "--scope")
    p.add_argument("id")
    add_args(p, INVALIDATE, "--reason", reason={"default": ""})

    p = client_command(
        sub, "consolidate", cmd_consolidate, "distil every waiting episode into facts now"
    )
    add_args(p, CONSOLIDATE, "--scope", scope="default: every tier")


def _line(f: dict[str, Any]) -> str:
    until = f" until {f['invalid_at'][:10]}" if f.get("invalid_at") else ""
    return (f"[{f['category']}] {f['fact']}  (sources {f['sources']}, since "
            f"{f['valid_at'][:10]}{until}, id {f['id']})")  # fmt: skip


def cmd_search(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/facts", given(**cli_body(SEARCH, args)))
    if not print_json(args, answer):
        for f in answer["facts"]:
            print(_line(f))
        if not answer["facts"]:
            print("no known facts match")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    query = urllib.parse.urlencode(cli_body(HISTORY, args))
    path = f"/memory/facts/{urllib.parse.quote(args.id)}/history?{query}"
    answer = call(args.url, "GET", path)
    if not print_json(args, answer):
        for f in answer["versions"]:
            print(_line(f))
            if f.get("evidence"):  # the job's event, whose supports relations name episodes
                print(f"    evidence: journal event {f['evidence']}")
    return 0


def cmd_invalidate(args: argparse.Namespace) -> int:
    path = f"/memory/facts/{urllib.parse.quote(args.id)}/invalidate"
    answer = call(args.url, "POST", path, cli_body(INVALIDATE, args))
    if not print_json(args, answer):
        print(f"invalidated: {_line(answer)}")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/consolidate", cli_body(CONSOLIDATE, args))
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
