"""Supports: the episodes a consolidation job's facts rest on, as journal relations.

A fact lives in ``facts/log.jsonl``, not in the journal, so a job that applied facts
becomes an event of its own there: one ``memory.consolidated`` event naming the job and
its facts, and a ``supports`` relation (weight 1.0) from it to every episode those facts
rest on: the reference's links from a rule to its evidence. Recall's walk shows them;
``/memory/facts/{id}/history`` names each version's event (``evidence``).

The facts log stays the truth. A job's marker names its event (id) and the episodes it
supports, and is appended before anything reaches the journal; the event is appended
after. A crash or a full journal in between leaves a marker whose event the journal
lacks: ``link`` finds those (at start, and after each job) and writes the
event again from the marker, with the same id, so it exists once.
"""

from __future__ import annotations

import time
from typing import Any

from sidecar.facts.consolidation import CONSOLIDATED, JOB_SOURCE
from sidecar.facts.index import Fact
from sidecar.journal.events import MAX_SUMMARY_CHARS, check_event, epoch, iso
from sidecar.journal.journal import Journal
from sidecar.journal.log import day_file

WEIGHT = 1.0  # the reference's weight of a supports link


def supports(records: list[dict[str, Any]], episode_ids: list[str]) -> list[str]:
    """The job's episodes that the facts it made or reinforced cite, in the job's order
    (an update's new version also carries its old version's sources: those were linked
    by the jobs that saw them)."""
    cited: set[str] = set()
    for r in records:
        if r["kind"] == "fact":
            cited.update(r["source_episode_ids"])
        elif r["kind"] == "reinforce":
            cited.update(r["episode_ids"])
    return [e for e in episode_ids if e in cited]


def facts_of(records: list[dict[str, Any]]) -> list[str]:
    """Facts the job made or reinforced: what rests on the episodes it supports."""
    return list(dict.fromkeys(r["id"] for r in records if r["kind"] in ("fact", "reinforce")))


def lines(marker: dict[str, Any], facts: dict[str, Fact], agent_id: str, now: float) -> list[
    dict[str, Any]
]:  # fmt: skip
    """The job's event and its relations, as journal lines, from its marker alone."""
    named = [facts[i].fact for i in marker["facts"] if i in facts]
    episodes = len(marker.get("episode_ids") or [])
    summary = f"Consolidated {episodes} episode(s) into {len(marker['facts'])} fact(s): "
    summary += " | ".join(" ".join(t.split()) for t in named)
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[: MAX_SUMMARY_CHARS - 3] + "..."
    at = epoch(marker.get("at"))
    raw: dict[str, Any] = {
        "type": CONSOLIDATED, "summary": summary, "source": JOB_SOURCE,
        "payload": {"job": marker.get("job"), "facts": marker["facts"],
                    "model": marker.get("model")},
    }  # fmt: skip
    if at is not None and at <= now:
        raw["ts"] = marker["at"]
    event = check_event(raw, now, agent_id).record
    event["id"] = marker["event"]
    links = [
        {"kind": "relation", "src": marker["event"], "dst": episode, "relation": "supports",
         "weight": WEIGHT, "at": event["ts"]}
        for episode in marker["supports"]
    ]  # fmt: skip
    return [event, *links]


async def link(
    journal: Journal, tier: str, markers: list[dict[str, Any]], facts: dict[str, Fact],
    agent_id: str,
) -> None:  # fmt: skip
    """Append the events (and relations) of the markers that name one the tier's journal
    does not hold yet, in one durable write to today's file."""
    wanted = [m for m in markers if m.get("event")]
    if not wanted:
        return
    tj = journal.tiers[tier]
    if tj.failed or tj.index is None:
        raise OSError(f"the {tier} journal is not open: {tj.failed}")
    ids = [m["event"] for m in wanted]
    held = {r.id for r in await journal.on_reader(tj.index.fetch, "id", ids)}
    now = time.time()
    todo = [line for m in wanted if m["event"] not in held
            for line in lines(m, facts, agent_id, now)]  # fmt: skip
    if todo:
        await tj.append(day_file(iso(now)[:10]), todo)
        journal.background.wake_embed.set()
