"""The documentation holds together: links resolve, every page is reachable from the
README, the generated pages are what their generator makes of today's sources, and the
README stays short with the first tasks near the top.

(The JSON examples in the pages are checked against a live daemon in test_readme.py.)
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", re.MULTILINE)
FIRST_TASK = re.compile(r"^\*\*(\d)\. ", re.MULTILINE)
README_MAX_LINES = 300
ONE_SCREEN_SCROLLED = 100  # lines: the top screen and one more of a laptop's terminal


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: markup and punctuation dropped, lower case,
    spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a page; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(FENCE.sub("", text)):
        base = slug(m[1])
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(text: str) -> list[str]:
    """Every link target of a page, outside code blocks and code spans."""
    return LINK.findall(CODE_SPAN.sub("", FENCE.sub("", text)))


def broken_links(root: Path) -> list[str]:
    """Each relative link under ``root`` whose file is missing or whose ``#anchor`` is not a
    heading of the page it names, as ``page: target``."""
    found = []
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        for target in links(text):
            if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if re.search(r"\s", target):
                found.append(f"{where} (a space or line break inside the link)")
            elif not dest.exists():
                found.append(f"{where} (no such file)")
            elif (
                anchor
                and dest.suffix == ".md"
                and anchor not in anchors(dest.read_text(encoding="utf-8"))
            ):
                found.append(f"{where} (no such heading)")
    return found


def reachable(root: Path) -> set[Path]:
    """The markdown pages a reader reaches from the README by following links."""
    seen, todo = set(), [root / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or not page.exists():
            continue
        seen.add(page)
        for target in links(page.read_text(encoding="utf-8")):
            path = target.partition("#")[0]
            if path.endswith(".md") and not re.match(r"[a-z][a-z+.-]*:", path):
                todo.append((page.parent / path).resolve())
    return seen


def test_every_relative_link_in_readme_and_docs_resolves() -> None:
    assert broken_links(ROOT) == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    unreached = set(pages()) - reachable(ROOT)
    assert not unreached, f"not linked from the README or a page it reaches: {sorted(unreached)}"


def test_the_link_checks_find_a_missing_file_a_missing_heading_and_an_orphan(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# Top\n\n[ok](docs/a.md#the-first-part-x) [gone](docs/gone.md) [bad](docs/a.md#nope)\n"
        "[wrapped](docs/a.md#the-\nfirst-part-x)\n"
        "`[in code](docs/gone.md)`\n\n```\n[fenced](docs/gone.md)\n```\n[self](#top)\n"
    )
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## The first part: `x`?\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    assert broken_links(tmp_path) == [
        "README.md: docs/gone.md (no such file)",
        "README.md: docs/a.md#nope (no such heading)",
        "README.md: docs/a.md#the-\nfirst-part-x (a space or line break inside the link)",
    ]
    assert set(pages(tmp_path)) - reachable(tmp_path) == {tmp_path / "docs" / "orphan.md"}


def test_slugs_follow_github() -> None:
    assert slug("Without the daemon: `sidecar context --offline`") == (
        "without-the-daemon-sidecar-context---offline"
    )
    assert (
        slug("`GET /memory/status?scope=agent|crew|both`") == "get-memorystatusscopeagentcrewboth"
    )
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_generated_pages_are_what_the_generator_makes_of_their_sources() -> None:
    """The API reference (openapi.yaml), the settings tables (config.py) and the
    performance page (a bench run's JSON) are never edited by hand: `make docs`."""
    stale = [
        str(path.relative_to(ROOT))
        for path, text in load_generator().expected().items()
        if path.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"out of date, run `make docs`: {stale}"


def test_the_api_reference_lists_every_route_of_the_contract() -> None:
    import yaml

    spec = yaml.safe_load((ROOT / "sidecar" / "api" / "openapi.yaml").read_text())
    reference = (ROOT / "docs" / "api-reference.md").read_text()
    documented = set(re.findall(r"^### `(GET|POST|PUT|PATCH|DELETE) (\S+)`$", reference, re.M))
    methods = {"get", "post", "put", "patch", "delete"}
    served = {(m.upper(), p) for p, item in spec["paths"].items() for m in item if m in methods}
    assert documented == served


def test_the_performance_page_comes_from_a_dated_run_on_a_named_machine() -> None:
    run = json.loads((ROOT / "docs" / "performance.json").read_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", run["finished_at"])
    assert {"platform", "cpus", "python", "sqlite"} <= run["machine"].keys()
    figures = [f for r in run["results"] for f in r["figures"] if f["value"] is not None]
    assert figures, "the run measured nothing"
    page = (ROOT / "docs" / "performance.md").read_text()
    assert run["finished_at"] in page and run["machine"]["platform"] in page


def test_the_readme_is_short_and_its_first_tasks_are_near_the_top() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count("\n") <= README_MAX_LINES
    tasks = {m[1]: text.count("\n", 0, m.start()) + 1 for m in FIRST_TASK.finditer(text)}
    assert sorted(tasks) == ["1", "2", "3", "4", "5"]
    late = {n: line for n, line in tasks.items() if line > ONE_SCREEN_SCROLLED}
    assert not late, f"first tasks below line {ONE_SCREEN_SCROLLED}: {late}"


@pytest.mark.parametrize("name", ["agent-dir", "crew-dir", "role", "port", "embedder"])
def test_the_readme_settings_table_matches_the_declarations(name: str) -> None:
    """Spot-check the generated table against config.py itself, not only the generator."""
    from sidecar import config

    flag = next(f for f in config.flags() if f.option == name)
    row = next(line for line in README.read_text().splitlines() if f"`--{name}`" in line)
    assert f"`SIDECAR_{flag.env}`" in row
    assert f"`{flag.default}`" in row
