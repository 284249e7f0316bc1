"""``make conformance``: the official MCP conformance suite against a live daemon.

Starts ``sidecar serve`` on a free port over temporary tier folders (a few memory
files in them, so listings are not empty), runs each applicable server scenario of
``@modelcontextprotocol/conformance`` through ``npx`` against ``/mcp``, and prints
one line per scenario and a total. Without ``npx`` it says so and exits 0: the
suite is a Node package, and the rest of the project needs no Node.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.sidecar_process import SidecarProcess

PACKAGE = "@modelcontextprotocol/conformance@0.1.13"
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "logging-set-level",
    "completion-complete",
    "resources-list",
    "prompts-list",
]
# Not run: the other scenarios call fixture tools, resources and prompts the suite names
# (test_simple_text, test://static-text, test_tool_with_progress, ...) that a memory
# server does not have; progress is covered by tests/test_mcp_resources.py instead.
TIMEOUT = 180
_SUMMARY = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def seed(agent: Path, crew: Path) -> None:
    (agent / "daily").mkdir(parents=True)
    (crew / "topics").mkdir(parents=True)
    (agent / "AGENT.md").write_text("- The staging cluster is in eu-west-2.\n")
    (agent / "daily" / "2026-11-24.md").write_text("- Deployed the billing service.\n")
    (crew / "CREW.md").write_text("- We use PostgreSQL 16.\n")
    (crew / "topics" / "billing.md").write_text("- Invoices are sent on the 1st.\n")


def run(npx: str, url: str, scenario: str) -> tuple[bool, str]:
    proc = subprocess.run(
        [npx, "-y", PACKAGE, "server", "--url", url, "--scenario", scenario],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    output = _ANSI.sub("", proc.stdout + proc.stderr)
    found = _SUMMARY.search(output)
    if found is None:
        return False, f"no summary (exit {proc.returncode}): {output.strip()[-400:]}"
    passed, total, failed, warnings = map(int, found.groups())
    ok = proc.returncode == 0 and failed == 0 and passed == total
    detail = f"{passed}/{total} checks passed, {failed} failed, {warnings} warnings"
    if not ok:
        detail += "\n" + "\n".join(line for line in output.splitlines() if "FAIL" in line)
    return ok, detail


def main() -> int:
    npx = shutil.which("npx")
    if npx is None:
        print("conformance: skipped, npx not found (install Node.js 20+ to run the MCP suite)")
        return 0
    with tempfile.TemporaryDirectory(prefix="sidecar-conformance-") as tmp:
        agent, crew = Path(tmp) / "agent", Path(tmp) / "crew"
        seed(agent, crew)
        daemon = SidecarProcess(agent, crew, env={"SIDECAR_EMBEDDER": "none"}).start()
        try:
            url = f"{daemon.url}/mcp"
            print(f"conformance: {PACKAGE} against {url}")
            results = [(name, *run(npx, url, name)) for name in SCENARIOS]
        finally:
            daemon.kill()
    for name, ok, detail in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {detail}")
    failed = [name for name, ok, _ in results if not ok]
    print(f"conformance: {len(results) - len(failed)}/{len(results)} scenarios passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
