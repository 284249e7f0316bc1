"""``sidecar journal add|list``, ``sidecar recall`` and ``sidecar health``: the journal
from a shell, through the running daemon (which owns the files and their index)."""

from __future__ import annotations

import argparse
import json
import urllib.parse
from typing import Any

from sidecar.daemon_client import call, client_command, given, print_hits, print_json
from sidecar.disk.tiers import SCOPE_WORDS, TIER_NAMES
from sidecar.journal.events import PRIORITY_FLOORS, SEVERITIES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    journal = sub.add_parser("journal", help="record and list journal events")
    jsub = journal.add_subparsers(dest="journal_command", required=True)
    p = client_command(jsub, "add", cmd_add, "record one event (durable when this returns)")
    p.add_argument("--type", required=True, help="dotted kind, e.g. deploy.failed")
    p.add_argument("--summary", required=True)
    p.add_argument("--severity", choices=SEVERITIES, default="info")
    p.add_argument("--payload", type=json.loads, help="a JSON object")
    p.add_argument("--session-id")
    p.add_argument("--source")
    p.add_argument("--ts", help="when it happened, ISO 8601 with a zone (default now)")
    p.add_argument("--importance", type=float)
    p.add_argument("--priority", choices=tuple(PRIORITY_FLOORS))
    p.add_argument("--supersedes", help="id of the event this one corrects")
    p.add_argument("--valid-until", help="when it stops being true, ISO 8601")
    p.add_argument("--scope", choices=TIER_NAMES, default="agent")

    p = client_command(jsub, "list", cmd_list, "list events, oldest first")
    p.add_argument("--scope", choices=TIER_NAMES, default="agent")
    p.add_argument("--since")
    p.add_argument("--until")
    p.add_argument("--type", action="append", help="repeatable")
    p.add_argument("--session-id")
    p.add_argument("--limit", type=int, default=50, help="events per page (1-500)")
    p.add_argument("--all", action="store_true", help="follow next_cursor to the end")

    p = client_command(sub, "recall", cmd_recall, "recall past events relevant to a query")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=5)
    p.add_argument(
        "--scope",
        choices=SCOPE_WORDS,
        default="agent",
        help="both adds the crew's high-value events",
    )
    p.add_argument("--session-id")
    p.add_argument("--walk", action="store_true", help="add each hit's related events")
    p.add_argument("--no-mark", action="store_true", help="do not count this as a use")

    p = client_command(
        sub, "health", cmd_health, "the journal's five health metrics and their trend"
    )
    p.add_argument("--scope", choices=TIER_NAMES, default="agent")


def _line(event: dict[str, Any]) -> str:
    return (f"{event['ts'][:19]}  {event['type']:<24} {event['severity']:<5}  "
            f"{' '.join(str(event['summary']).split())[:100]}")  # fmt: skip


def cmd_add(args: argparse.Namespace) -> int:
    fields = ("type", "summary", "severity", "payload", "session_id", "source", "ts",
              "importance", "priority", "supersedes", "valid_until", "scope")  # fmt: skip
    body = {f: getattr(args, f) for f in fields if getattr(args, f) is not None}
    answer = call(args.url, "POST", "/memory/journal", body)
    if not print_json(args, answer):
        print(answer["ids"][0])
        if answer.get("warning"):
            print(f"warning: {answer['warning']}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    params: list[tuple[str, str]] = [("scope", args.scope), ("limit", str(args.limit))]
    params += [(k, v) for k, v in (("since", args.since), ("until", args.until),
               ("session_id", args.session_id)) if v]  # fmt: skip
    params += [("type", t) for t in args.type or []]
    cursor = None
    while True:
        page = params + ([("cursor", cursor)] if cursor else [])
        answer = call(args.url, "GET", "/memory/journal?" + urllib.parse.urlencode(page))
        if not print_json(args, answer):
            for event in answer["events"]:
                print(_line(event))
        cursor = answer.get("next_cursor")
        if not (args.all and cursor):
            return 0


def cmd_recall(args: argparse.Namespace) -> int:
    body = {"query": args.query, "k": args.k, "scope": args.scope, "walk": int(args.walk),
            "mark": not args.no_mark, **given(session_id=args.session_id)}  # fmt: skip
    answer = call(args.url, "POST", "/memory/recall", body)
    print_hits(args, answer, "warnings", "no past events match", "summary", _recalled)
    return 0


def _recalled(hit: dict[str, Any], summary: str) -> list[str]:
    return [f"{hit['score']:.3f}  {_line({**hit, 'summary': summary})}",
            f"       relevance {hit['relevance']:.3f}  importance {hit['importance']:.3f}  "
            f"used {hit['reference_count']}x  id {hit['id']}",
            *[f"       {other['relation']} ({other['weight']}): {other['summary'][:80]}"
              for other in hit.get("neighbours", [])]]  # fmt: skip


def cmd_health(args: argparse.Namespace) -> int:
    answer = call(args.url, "GET", f"/memory/health?scope={args.scope}")
    if print_json(args, answer):
        return 0
    score = "no score yet" if answer["score"] is None else answer["score"]
    print(f"{args.scope} journal: {score} ({answer['band']}), "
          f"episodic {answer.get('episodic')}")  # fmt: skip
    for name, metric in answer["metrics"].items():
        value = "n/a" if metric["value"] is None else f"{metric['value']:.1f}"
        print(f"  {name:<13} {value:>6}  (weight {metric['weight']})")
    if len(answer.get("history", [])) > 1:
        trend = ", ".join(f"{h['day']} {h['score']}" for h in answer["history"][-7:])
        print(f"  last days: {trend}")
    return 0
