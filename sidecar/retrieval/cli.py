"""``sidecar search|reindex|status -p PATH``: a tier folder's index, with no running server.

They open ``<PATH>/index.sqlite`` directly, which is handy on a backup or a frozen
container.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sidecar.config import serve_default
from sidecar.disk.tiers import INDEX_FILENAME, TIER_NAMES
from sidecar.index import indexer
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.index.progress import tracked
from sidecar.retrieval import query
from sidecar.retrieval.modes import SPARSE_CONTEXT_WEIGHT
from sidecar.stores.sqlite import SQLiteStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _offline_parser(sub, "search", "search a tier folder without a running server")
    p.add_argument("query")
    p.add_argument("-l", "--limit", type=int, default=10)
    p.add_argument("-F", "--format", choices=("table", "json"), default="table")
    p.set_defaults(func=cmd_search)

    p = _offline_parser(sub, "reindex", "rebuild a tier folder's index from its markdown")
    p.set_defaults(func=cmd_reindex)

    p = _offline_parser(sub, "status", "print a tier folder's index status as JSON")
    p.set_defaults(func=cmd_status)


def _offline_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help)
    p.add_argument("-p", "--path", type=Path, required=True, help="tier root folder")
    p.add_argument(
        "-S",
        "--scope",
        choices=TIER_NAMES,
        default=None,
        help="which tier the folder is (labels results); default: crew if PATH is the crew "
        "dir (env SIDECAR_CREW_DIR) or holds CREW.md and no AGENT.md, else agent",
    )
    p.add_argument("--chunk-chars", type=int, default=DEFAULT_MAX_CHARS)
    return p


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.expanduser().resolve()
    except (OSError, RuntimeError):
        return False


def tier_of(root: Path, scope: str | None) -> str:
    """The tier a folder is: ``-S`` if given; else the configured tier dir it is
    (``SIDECAR_CREW_DIR`` / ``SIDECAR_AGENT_DIR``, the ``serve`` defaults otherwise);
    else crew when it holds ``CREW.md`` and no ``AGENT.md``; else agent."""
    if scope is not None:
        return scope
    if _same_folder(root, Path(serve_default("crew_dir"))):
        return "crew"
    if _same_folder(root, Path(serve_default("agent_dir"))):
        return "agent"
    if (root / "CREW.md").is_file() and not (root / "AGENT.md").is_file():
        return "crew"
    return "agent"


def _open(args: argparse.Namespace) -> SQLiteStore:
    root: Path = args.path.expanduser()
    if not root.is_dir():
        raise SystemExit(f"sidecar: {root} is not a directory")
    return SQLiteStore(root / INDEX_FILENAME)


def cmd_search(args: argparse.Namespace) -> int:
    from sidecar.retrieval.ranking import Result, search_store  # numpy: this command only
    from sidecar.retrieval.search import SearchResponse

    if not 1 <= args.limit <= 50:
        raise SystemExit("sidecar: --limit must be from 1 to 50")
    planned = query.plan(args.query)
    if planned is None:
        raise SystemExit("sidecar: the query has no searchable words")
    store = _open(args)
    try:
        indexer.sync_tree(store, args.path.expanduser(), "", args.chunk_chars)
        hits, mode = search_store(store, planned, args.limit, SPARSE_CONTEXT_WEIGHT)
    finally:
        store.close()
    tier = tier_of(args.path.expanduser(), args.scope)
    response = SearchResponse(
        [Result(tier, h, h.score) for h in hits], mode, query.terms(args.query)
    )
    body = response.to_json()
    if args.format == "json":
        print(json.dumps(body, indent=2, ensure_ascii=False))
        return 0
    if not body["results"]:
        print(f"no results ({mode})")
    stems = [t.lower()[:4] for t in query.terms(args.query)]
    for r in body["results"]:
        where = f"{r['file']}:{r['start_line']}-{r['end_line']}"
        print(f"{r['score']:8.3g}  {where}  {r['heading']}")
        lines = [ln for ln in r["snippet"].splitlines() if ln.strip()]
        # the lines that mention the query first (a snippet often opens with headings)
        shown = sorted(lines, key=lambda ln: not any(s in ln.lower() for s in stems))[:3]
        for line in sorted(shown, key=lines.index):
            print(f"          {line}")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        root = args.path.expanduser()
        items = indexer.load_tree(root, args.chunk_chars)
        store.replace_all(tracked(items, indexer.count_notes(root), "reindex"))  # bar on a tty
        store.optimize()
        stats = store.stats()
    finally:
        store.close()
    print(f"indexed {stats.total_files} files, {stats.total_chunks} chunks")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        stats = store.stats()
    finally:
        store.close()
    scope = tier_of(args.path.expanduser(), args.scope)
    print(json.dumps({"scope": scope, **stats.to_json()}, indent=2))
    return 0
