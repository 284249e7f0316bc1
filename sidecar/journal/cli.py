"""``sidecar journal add|list``, ``sidecar recall`` and ``sidecar health``: the journal
from a shell, through the running daemon (which owns the files and their index)."""

from __future__ import annotations

import argparse
import urllib.parse
from typing import Any

from sidecar.daemon_client import call, client_command, given, print_hits, print_json
from sidecar.journal.ops import HEALTH, LIST, RECALL, RECORD
from sidecar.ops import add_args, cli_body


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    journal = sub.add_parser("journal", help="record and list journal events")
    jsub = journal.add_subparsers(dest="journal_command", required=True)
    p = client_command(jsub, "add", cmd_add, "record one event (durable when this returns)")
    add_args(p, RECORD, "--type", "--summary", "--severity", "--payload", "--session-id",
             payload="a JSON object")  # fmt: skip
    p.add_argument("--source")
    p.add_argument("--ts", help="when it happened, ISO 8601 with a zone (default now)")
    add_args(p, RECORD, "--importance", "--priority", "--supersedes", "--valid-until", "--scope",
             valid_until="when it stops being true, ISO 8601")  # fmt: skip

    p = client_command(jsub, "list", cmd_list, "list events, oldest first")
    add_args(p, LIST, "--scope", "--since", "--until", "--type", "--session-id", "--limit",
             type="repeatable", limit="events per page (1-500)")  # fmt: skip
    p.add_argument("--all", action="store_true", help="follow next_cursor to the end")

    p = client_command(sub, "recall", cmd_recall, "recall past events relevant to a query")
    add_args(p, RECALL, "query", "-k", "--scope", "--session-id", "--walk", "mark=--no-mark",
             scope="both adds the crew's high-value events", walk="add each hit's related "
             "events", mark="do not count this as a use")  # fmt: skip

    p = client_command(
        sub, "health", cmd_health, "the journal's five health metrics and their trend"
    )
    add_args(p, HEALTH, "--scope")


def _line(event: dict[str, Any]) -> str:
    return (f"{event['ts'][:19]}  {event['type']:<24} {event['severity']:<5}  "
            f"{' '.join(str(event['summary']).split())[:100]}")  # fmt: skip


def cmd_add(args: argparse.Namespace) -> int:
    hand = {"source": args.source, "ts": args.ts}
    body = {**cli_body(RECORD, args), **{k: v for k, v in hand.items() if v is not None}}
    answer = call(args.url, "POST", "/memory/journal", body)
    if not print_json(args, answer):
        print(answer["ids"][0])
        if answer.get("warning"):
            print(f"warning: {answer['warning']}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    params = given(**cli_body(LIST, args))
    while True:
        query = urllib.parse.urlencode(params, doseq=True)
        answer = call(args.url, "GET", f"/memory/journal?{query}")
        if not print_json(args, answer):
            for event in answer["events"]:
                print(_line(event))
        params["cursor"] = answer.get("next_cursor")
        if not (args.all and params["cursor"]):
            return 0


def cmd_recall(args: argparse.Namespace) -> int:
    answer = call(args.url, "POST", "/memory/recall", given(**cli_body(RECALL, args)))
    print_hits(args, answer, "warnings", "no past events match", "summary", _recalled)
    return 0


def _recalled(hit: dict[str, Any], summary: str) -> list[str]:
    return [f"{hit['score']:.3f}  {_line({**hit, 'summary': summary})}",
            f"       relevance {hit['relevance']:.3f}  importance {hit['importance']:.3f}  "
            f"used {hit['reference_count']}x  id {hit['id']}",
            *[f"       {other['relation']} ({other['weight']}): {other['summary'][:80]}"
              for other in hit.get("neighbours", [])]]  # fmt: skip


def cmd_health(args: argparse.Namespace) -> int:
    query = urllib.parse.urlencode(cli_body(HEALTH, args))
    answer = call(args.url, "GET", f"/memory/health?{query}")
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
