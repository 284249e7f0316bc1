"""The record path and the rebuild keep their cost: counted in calls and reads, which do not
vary with the load of the machine, so a regression shows on any machine, every run."""

from __future__ import annotations

import cProfile
import os
import pstats
from pathlib import Path
from typing import Any

import pytest

from sidecar.config import Settings
from sidecar.errors import ApiError, check_label
from sidecar.journal.index import JournalIndex
from tests.test_journal import day_file, record
from tests.test_journal_robustness import served

EVENTS = 200
# Python-level calls to fold one recorded event into a rebuilt index (these events, this
# test): 165 once the fold checked every field, 133 with the checks on their fast paths.
CALLS_PER_EVENT = 140


def calls(stats: pstats.Stats, name: str) -> int:
    """Calls of the function ``name`` (for a builtin, cProfile's ``<built-in method name>``)."""
    entries = stats.stats.items()  # type: ignore[attr-defined]
    return sum(s[1] for (_, _, fn), s in entries if fn in (name, f"<built-in method {name}>"))


async def test_appending_after_our_own_append_reads_nothing_back(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file ends in the newline this process wrote last: no read to check for a torn
    line, one syscall fewer on every group commit."""
    svc, client = await served(settings)
    path = day_file(settings.agent_dir)
    reads: list[int] = []
    pread = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        if os.path.samefile(f"/proc/self/fd/{fd}", path):
            reads.append(offset)
        return pread(fd, n, offset)

    try:
        await record(client, type="tool.call", summary="the first, which creates the file")
        await record(client, type="tool.call", summary="the second, on a file opened before")
        monkeypatch.setattr(os, "pread", counting)
        for n in range(3):
            await record(client, type="tool.call", summary=f"one more, number {n}")
        assert reads == []
        assert len(path.read_bytes().splitlines()) == 5
    finally:
        await client.close()
        await svc.stop()


async def test_a_rebuild_folds_an_event_within_its_call_budget(settings: Settings) -> None:
    svc, client = await served(settings)
    try:
        events: list[dict[str, Any]] = [
            {"type": "tool.call", "summary": f"deploy {n} of payments in prod",
             "session_id": f"run-{n % 7}", "payload": {"host": f"node-{n}", "ms": n}}
            for n in range(EVENTS)
        ]  # fmt: skip
        await record(client, events=events)
    finally:
        await client.close()
        await svc.stop()
    index = JournalIndex(Path(settings.agent_dir) / "rebuilt.sqlite")
    try:
        index.rebuild(settings.agent_dir)  # schema, statements and imports: not counted
        profile = cProfile.Profile()
        profile.enable()
        assert index.rebuild(settings.agent_dir) == EVENTS
        profile.disable()
    finally:
        index.close()
    stats = pstats.Stats(profile)
    # ASCII labels are not checked a character at a time.
    assert calls(stats, "unicodedata.category") == 0
    total: int = stats.total_calls  # type: ignore[attr-defined]
    assert total <= CALLS_PER_EVENT * EVENTS, f"{total / EVENTS:.0f} calls an event"


async def test_reading_events_builds_no_dict_a_row(settings: Settings) -> None:
    """Recall, listing and consolidation read rows of ``events``: each a ``Row`` made from
    the values by position, one call a row."""
    svc, client = await served(settings)
    try:
        events = [{"type": "tool.call", "summary": f"step {n}"} for n in range(EVENTS)]
        await record(client, events=events)
    finally:
        await client.close()
        await svc.stop()
    index = JournalIndex(Path(settings.agent_dir) / "journal.sqlite")
    try:
        index.latest(1)  # the reader's connection: not counted
        profile = cProfile.Profile()
        profile.enable()
        rows = index.latest(EVENTS)
        profile.disable()
    finally:
        index.close()
    assert [r.summary for r in rows] == [f"step {n}" for n in reversed(range(EVENTS))]
    total: int = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
    assert total <= EVENTS + 20, f"{total} calls for {EVENTS} rows"


@pytest.mark.parametrize("bad", ["\x00", "\u202e", "\u200b", "\ud800", "\u2028", "\u2029", "a\tb"])
def test_a_label_with_an_unseen_character_is_still_refused(bad: str) -> None:
    with pytest.raises(ApiError) as caught:
        check_label(f"run-{bad}", "session_id")
    assert caught.value.error == "bad_session_id"


@pytest.mark.parametrize("good", ["run-1", "équipe Zürich", "東京-2", "a b", "x" * 128])
def test_a_printable_label_passes(good: str) -> None:
    assert check_label(good, "session_id") == good
