"""``sidecar serve``: the daemon. Its flags are the settings' declarations
(``sidecar.config``), each with a ``SIDECAR_*`` variable, made into a parser here."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import socket

from sidecar import config, logs
from sidecar.config import Settings
from sidecar.retrieval.embedders.factory import share_one_malloc_arena
from sidecar.stores.head_start import head_start

log = logging.getLogger("sidecar")

LISTEN_BACKLOG = 128  # connections the kernel holds while the service starts
PORT_ADVICE = "choose a port with --port (SIDECAR_PORT), or PORT=... with make run"
CREW_PORT_ADVICE = "choose the crew address with --crew-listen (SIDECAR_CREW_LISTEN)"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the memory daemon")
    for flag in config.flags():
        if flag.option:  # a secret is only ever read from its variable
            p.add_argument(
                f"--{flag.option}",
                action="append" if flag.repeat else "store",
                type=flag.type,
                choices=flag.choices,
                default=flag.initial(),
                metavar=flag.metavar,
                help=flag.help_text.replace("%", "%%"),  # argparse formats help with %
            )
    log_level_option(p)
    p.set_defaults(func=cmd_serve)


def log_level_option(p: argparse.ArgumentParser) -> None:
    """``--log-level``, for each command that runs a server: its logs are on stderr."""
    p.add_argument("--log-level", default=os.environ.get("SIDECAR_LOG_LEVEL", "INFO"),
                   help="env SIDECAR_LOG_LEVEL")  # fmt: skip


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


def cmd_serve(args: argparse.Namespace) -> int:
    logs.setup(args.log_level)
    try:
        settings = config.from_flags(vars(args))
        share_one_malloc_arena(settings.embedder)  # before any thread starts
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
