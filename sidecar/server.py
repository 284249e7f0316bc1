"""The daemon: the memory service and its HTTP sites, run until a signal stops them.

Imported by ``sidecar serve`` only once its sockets are bound and a cold build's
parsing has begun (``sidecar.stores.head_start``): this module brings in the HTTP
stack, MCP and every capability, which is most of a start.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket

from aiohttp import web

from sidecar.api.crew import create_crew_app
from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.index.parse_pool import ParsePool
from sidecar.service import MemoryService
from sidecar.web import JsonErrorRunner

log = logging.getLogger("sidecar")
MAX_REQUEST_LINE = 64 * 1024  # aiohttp's default is 8 KiB


async def serve(
    settings: Settings,
    loopback: list[socket.socket],
    crew: list[socket.socket],
    pool: ParsePool | None = None,
) -> None:
    """Serve on the sockets ``sidecar serve`` reserved (``crew`` for the crew API, if
    any) until SIGTERM/SIGINT; then stop taking requests and drain the reindex queue.
    ``pool``: parser workers already parsing a cold tier, for its build to take over."""
    reserved = [*loopback, *crew]
    try:
        service = MemoryService(settings, pool)
        await service.start()
    except BaseException:
        for sock in reserved:
            sock.close()
        raise
    sites = [(create_app(service), loopback)]
    if crew:
        sites.append((create_crew_app(service, settings.crew_token or ""), crew))
    runners: list[JsonErrorRunner] = []
    try:
        for app, socks in sites:
            # A request line long enough for the longest query the stdio proxy sends in a
            # URL (GET /memory/context: 4,096 characters, percent-encoded UTF-8).
            runner = JsonErrorRunner(
                app, access_log=None, shutdown_timeout=5, max_line_size=MAX_REQUEST_LINE
            )
            runners.append(runner)
            await runner.setup()
            for sock in socks:
                await web.SockSite(runner, sock).start()
                host, port = sock.getsockname()[:2]
                host = f"[{host}]" if sock.family == socket.AF_INET6 else host
                log.info("listening", extra={"url": f"http://{host}:{port}"})
    except OSError:
        for runner in runners:
            await runner.cleanup()
        for sock in reserved:
            sock.close()  # those no site took yet; closing one twice does nothing
        await service.stop()
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down: draining the reindex queue")
    for runner in runners:
        await runner.cleanup()
    await service.stop()
