"""POST /memory/write and GET /memory/read over a real server: allowed files, caps, roles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Caps, Settings
from sidecar.notes.files import today_utc
from sidecar.service import MemoryService
from tests.conftest import eventually


async def write(client: TestClient, status: int = 201, **body: Any) -> dict[str, Any]:
    resp = await client.post("/memory/write", json=body)
    payload = await resp.json()
    assert resp.status == status, payload
    return payload


async def search_files(client: TestClient, query: str, scope: str = "agent") -> list[str]:
    resp = await client.post("/memory/search", json={"query": query, "scope": scope})
    return [r["file"] for r in (await resp.json())["results"]]


async def test_write_then_search_finds_it_at_once(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    body = await write(client, scope="agent", file="AGENT.md", content="## Pref\nLikes oolong.")
    assert body == {
        "file": "AGENT.md",
        "scope": "agent",
        "bytes_written": len("## Pref\nLikes oolong.\n"),
        "usage": {"bytes": 22, "cap": 4000, "pct": 0.6},
        "indexed": True,
    }
    assert await search_files(client, "oolong") == ["AGENT.md"]
    assert (tier_dirs[0] / "AGENT.md").read_text() == "## Pref\nLikes oolong.\n"


async def test_append_adds_lines_and_replace_overwrites(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    agent = tier_dirs[0]
    (agent / "AGENT.md").write_text("no trailing newline")
    await write(client, file="AGENT.md", content="second line")
    assert (agent / "AGENT.md").read_text() == "no trailing newline\nsecond line\n"
    await write(client, file="AGENT.md", content="# Fresh\nonly this\n", mode="replace")
    assert (agent / "AGENT.md").read_text() == "# Fresh\nonly this\n"
    assert await search_files(client, "trailing") == []


async def test_daily_today_is_the_one_alias_for_today(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    expected = f"daily/{today_utc().isoformat()}.md"
    assert (await write(client, file="daily/today", content="- one"))["file"] == expected
    for loose in ("", "daily", "daily/", "daily/.md", "AGENT.md\n", " AGENT.md", "AGENT.md ",
                  "daily/to\x1bday", "AGENT\u0085.md"):  # fmt: skip
        body = await write(client, 400, file=loose, content="- two")
        assert body["error"] == "file_not_allowed", loose
        assert "allowed: AGENT.md, daily/YYYY-MM-DD.md (or daily/today)" in body["detail"]
    assert (tier_dirs[0] / expected).read_text() == "- one\n"
    assert sorted(p.name for p in tier_dirs[0].rglob("*.md")) == [expected.split("/")[1]]


async def test_crew_files_on_the_lead(client: TestClient, tier_dirs: tuple[Path, Path]) -> None:
    for name in (
        "CREW.md",
        "daily/2026-11-21.md",
        "topics/deploy-k8s.md",
    ):
        await write(client, scope="crew", file=name, content=f"note about {name} saffron")
        assert (tier_dirs[1] / name).is_file()
    assert len(await search_files(client, "saffron", "crew")) == 3


@pytest.mark.parametrize(
    ("scope", "file"),
    [
        ("agent", "notes.md"),
        ("agent", "CREW.md"),
        ("agent", "topics/x.md"),
        ("agent", "daily/2026-02-30.md"),
        ("agent", "daily/yesterday.md"),
        ("agent", "daily/2026-11-21.txt"),
        ("crew", "AGENT.md"),
        ("crew", "topics/Has Space.md"),
        ("crew", "topics/nested/x.md"),
        ("crew", "users/.hidden.md"),
        ("crew", "index.sqlite"),
    ],
)
async def test_files_outside_the_layout_are_400(
    client: TestClient, tier_dirs: tuple[Path, Path], scope: str, file: str
) -> None:
    body = await write(client, 400, scope=scope, file=file, content="x")
    assert body["error"] == "file_not_allowed"
    assert "allowed:" in body["detail"] or "real date" in body["detail"]
    assert not list(tier_dirs[0].rglob("*.md")) and not list(tier_dirs[1].rglob("*.md"))


async def test_a_daily_log_far_in_the_future_is_refused(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    """A year typed wrong (9999, 2062) made a daily log nobody would look for; tomorrow is
    allowed, since somewhere it is tomorrow already."""
    today = datetime.now(UTC).date()
    body = await write(client, 400, file="daily/9999-12-31.md", content="- x")
    assert body["error"] == "file_not_allowed" and "daily/today" in body["detail"]
    tomorrow = (today + timedelta(days=1)).isoformat()
    await write(client, 201, file=f"daily/{tomorrow}.md", content="- early")
    assert [p.name for p in (tier_dirs[0] / "daily").iterdir()] == [f"{tomorrow}.md"]


@pytest.mark.parametrize(
    "file", ["../AGENT.md", "/etc/passwd", "daily/../../x.md", "daily\\x.md", "AGENT.md\x00"]
)
async def test_path_attacks_are_403_and_create_nothing(
    client: TestClient, tier_dirs: tuple[Path, Path], file: str
) -> None:
    body = await write(client, 403, scope="agent", file=file, content="pwned")
    assert body["error"] == "forbidden_path"
    assert not any(p.is_file() for p in tier_dirs[0].parent.rglob("*")
                   if ".sqlite" not in p.name)  # the derived indexes only  # fmt: skip


async def test_symlinked_leaf_and_parent_are_403(
    client: TestClient, tier_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    agent = tier_dirs[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENT.md").write_text("outside stays\n")
    (agent / "AGENT.md").symlink_to(outside / "AGENT.md")
    body = await write(client, 403, file="AGENT.md", content="x")
    assert body["error"] == "forbidden_path"
    (agent / "daily").rmdir()
    (agent / "daily").symlink_to(outside)
    body = await write(client, 403, file="daily/2026-11-21.md", content="x")
    assert body["error"] == "forbidden_path"
    assert sorted(p.name for p in outside.iterdir()) == ["AGENT.md"]
    assert (outside / "AGENT.md").read_text() == "outside stays\n"
    resp = await client.get("/memory/read", params={"file": "AGENT.md"})
    assert resp.status == 403


async def test_over_cap_is_422_with_current_entries(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    entries = "# Memory\n" + "".join(f"- fact {i}: {'x' * 60}\n" for i in range(55))
    (tier_dirs[0] / "AGENT.md").write_text(entries)
    body = await write(client, 422, file="AGENT.md", content="- one more " + "y" * 200)
    assert body["error"] == "cap_exceeded"
    assert body["cap"] == 4000
    assert body["projected"] > 4000
    assert body["current_entries"] == entries
    assert body["usage"] == f"{len(entries)} of 4000 bytes, {100 * len(entries) // 4000}%"
    assert "mode=replace" in body["detail"]
    assert (tier_dirs[0] / "AGENT.md").read_text() == entries
    # Replace with a consolidated version succeeds in the same turn.
    await write(client, file="AGENT.md", content="# Memory\n- facts 0-54 merged\n", mode="replace")


async def test_replace_over_cap_is_refused_too(client: TestClient) -> None:
    body = await write(client, 422, file="AGENT.md", content="z" * 4001, mode="replace")
    assert body["projected"] == 4002  # the trailing newline counts


async def test_crossing_80_percent_warns_with_entries(client: TestClient) -> None:
    body = await write(client, file="AGENT.md", content="w" * 3300)
    assert body["usage"]["pct"] >= 80
    assert "Consolidate" in body["warning"]
    assert body["current_entries"] == "w" * 3300 + "\n"
    assert body["usage_text"] == "3301 of 4000 bytes, 82%"


async def test_caps_are_utf8_bytes(settings: Settings) -> None:
    svc = MemoryService(Settings(**{**_fields(settings), "caps": Caps(core=10)}))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            body = await write(c, 422, file="AGENT.md", content="ééééé")  # 10 bytes + newline
            assert body["projected"] == 11
            await write(c, file="AGENT.md", content="éééé")
    finally:
        await svc.stop()


async def test_tier_cap(settings: Settings, tier_dirs: tuple[Path, Path]) -> None:
    (tier_dirs[0] / "daily" / "2026-01-01.md").write_text("a" * 900)
    svc = MemoryService(Settings(**{**_fields(settings), "caps": Caps(tier=1000)}))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            body = await write(c, 422, file="AGENT.md", content="b" * 200)
            assert "agent tier" in body["detail"]
            assert body["cap"] == 1000
            # The usage is the tier's, and the advice says where the bytes are: consolidating
            # AGENT.md alone cannot make room (it once said "0 of 1000 bytes, 0%").
            assert body["usage"].startswith("the agent tier holds ")
            assert int(body["usage"].split()[4]) >= 900
            assert "GET /memory/files" in body["detail"]
    finally:
        await svc.stop()


async def test_member_cannot_write_crew(settings: Settings) -> None:
    svc = MemoryService(Settings(**{**_fields(settings), "role": "agent"}))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as c:
            body = await write(c, 403, scope="crew", file="CREW.md", content="x")
            assert body["error"] == "crew_read_only"
            assert "crew memory is written by the crew lead" in body["detail"]
            assert not (settings.crew_dir / "CREW.md").exists()
            # ...but reads the shared folder directly.
            (settings.crew_dir / "CREW.md").write_text("# Crew\nshared rule\n")
            resp = await c.get("/memory/read", params={"scope": "crew", "file": "CREW.md"})
            assert (await resp.json())["content"] == "# Crew\nshared rule"
    finally:
        await svc.stop()


BAD_WRITES: list[tuple[dict[str, Any], int, str]] = [
    ({"file": "AGENT.md", "content": "x", "mode": "prepend"}, 400, "bad_mode"),
    ({"file": "AGENT.md", "content": 5}, 400, "bad_content"),
    ({"file": "AGENT.md"}, 400, "bad_content"),
    ({"file": "AGENT.md", "content": "   "}, 400, "bad_content"),
    ({"file": "AGENT.md", "content": "a\x00b"}, 400, "bad_content"),
    ({"file": 7, "content": "x"}, 400, "bad_file"),
    ({"scope": "both", "file": "AGENT.md", "content": "x"}, 400, "bad_scope"),
    ({"file": "AGENT.md", "content": "x", "extra": 1}, 400, "unknown_field"),
]


@pytest.mark.parametrize(("body", "status", "error"), BAD_WRITES)
async def test_bad_write_input(
    client: TestClient, tier_dirs: tuple[Path, Path], body: dict[str, Any], status: int, error: str
) -> None:
    payload = await write(client, status, **body)
    assert payload["error"] == error
    assert not (tier_dirs[0] / "AGENT.md").exists()


async def test_oversized_write_is_413_and_writes_nothing(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    resp = await client.post(
        "/memory/write", json={"file": "daily/today", "content": "x" * (1024 * 1024)}
    )
    assert resp.status == 413
    assert not list((tier_dirs[0] / "daily").iterdir())


async def test_read_ranges_and_missing_file(client: TestClient) -> None:
    await write(client, file="AGENT.md", content="l1\nl2\nl3\nl4")
    resp = await client.get("/memory/read", params={"file": "AGENT.md", "start_line": "2",
                                                    "end_line": "3"})  # fmt: skip
    body = await resp.json()
    assert body == {
        "file": "AGENT.md", "scope": "agent", "content": "l2\nl3", "bytes": 5,
        "file_bytes": 12, "start_line": 2, "end_line": 3, "total_lines": 4,
    }  # fmt: skip
    resp = await client.get("/memory/read", params={"file": "AGENT.md", "start_line": "3",
                                                    "end_line": "99"})  # fmt: skip
    assert (await resp.json())["content"] == "l3\nl4"
    for params in ({"start_line": "0"}, {"start_line": "3", "end_line": "2"},
                   {"start_line": "x"}):  # fmt: skip
        resp = await client.get("/memory/read", params={"file": "AGENT.md", **params})
        assert resp.status == 400
        assert (await resp.json())["error"] == "bad_range"
    resp = await client.get("/memory/read", params={"file": "daily/2020-01-01.md"})
    assert resp.status == 404
    assert "does not exist yet" in (await resp.json())["detail"]
    for route in ("/memory/read", "/memory/files/read"):
        resp = await client.get(route, params={"scope": "agent"})
        body = await resp.json()
        assert (resp.status, body["error"]) == (400, "missing_file"), body
        assert "'file' parameter is required" in body["detail"]


async def test_every_note_search_finds_can_be_read_but_not_written(
    client: TestClient, tier_dirs: tuple[Path, Path]
) -> None:
    """A person's own note outside the layout is indexed, so a hit on it must be readable
    (the memory block tells the model to read hits' lines); writes keep to the layout."""
    (tier_dirs[0] / "notes").mkdir()
    (tier_dirs[0] / "notes" / "misc.md").write_text("# Misc\n- The office wifi rotates.\n")

    async def found() -> bool:
        return await search_files(client, "office wifi") == ["notes/misc.md"]

    await eventually(found, "the hand-made note to be indexed")
    resp = await client.get("/memory/read", params={"file": "notes/misc.md", "start_line": "2"})
    assert resp.status == 200
    assert (await resp.json())["content"] == "- The office wifi rotates."
    body = await write(client, 400, file="notes/misc.md", content="- x")
    assert body["error"] == "file_not_allowed"
    huge = tier_dirs[0] / "notes" / "export.md"
    with huge.open("wb") as fh:  # sparse: refused on its size before a byte is read
        fh.truncate(17 * 1024 * 1024)
    (tier_dirs[0] / "facts").mkdir()
    (tier_dirs[0] / "facts" / "FACTS.md").write_text("- not a note: the facts' own format\n")
    for other, error in (("notes/.hidden.md", "file_not_allowed"),
                         ("notes/misc.txt", "file_not_allowed"),
                         ("notes/export.md", "too_large"),
                         ("facts/FACTS.md", "file_not_allowed"),
                         ("notes/gone.md", "not_found"),
                         ("notes/" + "b" * 300 + ".md", "file_not_allowed"),  # over NAME_MAX
                         ("notes/../../etc/passwd.md", "forbidden_path")):  # fmt: skip
        resp = await client.get("/memory/read", params={"file": other})
        assert (await resp.json())["error"] == error, other
    assert (tier_dirs[0] / "notes" / "misc.md").read_text().endswith("rotates.\n")


def _fields(settings: Settings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in settings.__dataclass_fields__}
