"""A later event about a sibling of the question's subject is not its update."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from sidecar.journal.change import repeats
from sidecar.journal.siblings import sibling
from sidecar.retrieval.updates import later_first, stems
from tests.test_journal import recall
from tests.test_journal_updates import FILLER, ids, lay_down

ANSWER = "Westside hydrant flow testing at Kestrel is done every May by Engine 2's crew."
QUESTION = "Who does the hydrant flow testing in Westside?"


def test_another_qualifier_on_the_same_head_is_a_sibling() -> None:
    eastside = "Eastside hydrant flow testing at Kestrel moves to June; Engine 5 will do it."
    assert sibling(QUESTION, ANSWER, eastside)
    assert sibling(
        "who buys our aluminium cans",
        "Aluminium cans are sold to Norcast Metals at the monthly index price.",
        "Steel cans now go to Harrow Scrap, better price than Norcast.",
    )
    assert sibling(  # a possessive name qualifies the head as well
        "Which NPI goes on Dr. Patel's Medicare claims?",
        "Dr. Patel's clinic bills all Medicare claims under group NPI 1437702915.",
        "Medicare claims for the Ortiz clinic were rejected for a missing NPI modifier.",
    )


def test_an_update_keeping_or_not_writing_the_qualifier_is_no_sibling() -> None:
    moved = "Westside hydrant flow testing moves to June; Engine 5 takes it over."
    assert not sibling(QUESTION, ANSWER, moved)  # the question's word kept
    assert not sibling(QUESTION, ANSWER, "Heads up: that moved to June, Engine 5 does it.")
    assert not sibling("Who does the hydrant flow testing?", ANSWER, moved.replace("West", "East"))
    # a verb before the shared word, or as it, qualifies nothing
    assert not sibling(
        "What are the Lisbon offsite dates?",
        "Team offsite in Lisbon booked for 14-17 September.",
        "Offsite dates shifted to 21-24 September; the hotel double-booked the conference room.",
    )
    # a hyphenated qualifier is read as its last part, as its restatement writes it
    assert not sibling(
        "Will fare-free Saturdays start on all buses in June?",
        "Fare-free Saturdays pilot to start in June on all buses.",
        "Council scrapped the free Saturday pilot in the budget round.",
    )
    # figures, identifiers and marks between two words break the phrase
    assert not sibling(
        "Which gateway does the Android app call?",
        "Android gateway is api.shopline.io/v2.",
        "Upgraded gw.shopline.io/v3 gateway for the app.",
    )
    assert not sibling("", ANSWER, ANSWER.replace("West", "East"))


async def test_a_later_event_on_a_sibling_subject_stays_below_the_answer(
    client: TestClient,
) -> None:
    """Linked by the rare words the two share and reporting a change (a month, a name),
    the Eastside event is still about another thing than the question asks: the
    Westside answer, recorded weeks before, keeps first place; a Westside update recorded
    later still comes above it."""
    answer, east = await lay_down(
        client,
        [(80, ANSWER),
         (20, "Eastside hydrant flow testing at Kestrel moves to June; Engine 5 will do it.")],
    )  # fmt: skip
    await lay_down(client, [(70 - 5 * i, text) for i, text in enumerate(FILLER)])
    hits = (await recall(client, QUESTION, k=5, mark=False))["hits"]
    assert ids(hits)[0] == answer and east in ids(hits)
    assert all("update_of" not in h for h in hits)
    (update,) = await lay_down(
        client, [(10, "Westside hydrant flow testing at Kestrel moves to June, Engine 5 now.")]
    )
    order = ids((await recall(client, QUESTION, k=5, mark=False))["hits"])
    assert order.index(update) < order.index(answer) < order.index(east)


def test_a_follow_up_giving_the_answers_own_value_again_repeats_it() -> None:
    answer = "Fight director for Macbeth is Carla Moen; she takes fight call before every show."
    assert repeats(answer, "Approved Carla Moen's invoice for the Macbeth fight choreography.")
    assert not repeats(answer, "Carla Moen has left; Ade Bello directs the fights from May.")
    assert not repeats(answer, "Macbeth understudy needs a fight refresher on Thursday.")
    # a name opening the later is not read: "Globex" repeated, "email" replaced by "phone"
    assert not repeats(
        "Customer Globex prefers to be contacted by email.",
        "Globex asked that we phone their ops desk rather than write.",
    )


def test_with_vectors_a_later_hit_repeating_the_answers_value_stays_below() -> None:
    """Close in meaning beyond the question, but it gives the answer's own name again and
    no new value: a follow-up, whatever its cosine; an update naming another comes first."""
    query = "who is the Macbeth fight director"
    answer = "Fight director for Macbeth is Carla Moen; she takes fight call before every show."
    texts = [answer, "Approved Carla Moen's invoice for the Macbeth fight choreography."]
    words = [stems(t) for t in texts]
    kwargs = {
        "to_query": [0.5, 0.5],
        "confirms": lambda i, j: repeats(texts[i], texts[j]),
    }
    args = ([-80.0, -20.0], [w & stems(query) for w in words], words, lambda i, j: 0.8)
    assert later_first(*args, **kwargs) == [0, 1]
    assert later_first(*args, to_query=[0.5, 0.5]) == [1, 0]  # the test is what keeps it
    texts[1] = "Carla Moen has left; Ade Bello directs the Macbeth fights from May."
    assert later_first(*args, **kwargs) == [1, 0]


def test_a_sibling_joins_no_group_it_would_cross() -> None:
    """The best hit's group holds the answer and a later sibling of it: each alike the
    best hit, the sibling still never comes above the answer it is a sibling of."""
    when = [-10.0, -80.0, -20.0]  # hits in rank order: the best, the answer, the sibling
    args = (when, [{"a"}] * 3, [{"a", "b"}] * 3, lambda i, j: 0.8)
    near = [0.5, 0.5, 0.5]
    assert later_first(*args, to_query=near) == [0, 2, 1]
    crossed = later_first(*args, to_query=near, sibling=lambda i, j: (i, j) == (1, 2))
    assert crossed == [0, 1, 2]
