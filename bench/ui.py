"""ui: first paint of the memory inspector (``/ui``) on loopback in headless Chromium, and
the bytes of its own assets.

Each load is a fresh page in one browser (the HTTP cache disabled), timed by the
browser itself (``first-contentful-paint``). The baseline is a bare one-line HTML page
served on loopback by the standard library and loaded the same way in the same run, so
the ratio says what the inspector's modules, styles and first render add.
"""

from __future__ import annotations

import statistics
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.report import BenchResult, Figure, at_most, progress
from sidecar import demo
from sidecar.ui.routes import load

NAME = "ui"
DESCRIPTION = "memory inspector: first paint of /ui in headless Chromium, asset bytes"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
PAINT_JS = """() => new Promise((done) => {
    const seen = performance.getEntriesByName("first-contentful-paint");
    if (seen.length) return done(seen[0].startTime);
    new PerformanceObserver((list) => {
        const fcp = list.getEntriesByName("first-contentful-paint");
        if (fcp.length) done(fcp[0].startTime);
    }).observe({type: "paint", buffered: true});
})"""
BARE = b"<!doctype html><title>bare</title><p>bare page</p>"


class _Bare(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(BARE)))
        self.end_headers()
        self.wfile.write(BARE)

    def log_message(self, *args: Any) -> None:
        pass


def paints(context: Any, url: str, loads: int) -> list[float]:
    """First-contentful-paint of ``loads`` fresh loads of ``url``, in ms."""
    times = []
    for _ in range(loads):
        page = context.new_page()
        page.route("**/*", lambda route: route.continue_())  # disables the HTTP cache
        page.goto(url)
        times.append(float(page.evaluate(PAINT_JS)))
        page.close()
    return times


def run(ctx: Context) -> BenchResult:
    result = BenchResult(NAME, "memory inspector: first paint of /ui, asset bytes")
    if not Path(CHROMIUM).exists():
        result.skipped = f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
        return result
    from playwright.sync_api import sync_playwright

    loads = 5 if ctx.quick else 20
    bare = ThreadingHTTPServer(("127.0.0.1", 0), _Bare)
    threading.Thread(target=bare.serve_forever, daemon=True).start()
    try:
        with ctx.tempdir(NAME) as tmp:
            agent, crew = demo.seed(tmp / "demo")
            with ctx.daemon(agent, tmp, crew) as daemon, sync_playwright() as pw:
                browser = pw.chromium.launch_persistent_context(
                    tmp / "profile", executable_path=CHROMIUM, args=ARGS, headless=True
                )
                base = f"http://127.0.0.1:{bare.server_port}/"
                paints(browser, base, 2)  # the browser's own first start, not counted
                progress(NAME, f"{loads} loads of a bare page and of /ui")
                bare_ms = statistics.median(paints(browser, base, loads))
                ui_ms = paints(browser, f"http://127.0.0.1:{daemon.port}/ui", loads)
                browser.close()
    finally:
        bare.shutdown()
        bare.server_close()
    median = statistics.median(ui_ms)
    size = sum(len(body) for body in load().values())
    result.figures = [
        Figure("first contentful paint of /ui, median", median, "ms", 1, at_most(300, "<= 300 ms")),
        Figure("same, slowest load", max(ui_ms), "ms", 1),
        Figure("bare one-line page, median", bare_ms, "ms", 1),
        Figure("/ui first paint / bare page", median / bare_ms, "x", 2),
        Figure("the page's own assets", size / 1000, "KB", 1, at_most(200, "<= 200 KB")),
    ]
    result.notes.append(f"{loads} fresh pages each, HTTP cache bypassed; KB = 1000 bytes")
    result.details = {"ui_ms": ui_ms, "bare_ms": bare_ms, "asset_bytes": size}
    return result
