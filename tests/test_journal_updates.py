"""Updates linked when indexed: a later event placed above the earlier one it replaces."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.journal.change import calls_off, reports_change, shares_a_name, values
from sidecar.journal.follow import WORDS_CHANGE
from sidecar.journal.index import FILENAME, JournalIndex
from sidecar.journal.links import CANDIDATE, kept_pairs
from tests.conftest import eventually
from tests.test_journal import recall, record, started, status

FILLER = [
    "Reviewed the quarterly newsletter draft with the comms team.",
    "Printer on the second floor is out of toner again.",
    "Lunch order for the offsite went to the usual caterer.",
    "Rotated the shared calendar so everyone sees holidays.",
    "Archived last year's onboarding slides in the wiki.",
    "Coffee machine descaled; next reminder set by facilities.",
]


def ago(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")


async def lay_down(client: TestClient, events: list[tuple[float, str]]) -> list[str]:
    """Episodic events dated ``days`` ago, in the order given (not necessarily by date)."""
    ids = []
    for days, summary in events:
        body = {"type": "agent.observation", "summary": summary, "ts": ago(days),
                "refs": {"episodic": True}}  # fmt: skip
        ids += (await record(client, **body))["ids"]
    return ids


def links(settings: Settings) -> set[tuple[str, str, float]]:
    conn = sqlite3.connect(settings.agent_dir / FILENAME)
    try:
        return set(conn.execute("SELECT newer, older, words FROM updates"))
    finally:
        conn.close()


def ids(hits: list[dict[str, Any]]) -> list[str]:
    return [h["id"] for h in hits]


OLDER = "Parent-teacher evening for the Year 8 cohort at Hollybrook set for Thursday 12 March."
NEWER = "Hollybrook heads up: the Year 8 cohort meeting moved to Tuesday the 17th."


async def test_an_update_without_the_questions_words_comes_directly_above_the_older(
    client: TestClient,
) -> None:
    events = [(90 - 5 * i, text) for i, text in enumerate(FILLER)]
    older, newer = (await lay_down(client, [(60, OLDER), (40, NEWER), *events]))[:2]
    body = await recall(client, "When is the parent-teacher evening?", k=5, mark=False)
    order = ids(body["hits"])
    assert older in order and newer in order
    assert order.index(newer) == order.index(older) - 1
    placed = body["hits"][order.index(newer)]
    assert placed["update_of"]["id"] == older and placed["update_of"]["by"] == "words"
    # the relevance ranking alone does not find it: the link is what brought it
    alone = await recall(client, "parent-teacher evening", k=5, mark=False, ranking="relevance")
    assert newer not in ids(alone["hits"])


async def test_an_old_answer_never_updated_stays_first(client: TestClient) -> None:
    answer, later = await lay_down(
        client,
        [(80, "Hollybrook hazmat placards are kept in the cabinet next to dock door 14."),
         (20, "Hollybrook dock cabinet inspected by facilities; nothing to report.")],
    )  # fmt: skip
    await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])
    body = await recall(client, "Where are the hazmat placards kept?", k=5, mark=False)
    assert ids(body["hits"])[0] == answer
    assert all("update_of" not in h for h in body["hits"])
    assert later != answer


async def test_a_backfilled_older_event_links_and_a_rebuild_finds_the_same_links(
    settings: Settings,
) -> None:
    svc = await started(settings)
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            (newer,) = await lay_down(client, [(40, NEWER)])
            await lay_down(client, [(90 - 5 * i, text) for i, text in enumerate(FILLER)])
            (older,) = await lay_down(client, [(60, OLDER)])  # backfilled: recorded last
            found = links(settings)
            body = await recall(client, "When is the parent-teacher evening?", k=5, mark=False)
    finally:
        await svc.stop()
    assert any(n == newer and o == older for n, o, _ in found)
    assert ids(body["hits"]).index(newer) == ids(body["hits"]).index(older) - 1
    for path in settings.agent_dir.glob(f"{FILENAME}*"):
        path.unlink()
    svc = await started(settings)
    await svc.stop()
    rebuilt = links(settings)
    # the same pairs; a word's rarity is read when the later of a pair is folded, so the
    # live index (which met the older last) weighs a pair a little differently
    assert {(n, o) for n, o, _ in rebuilt} == {(n, o) for n, o, _ in found}
    again = {(n, o): w for n, o, w in rebuilt}
    assert all(abs(again[(n, o)] - w) < 0.02 for n, o, w in found)


async def test_a_writers_supersedes_is_the_strongest_link(client: TestClient) -> None:
    (old,) = await lay_down(client, [(30, "Staging deploy target is eu-west-1.")])
    body = {"type": "agent.observation", "summary": "Moved it, see the runbook.", "ts": ago(3),
            "supersedes": old, "refs": {"episodic": True}}  # fmt: skip
    (new,) = (await record(client, **body))["ids"]
    hits = (await recall(client, "staging deploy target", include_superseded=True))["hits"]
    assert ids(hits)[:2] == [new, old]
    assert hits[0]["update_of"] == {"id": old, "score": 1.0, "by": "supersedes"}


async def test_a_later_event_sharing_a_name_with_many_updates_one_at_most(
    client: TestClient,
) -> None:
    earlier = [(90 - 10 * i, f"Zephyrine batch {i} shipped on Monday {i + 2} June.")
               for i in range(4)]  # fmt: skip
    await lay_down(client, earlier)
    (hub,) = await lay_down(client, [(5, "Zephyrine batches now ship on Friday 9 October.")])
    body = await recall(client, "Zephyrine batch shipped", k=10, mark=False)
    assert sum(1 for h in body["hits"] if h.get("update_of")) <= 1
    assert ids(body["hits"]).count(hub) == 1


def test_a_change_is_a_slot_filled_differently() -> None:
    assert reports_change("Deadline is April 18.", "The deadline moved to April 25.")
    assert reports_change("Rotate keys every 180 days.", "Keys now rotate every 90 days.")
    assert reports_change("Questions go to Priya in People Ops.", "Priya left; ask Tomasz.")
    assert reports_change("Pages go through PagerDuty.", "We cancelled PagerDuty for Opsgenie.")
    assert reports_change("Cache TTL is 5 minutes.", "Cache entries now live for an hour.")
    assert reports_change("Staging is refreshed weekly.", "Staging refresh runs every night.")
    # a name where the earlier named none, a figure of another shape, no value: no change
    assert not reports_change("Ravi has a shellfish allergy.", "Then Ravi flew to Austin.")
    assert not reports_change("Mugs reorder at 120 units.", "Mug sales up 40% this week.")
    assert not reports_change("The hold notice went to custodians.", "Mediation is scheduled.")
    # called off, or back on: a change with no value
    assert reports_change("Pilot starts in June.", "The council scrapped the pilot.")
    assert reports_change("Taproom closes on Mondays.", "Reversing the Monday closure.")
    assert reports_change("The fee stays at $75.", "Committee voted to waive it entirely.")
    assert reports_change("Sunday calls suspended.", "Sunday calls are back on.")
    assert not reports_change("Pilot starts in June.", "Union wants more drivers for the pilot.")


def test_the_nouns_and_idioms_of_calling_off_words_call_nothing_off() -> None:
    """ "reverse proxy", "reverse charge", "in reverse order", "from scratch" name things or
    ways; a later event using them is a follow-up, not a subject called off (which would
    move it above the answer it follows up whatever the question asks)."""
    older = "The reverse proxy listens on port 8443."
    assert not reports_change(older, "Reverse proxy logs are rotated nightly.")
    assert not reports_change(older, "We rebuilt the proxy config from scratch to tidy it.")
    assert not reports_change("Invoices list newest first.", "Export sorts in reverse order.")
    assert not reports_change("VAT applies to B2B.", "Check the VAT id before reverse charge.")
    assert reports_change("Python 3.9 support stays.", "Scratch the 3.9 drop: Debian ships it.")
    assert reports_change("Taproom closes on Mondays.", "The council reversed it.")


def test_identifiers_plural_weekdays_and_counted_words_are_values() -> None:
    assert values("Alerts post to #infra-alerts.")["identifier"] == {"infra-alerts"}
    assert values("Backups land in db_backups.")["identifier"] == {"db_backups"}
    assert "identifier" not in values("A two-week lead time.")
    assert values("Standups are on Tuesdays.")["day"] == {"tuesday"}
    assert reports_change("Alerts post to #infra-alerts.", "Alerts now go to #platform-oncall.")
    assert reports_change("Standups are on Mondays.", "Standups moved to Tuesdays.")
    assert reports_change("Merges need one approval.", "Merges now need two reviewer approvals.")
    assert reports_change("Rota covers 3 sites.", "Rota covers five sites from May.")
    # a capitalised hyphenated word is no identifier; a count of another thing no recount
    assert "identifier" not in values("Follows the Anglo-Saxon rules.")
    assert not reports_change("Merges need one approval.", "Two reviewers were out sick.")
    assert not reports_change("Rota covers 3 sites.", "One of the sites had a leak.")


def test_a_company_name_is_not_a_cancellation() -> None:
    assert not calls_off("Pallets are collected by Harrow Scrap on Fridays.")
    older = "Pallets go to the recycler on Fridays."
    assert not reports_change(older, "Invoice from Harrow Scrap for the pallets arrived.")
    assert calls_off("Scrap the Friday pallet run.")
    assert calls_off("We scrapped the Friday pallet run.")


def test_an_index_of_schema_6_gains_the_links_and_keeps_its_history(tmp_path: Path) -> None:
    root = tmp_path / "tier"
    (root / "journal").mkdir(parents=True)
    texts = [*FILLER, OLDER, NEWER]
    events = [{"id": f"e{i}", "ts": ago(90 - i), "type": "agent.observation", "summary": t,
               "refs": {"episodic": True}} for i, t in enumerate(texts)]  # fmt: skip
    (root / "journal" / "2026-11-01.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events)
    )
    index = JournalIndex(tmp_path / "j.sqlite")
    index.rebuild(root)
    index.add_snapshot("2026-11-01", {"score": 80.0})
    for table in ("updates", "events_vocab", "events_where"):  # what version 6 did not have
        index.db.writer.execute(f"DROP TABLE {table}")
    index.db.writer.execute("PRAGMA user_version = 6")
    index.close()
    index = JournalIndex(tmp_path / "j.sqlite")
    try:
        assert index.rebuilt
        assert index.rebuild(root) == len(texts)
        assert index.snapshots(30) == [{"day": "2026-11-01", "score": 80.0}]
        older, newer = f"e{len(FILLER)}", f"e{len(FILLER) + 1}"
        found = kept_pairs(index.reader(), "older", [older], 0.0)
        assert [(o, n) for o, n, _ in found] == [(older, newer)]
    finally:
        index.close()


async def test_with_vectors_an_update_sharing_no_rare_word_is_found_by_meaning(
    settings: Settings,
) -> None:
    svc = await started(dataclasses.replace(settings, embedder="minilm"))
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            older, newer = await lay_down(
                client,
                [(50, "Weekly grocery delivery arrives on Saturday mornings."),
                 (10, "Switched the food order slot to Thursday evenings.")],
            )  # fmt: skip
            await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])

            async def embedded() -> bool:
                return (await status(client))["pending_embeddings"] == 0

            await eventually(embedded, "every event's vector", within=60)
            body = await recall(client, "When does the grocery delivery arrive?", mark=False)
    finally:
        await svc.stop()
    order = ids(body["hits"])
    assert order.index(newer) == order.index(older) - 1
    assert body["hits"][order.index(newer)]["update_of"]["by"] == "meaning"
    # no rare word shared: the index holds no pair for them, meaning alone found it
    assert (newer, older) not in {(n, o) for n, o, _ in links(settings)}


async def test_an_event_naming_itself_or_a_cycle_in_supersedes_is_recalled_once(
    settings: Settings,
) -> None:
    """Lines another program wrote weeks ago: one event says it supersedes itself, two say
    they supersede each other. Each is recalled once, and none is an update of itself."""
    when = datetime.now(UTC) - timedelta(days=20)
    self_id, a_id, b_id = (str(uuid.uuid4()) for _ in range(3))

    def line(event_id: str, days: float, summary: str, supersedes: str) -> str:
        ts = (when + timedelta(days=days)).isoformat().replace("+00:00", "Z")
        return json.dumps({"id": event_id, "ts": ts, "recorded_at": ts,
                           "type": "agent.observation", "summary": summary, "payload": {},
                           "refs": {"episodic": True}, "supersedes": supersedes})  # fmt: skip

    journal = settings.agent_dir / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    (journal / f"{when.date().isoformat()}.jsonl").write_text(
        "\n".join([
            line(self_id, 0, "Quillfeather vault code is 4471.", self_id),
            line(a_id, 0.1, "Marrowgate ferry leaves at 07:10.", b_id),
            line(b_id, 0.2, "Marrowgate ferry leaves at 07:40.", a_id),
        ]) + "\n"
    )  # fmt: skip
    svc = await started(settings)
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            for query, wanted in (("Quillfeather vault code", {self_id}),
                                  ("Marrowgate ferry", {a_id, b_id})):  # fmt: skip
                hits = (await recall(client, query, include_superseded=True, mark=False))["hits"]
                found = ids(hits)
                assert wanted <= set(found)
                assert len(found) == len(set(found)), found
                assert all(h.get("update_of", {}).get("id") != h["id"] for h in hits)
    finally:
        await svc.stop()


async def test_an_update_brought_in_past_the_last_hit_leaves_the_older_above_the_rest(
    client: TestClient,
) -> None:
    """The brought event takes the older's place and every hit below moves down one; the
    one pushed past the last place must rank below the hit above it, not tie with it (the
    merge of tiers put the later of two tied events first)."""
    older, later, newer = await lay_down(
        client,
        [(200, "Hollybrook Zigbee coordinator is the SkyConnect stick, channel 15."),
         (30, "Paired two new Zigbee door sensors in the hallway."),
         (60, "SkyConnect stick at Hollybrook re-paired; it now sits on 25.")],
    )  # fmt: skip
    await lay_down(client, [(90 - 5 * i, text) for i, text in enumerate(FILLER)])
    body = await recall(client, "Which Zigbee channel is the coordinator on?", k=5, mark=False)
    assert ids(body["hits"]) == [newer, older, later]
    assert body["hits"][0]["update_of"]["id"] == older
    scores = [h["score"] for h in body["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_a_name_of_the_earlier_written_in_the_later_is_shared() -> None:
    older = "Standby pool for the Malaga base managed by duty officer Carla Ruiz."
    assert shares_a_name(older, "Carla handed it to Jorge as of today.")  # opening the line
    assert not shares_a_name(older, "Standby crew called out before 7am.")  # not a name there
    assert not shares_a_name("The stick is on the Home Assistant box.", "Flying home today.")


async def test_a_terse_update_naming_the_older_s_name_comes_above_it(
    client: TestClient, settings: Settings
) -> None:
    """It shares one rare word with the older (under the bar a pair needs otherwise), and it
    names it: the update is brought in above the older."""
    events = [(90 - 5 * i, text) for i, text in enumerate(FILLER)]
    older, newer = (await lay_down(client, [
        (60, "Standby pool for the Malaga base managed by duty officer Carla Ruiz."),
        (40, "Carla Ruiz handed it to Jorge as of today."),
        *events,
    ]))[:2]  # fmt: skip
    (words,) = [w for n, o, w in links(settings) if (n, o) == (newer, older)]
    assert CANDIDATE <= words < WORDS_CHANGE  # the name is what lets the pair count
    body = await recall(client, "Who manages the standby pool at Malaga?", k=5, mark=False)
    order = ids(body["hits"])
    assert order.index(newer) == order.index(older) - 1
    assert body["hits"][order.index(newer)]["update_of"]["id"] == older


async def test_a_linked_later_event_reporting_no_change_does_not_lift(
    client: TestClient, settings: Settings
) -> None:
    """The later shares nearly half the answer's rare words or more but gives no new
    value: a check on the same thing, not its update, so the answer stays first."""
    answer, check = await lay_down(
        client,
        [(80, "Hollybrook hazmat placards are kept in the steel cabinet beside dock door 14."),
         (20, "Hollybrook hazmat placards in the steel cabinet beside dock door 14 all checked.")],
    )  # fmt: skip
    await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])
    body = await recall(client, "Where are the hazmat placards kept?", k=5, mark=False)
    assert any(o == answer and n == check and w >= 0.45 for n, o, w in links(settings))
    assert ids(body["hits"])[:2] == [answer, check]
    assert all("update_of" not in h for h in body["hits"])


async def test_a_later_event_giving_no_value_of_the_kind_asked_stays_below_the_answer(
    client: TestClient,
) -> None:
    """The question asks when; the follow-up is later, on the answer's subject, and states
    other figures (a count), so it does not replace the date and stays below; an update
    naming a new date, recorded later still, comes first."""
    answer, follow_up = await lay_down(
        client,
        [(80, "Harbourside rooftop bar closes for the season on 31 October each year."),
         (20, "Harbourside rooftop bar season: 14 private events booked, 3 pending.")],
    )  # fmt: skip
    await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])
    query = "When does the Harbourside rooftop bar close for the season?"
    hits = (await recall(client, query, k=5, mark=False))["hits"]
    assert ids(hits)[:2] == [answer, follow_up]
    assert all("update_of" not in h for h in hits)
    (update,) = await lay_down(
        client, [(10, "Harbourside rooftop bar now closes on 15 November this year.")]
    )
    assert ids((await recall(client, query, k=5, mark=False))["hits"])[0] == update


async def test_a_later_event_calling_the_subject_off_comes_above_it(client: TestClient) -> None:
    """No value of its own, but linked by the pilot's rare words and calling it off: the
    later replaces the earlier."""
    older, newer = await lay_down(
        client,
        [(80, "Fare-free Saturdays pilot on the Kestrel line to start in June on all buses."),
         (15, "Council scrapped the Kestrel pilot in the budget round.")],
    )  # fmt: skip
    await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])
    query = "Will fare-free Saturdays start on all Kestrel buses in June?"
    by_relevance = ids((await recall(client, query, k=5, ranking="relevance"))["hits"])
    assert by_relevance.index(older) < by_relevance.index(newer)
    order = ids((await recall(client, query, k=5, mark=False))["hits"])
    assert order.index(newer) == order.index(older) - 1
