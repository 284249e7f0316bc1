"""The documentation's example answers have the same shape as a live daemon's.

Every JSON block in README.md or a markdown file under docs/ marked with
``<!-- example: METHOD PATH [JSON body] -->`` just above it is the answer to that request.
A real ``sidecar serve`` (hybrid, over the demo memory) gets the same request, and the two
answers must have exactly the same keys at every level; values may differ, and a list is
compared by its first element. The pages are read when the test runs, so an edit to
either side is caught.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sidecar import demo
from tests.sidecar_process import SidecarProcess, wait_for

ROOT = Path(__file__).resolve().parent.parent


def pages() -> list[Path]:
    """README.md and every markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


EXAMPLE = re.compile(
    r"^<!-- example: (?P<method>GET|POST) (?P<path>\S+)(?: (?P<body>\{[^\n]*\}))? -->\n"
    r"```json\n(?P<answer>.*?)\n```",
    re.MULTILINE | re.DOTALL,
)
# The endpoints whose documented answers must stay covered by a marked example.
COVERED = {
    "/healthz", "/memory/status", "/memory/search", "/memory/write", "/memory/reindex",
    "/memory/journal", "/memory/recall", "/memory/health", "/memory/learnings/search",
}  # fmt: skip
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


@dataclass(frozen=True, slots=True)
class Example:
    page: str
    line: int
    method: str
    path: str
    body: dict[str, Any] | None
    answer: Any

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.method} {self.path}"


def readme_examples(text: str, page: str = "README.md") -> list[Example]:
    examples = []
    for m in EXAMPLE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        try:
            body = json.loads(m["body"]) if m["body"] else None
            answer = json.loads(m["answer"])
        except ValueError as exc:
            raise AssertionError(f"{page}:{line}: example is not valid JSON: {exc}") from None
        examples.append(Example(page, line, m["method"], m["path"], body, answer))
    return examples


def key_mismatches(documented: Any, live: Any, where: str = "$") -> list[str]:
    """Every place where the two answers differ in shape (keys or container type)."""
    if isinstance(documented, dict):
        if not isinstance(live, dict):
            return [f"{where}: README shows an object, live is {type(live).__name__}"]
        out = []
        if extra := sorted(documented.keys() - live.keys()):
            out.append(f"{where}: README has keys the live answer lacks: {extra}")
        if missing := sorted(live.keys() - documented.keys()):
            out.append(f"{where}: live answer has keys the README lacks: {missing}")
        for key in sorted(documented.keys() & live.keys()):
            out += key_mismatches(documented[key], live[key], f"{where}.{key}")
        return out
    if isinstance(documented, list):
        if not isinstance(live, list):
            return [f"{where}: README shows a list, live is {type(live).__name__}"]
        if documented and not live:
            return [f"{where}: README shows an element, the live list is empty"]
        if documented and live:
            return key_mismatches(documented[0], live[0], f"{where}[0]")
        return []
    if isinstance(live, dict | list):
        return [f"{where}: README shows a scalar, live is {type(live).__name__}"]
    return []


def test_key_mismatches_sees_every_level() -> None:
    live = {"a": 1, "b": {"c": [{"d": 1, "e": 2}]}}
    assert key_mismatches({"a": 0, "b": {"c": [{"d": 0, "e": 0}]}}, live) == []
    assert key_mismatches({"a": 0, "b": {"c": [{"d": 0}]}}, live) == [
        "$.b.c[0]: live answer has keys the README lacks: ['e']"
    ]
    assert key_mismatches({"a": 0, "x": 1, "b": {"c": []}}, live) == [
        "$: README has keys the live answer lacks: ['x']"
    ]
    assert key_mismatches({"a": {}, "b": {"c": [{}]}}, {"a": [], "b": {"c": []}}) == [
        "$.a: README shows an object, live is list",
        "$.b.c: README shows an element, the live list is empty",
    ]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SidecarProcess]:
    """A hybrid lead over the demo memory, with every chunk embedded."""
    agent, crew = demo.seed(tmp_path_factory.mktemp("readme"))
    proc = SidecarProcess(agent, crew, extra=["--embedder", "minilm"])
    try:
        yield proc.start(timeout=60)
    finally:
        proc.kill()


def settle(daemon: SidecarProcess) -> None:
    """Wait until the daemon is healthy, idle and has every chunk embedded, as the
    README's examples show it (a reindex or a write leaves work behind for a moment)."""

    def settled() -> bool:
        health = daemon.get("/healthz")
        idle = all(t.get("queue_depth") == 0 for t in health["tiers"].values())
        return bool(health["status"] == "ok" and idle and health["embedder"].get("pending") == 0)

    wait_for(settled, timeout=60, what="a healthy, idle daemon with every chunk embedded")


def test_readme_example_answers_match_the_live_daemon(daemon: SidecarProcess) -> None:
    examples = [
        e
        for page in pages()
        for e in readme_examples(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))
    ]
    uncovered = COVERED - {e.path.split("?")[0] for e in examples}
    assert not uncovered, f"no marked README example for {sorted(uncovered)}"
    problems = []
    for example in examples:
        settle(daemon)
        status, live = daemon.call(example.method, example.path, example.body, JSON_HEADERS)
        if status >= 300:
            problems.append(f"{example}: answered {status} {live}")
            continue
        problems += [f"{example}: {m}" for m in key_mismatches(example.answer, live)]
    assert not problems, "documented examples differ from live answers:\n" + "\n".join(problems)
