"""With vectors, a later hit close in meaning to the answer is one subject; it comes first
only if it reports a change (``retrieval.updates``, the vector branch)."""

from __future__ import annotations

import dataclasses

from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from tests.conftest import eventually
from tests.test_journal import recall, started, status
from tests.test_journal_updates import FILLER, ids, lay_down

FOLLOW_UP = "Reminder for the dentist check-up goes out on Tuesday; bring the retainer along."


async def test_with_vectors_a_close_later_follow_up_reporting_no_change_stays_below(
    settings: Settings,
) -> None:
    """Weeks apart, the follow-up is close to the answer in meaning and names a day (a
    value of the kind asked) but fills none of the answer's slots differently: it stays
    below; a later update naming another date comes first."""
    svc = await started(dataclasses.replace(settings, embedder="minilm"))
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            answer, follow_up = await lay_down(
                client,
                [
                    (60, "Booked Mia's dentist check-up for 14 May at the Elm Street practice."),
                    (25, FOLLOW_UP),
                ],
            )
            await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])

            async def embedded() -> bool:
                return (await status(client))["pending_embeddings"] == 0

            await eventually(embedded, "every event's vector", within=60)
            query = "When is Mia's dentist check-up?"
            hits = (await recall(client, query, k=5, mark=False))["hits"]
            assert ids(hits)[:2] == [answer, follow_up]
            (update,) = await lay_down(
                client, [(10, "Mia's dentist check-up moved to 2 June, same practice.")]
            )
            await eventually(embedded, "the update's vector", within=60)
            assert ids((await recall(client, query, k=5, mark=False))["hits"])[0] == update
    finally:
        await svc.stop()
