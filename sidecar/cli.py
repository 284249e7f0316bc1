"""``sidecar`` command line: the daemon, the commands that talk to it, and offline ones.

Each capability adds its own commands (the offline search, reindex and status that open a
tier folder's index are ``sidecar.retrieval.cli``). Every ``serve`` flag can also come from
a ``SIDECAR_*`` variable.

A command imports what only it needs (the daemon, the MCP SDK, numpy) when it runs:
``serve`` starts parsing a cold tier's notes before it loads the daemon, so the two
overlap, and every other command starts faster.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from sidecar import demo, logs
from sidecar.config import DEFAULT_PORT, EMBEDDERS, ROLES, STORE_FLAGS, Caps, Settings
from sidecar.daemon_client import error_detail, get_json, unreachable
from sidecar.facts import cli as facts_cli
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.index.head_start import head_start
from sidecar.journal import cli as journal_cli
from sidecar.learnings import cli as learnings_cli
from sidecar.notes import cli as notes_cli
from sidecar.retrieval import cli as offline_cli
from sidecar.retrieval.embedders.factory import HOW_TO_ENABLE

log = logging.getLogger("sidecar")


def _env(name: str, default: Any) -> Any:
    return os.environ.get(f"SIDECAR_{name}", default)


def _folder(value: str) -> Path:
    """A tier folder; an empty one (an unset variable in a compose file) would be '.', the
    folder the daemon was started in, made a memory without a word."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "is empty: give the folder that holds (or is to hold) this tier's memory "
            "(an empty SIDECAR_AGENT_DIR or SIDECAR_CREW_DIR counts as given)"
        )
    return Path(value).expanduser()


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the memory daemon")
    p.add_argument("--host", default=_env("HOST", "127.0.0.1"), help="env SIDECAR_HOST")
    p.add_argument("--port", type=int, default=_env("PORT", DEFAULT_PORT), help="env SIDECAR_PORT")
    p.add_argument(
        "--agent-dir",
        type=_folder,
        default=_env("AGENT_DIR", "~/.memory"),
        help="agent tier root (env SIDECAR_AGENT_DIR)",
    )
    p.add_argument(
        "--crew-dir",
        type=_folder,
        default=_env("CREW_DIR", "/crew/shared/.memory"),
        help="crew tier root (env SIDECAR_CREW_DIR)",
    )
    p.add_argument(
        "--role",
        choices=ROLES,
        default=_env("ROLE", "agent"),
        help="lead indexes the crew tier (env SIDECAR_ROLE)",
    )
    p.add_argument(
        "--chunk-chars",
        type=int,
        default=_env("CHUNK_CHARS", DEFAULT_MAX_CHARS),
        help="largest chunk in characters (env SIDECAR_CHUNK_CHARS)",
    )
    p.add_argument(
        "--reconcile-interval",
        type=float,
        default=_env("RECONCILE_INTERVAL", 60.0),
        help="seconds between full reconcile scans (env SIDECAR_RECONCILE_INTERVAL)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[h for h in _env("ALLOWED_HOSTS", "").split(",") if h],
        help="extra Host header name to accept (env SIDECAR_ALLOWED_HOSTS, comma list)",
    )
    defaults = Caps()
    for kind, what in (("core", "AGENT.md / CREW.md"), ("daily", "a daily log"),
                       ("topic", "a topic or user file"), ("tier", "a whole tier"),
                       ("journal_day", "a journal day file"),
                       ("journal_tier", "a tier's whole journal"),
                       ("learnings", "a learnings file"),
                       ("facts_log", "a tier's facts log")):  # fmt: skip
        env = f"CAP_{kind.upper()}_BYTES"
        p.add_argument(
            f"--cap-{kind.replace('_', '-')}-bytes",
            type=int,
            dest=f"cap_{kind}",
            default=_env(env, getattr(defaults, kind)),
            help=f"largest size of {what} after a write (env SIDECAR_{env})",
        )
    p.add_argument(
        "--min-free-mb",
        type=int,
        default=_env("MIN_FREE_MB", 64),
        help="free disk below which writes are withheld (env SIDECAR_MIN_FREE_MB)",
    )
    p.add_argument(
        "--lead-url",
        default=_env("LEAD_URL", ""),
        help="a member's route to the lead's crew address (env SIDECAR_LEAD_URL); "
        "the crew token comes from SIDECAR_CREW_TOKEN",
    )
    crew_listen = _env("CREW_LISTEN", "")
    p.add_argument(
        "--crew-listen",
        type=_host_port,
        default=_host_port(crew_listen) if crew_listen else None,
        metavar="HOST:PORT",
        help="on the lead, also serve crew-only reads here (env SIDECAR_CREW_LISTEN); "
        "requests need the SIDECAR_CREW_TOKEN bearer token",
    )
    p.add_argument(
        "--embedder",
        choices=EMBEDDERS,
        default=_env("EMBEDDER", "auto"),
        help="dense retrieval: auto = in-process MiniLM if installed, else sparse-only "
        "(env SIDECAR_EMBEDDER)",
    )
    p.add_argument(
        "--embed-threads",
        type=int,
        default=_env("EMBED_THREADS", 1),
        help="inference threads for the in-process model (env SIDECAR_EMBED_THREADS)",
    )
    p.add_argument(
        "--ollama-url",
        default=_env("OLLAMA_URL", ""),
        help="with --embedder ollama; default http://127.0.0.1:11434 (env SIDECAR_OLLAMA_URL)",
    )
    p.add_argument(
        "--ollama-model",
        default=_env("OLLAMA_MODEL", ""),
        help="with --embedder ollama; default nomic-embed-text (env SIDECAR_OLLAMA_MODEL)",
    )
    p.add_argument(
        "--agent-id",
        default=_env("AGENT_ID", socket.gethostname()),
        help="recorded on journal events that do not name one (env SIDECAR_AGENT_ID; "
        "default the host name, which is the container's)",
    )
    p.add_argument(
        "--llm-url",
        default=_env("LLM_URL", ""),
        help="an LLM server for consolidating episodes into facts: Ollama "
        "(http://127.0.0.1:11434) or OpenAI-compatible (.../v1); none: off (env SIDECAR_LLM_URL)",
    )
    p.add_argument("--llm-model", default=_env("LLM_MODEL", ""), help="env SIDECAR_LLM_MODEL")
    p.add_argument(
        "--llm-api",
        choices=("ollama", "openai"),
        default=_env("LLM_API", "") or None,
        help="the server's wire format; default openai when the URL ends in /v1, else ollama "
        "(env SIDECAR_LLM_API)",
    )
    p.add_argument(
        "--llm-api-key-env",
        default=_env("LLM_API_KEY_ENV", ""),
        help="the name of the environment variable holding the API key, if one is needed",
    )
    p.add_argument("--llm-timeout", type=float, default=float(_env("LLM_TIMEOUT", "60")))
    for flag, why in STORE_FLAGS:
        env = flag.upper().replace("-", "_")
        p.add_argument(f"--{flag}", default=_env(env, ""), help=f"{why} (env SIDECAR_{env})")
    p.add_argument("--log-level", default=_env("LOG_LEVEL", "INFO"), help="env SIDECAR_LOG_LEVEL")
    p.set_defaults(func=cmd_serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sidecar", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)

    url = _env("URL", f"http://127.0.0.1:{DEFAULT_PORT}")  # every client command's default
    offline_cli.add_parsers(sub)
    notes_cli.add_parsers(sub, url)
    _mcp_parser(sub)
    _context_parser(sub)
    _doctor_parser(sub)
    journal_cli.add_parsers(sub, url)
    learnings_cli.add_parsers(sub, url)
    facts_cli.add_parsers(sub, url)

    p = sub.add_parser("seed-demo", help="create example agent/ and crew/ memory under PATH")
    p.add_argument("path", type=Path)
    p.set_defaults(func=cmd_seed_demo)
    return parser


# -- serve -------------------------------------------------------------------

LISTEN_BACKLOG = 128  # connections the kernel holds while the service starts
PORT_ADVICE = "choose a port with --port (SIDECAR_PORT), or PORT=... with make run"
CREW_PORT_ADVICE = "choose the crew address with --crew-listen (SIDECAR_CREW_LISTEN)"


def _reserve(host: str, port: int, flag: str) -> list[socket.socket]:
    """Bind and listen before anything starts: a taken port fails the start before any
    index file exists, and nothing else can take the port while the indexes load (a
    bound socket that is not listening yet can be shared by any server setting
    SO_REUSEADDR). A connection made meanwhile waits in the backlog and is answered once
    the service is up. SO_REUSEADDR as aiohttp sets it, so a closing socket of an earlier
    run does not count; an address the resolver lists twice is bound once."""
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        ):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
                sock.listen(LISTEN_BACKLOG)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                raise OSError(f"{host}:{port} is in use (another sidecar?): {flag}") from None
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def cmd_serve(args: argparse.Namespace) -> int:
    logs.setup(args.log_level)
    try:
        settings = Settings(
            agent_dir=args.agent_dir.expanduser(),
            crew_dir=args.crew_dir.expanduser(),
            role=args.role,
            host=args.host,
            port=args.port,
            chunk_chars=args.chunk_chars,
            reconcile_interval=args.reconcile_interval,
            allowed_hosts=tuple(h.lower() for h in args.allowed_host),
            caps=Caps(
                args.cap_core,
                args.cap_daily,
                args.cap_topic,
                args.cap_tier,
                args.cap_journal_day,
                args.cap_journal_tier,
                args.cap_learnings,
                args.cap_facts_log,
            ),
            min_free_bytes=args.min_free_mb * 1024 * 1024,
            lead_url=args.lead_url or None,
            crew_listen=args.crew_listen,
            crew_token=os.environ.get("SIDECAR_CREW_TOKEN") or None,
            embedder=args.embedder,
            embed_threads=args.embed_threads,
            ollama_url=args.ollama_url,
            ollama_model=args.ollama_model,
            agent_id=args.agent_id,
            store=args.store,
            agent_store=args.agent_store,
            crew_store=args.crew_store,
            namespace=args.namespace,
            llm_url=args.llm_url,
            llm_model=args.llm_model,
            llm_api=args.llm_api
            or ("openai" if args.llm_url.rstrip("/").endswith("/v1") else "ollama"),
            llm_api_key_env=args.llm_api_key_env,
            llm_timeout=args.llm_timeout,
        )
        asyncio.run(_serve(settings))
    except (ValueError, OSError) as exc:
        log.error("cannot start", extra={"error": str(exc)})
        return 2
    return 0


async def _serve(settings: Settings) -> None:
    """Reserve the ports, start parsing a cold tier, and only then load the daemon: loading
    it takes most of a second on one core, while the parser workers use the others."""
    reserved: list[socket.socket] = []
    pool = None
    try:
        loopback = _reserve(settings.host, settings.port, PORT_ADVICE)
        reserved += loopback
        crew: list[socket.socket] = []
        if settings.crew_listen:
            crew = _reserve(*settings.crew_listen, CREW_PORT_ADVICE)
            reserved += crew
        for tier in settings.prepare_folders():  # once the ports are ours: nothing made before
            hint = f"created an empty memory folder (meant another? check --{tier.name}-dir)"
            log.info(hint, extra={"folder": str(tier.root), "tier": tier.name})
        pool = head_start(settings.sqlite_indexes(), settings.chunk_chars)
        from sidecar import server  # the HTTP stack and every capability: most of a start
    except BaseException:
        for sock in reserved:
            sock.close()
        if pool is not None:
            pool.close()
        raise
    try:
        await server.serve(settings, loopback, crew, pool)
    finally:
        if pool is not None:
            pool.close()  # the daemon's, closed with it; closing twice does nothing


# -- context -----------------------------------------------------------------------


def _context_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("context", help="print the memory block for a system prompt")
    p.add_argument("--url", default=_env("URL", f"http://127.0.0.1:{DEFAULT_PORT}"),
                   help="the local daemon (env SIDECAR_URL)")  # fmt: skip
    p.add_argument(
        "--budget", type=int, default=15_000, help="characters, 1000 to 200000 (default 15000)"
    )
    p.add_argument("--query", help="fill leftover budget with the best hits for this")
    p.add_argument("--user-id", help="the session opener, for the operator model")
    p.add_argument("--workspace-id", help="the session opener's workspace")
    p.add_argument("--json", action="store_true", help="JSON with per-section accounting")
    p.set_defaults(func=cmd_context)


def cmd_context(args: argparse.Namespace) -> int:
    params = {"budget": args.budget, "query": args.query, "user_id": args.user_id,
              "workspace_id": args.workspace_id}  # fmt: skip
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    accept = "application/json" if args.json else "text/plain"
    req = urllib.request.Request(f"{args.url.rstrip('/')}/memory/context?{query}",
                                 headers={"Accept": accept})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            sys.stdout.write(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"sidecar: {exc.code}: {error_detail(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SystemExit(f"sidecar: {unreachable(args.url, getattr(exc, 'reason', exc))}") from None
    return 0


# -- doctor ------------------------------------------------------------------------


def _doctor_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor", help="report retrieval mode, model and pending embeddings; exit 1 if degraded"
    )
    p.add_argument("--url", default=_env("URL", f"http://127.0.0.1:{DEFAULT_PORT}"),
                   help="the local daemon (env SIDECAR_URL)")  # fmt: skip
    p.add_argument("--metrics", action="store_true",
                   help="also list every metric /metrics serves, with its meaning")  # fmt: skip
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Exit 0 only when the daemon is healthy and hybrid; 1 when anything is degraded."""
    base = args.url.rstrip("/")
    try:
        health = get_json(f"{base}/healthz")
    except urllib.error.HTTPError as exc:  # something answered, but refused us
        print(f"sidecar at {base}: answered HTTP {exc.code}: {error_detail(exc)}")
        return 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"sidecar: {unreachable(base, getattr(exc, 'reason', exc))}")
        return 1
    retrieval = health.get("retrieval", "sparse-only")
    embedder = health.get("embedder") or {}
    print(f"sidecar at {base}: {health.get('status')} (role {health.get('role')})")
    print(f"retrieval: {retrieval}")
    print(f"model: {embedder.get('model') or 'none'}")
    print(f"episodic: {health.get('episodic', 'sparse-only')}")
    consolidation = health.get("consolidation") or {}
    state = consolidation.get("state", "off")
    detail = consolidation.get("model") or consolidation.get("reason") or ""
    print(f"consolidation (episodes into facts): {state}" + (f", {detail}" if detail else ""))
    for tier in health.get("tiers", {}):
        try:
            status = get_json(f"{base}/memory/status?scope={tier}")
        except (urllib.error.URLError, OSError, ValueError):
            continue
        print(
            f"{tier}: {status.get('total_chunks')} chunks, "
            f"{status.get('pending', 0)} waiting for embeddings"
        )
    for reason in health.get("reasons", []):
        print(f"degraded: {reason}")
    print(f"metrics: Prometheus text format at {base}/metrics (loopback only; scrape it from "
          "inside the container, e.g. an agent or node exporter sidecar)")  # fmt: skip
    if args.metrics:
        _list_metrics(base)
    if retrieval != "hybrid":
        why = embedder.get("error") or embedder.get("reason")
        if why:
            print(f"why sparse-only: {why}")
        print(HOW_TO_ENABLE)
    return 0 if health.get("status") == "ok" and retrieval == "hybrid" else 1


def _list_metrics(base: str) -> None:
    """Every metric family the daemon serves, with its HELP line: read live, so the list
    cannot drift from what a scrape gets."""
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
            text = resp.read().decode("utf-8")
    except (urllib.error.URLError, OSError) as exc:
        print(f"metrics: unreadable ({getattr(exc, 'reason', exc)})")
        return
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        name = family.name + ("_total" if family.type == "counter" else "")
        print(f"  {name} ({family.type}): {family.documentation}")


# -- mcp -------------------------------------------------------------------------


def _mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve the memory tools over MCP on stdin/stdout")
    p.add_argument(
        "--url",
        default=_env("URL", f"http://127.0.0.1:{DEFAULT_PORT}"),
        help="the local daemon (env SIDECAR_URL)",
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=float(_env("MCP_POLL_INTERVAL", 1.0)),
        help="seconds between daemon health checks (env SIDECAR_MCP_POLL_INTERVAL)",
    )
    p.add_argument("--log-level", default=_env("LOG_LEVEL", "INFO"), help="env SIDECAR_LOG_LEVEL")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Logs go to stderr: stdout is the protocol."""
    logs.setup(args.log_level)
    try:
        from sidecar.api.mcp import stdio as mcp_stdio  # the MCP SDK loads only for this command

        asyncio.run(mcp_stdio.serve_stdio(args.url, args.poll_interval))
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_seed_demo(args: argparse.Namespace) -> int:
    agent, crew = demo.seed(args.path)
    print(f"demo memory in {agent} and {crew}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep the interpreter's exit
        # flush from failing on the same closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
