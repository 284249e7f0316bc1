"""Lessons: what answers the task is decided by the words it holds, then prominence orders.

Real learnings files, a real index and server; entries dated in the past.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from sidecar.api.http import create_app
from sidecar.config import Settings
from sidecar.learnings import beyond, ranking
from sidecar.learnings.hits import order
from sidecar.learnings.ranking import ScoredLearning, answering, fits
from sidecar.retrieval.embedders.base import EmbedderRefused
from sidecar.service import MemoryService
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub


@asynccontextmanager
async def embedded_service(
    settings: Settings, entries: int
) -> AsyncIterator[tuple[MemoryService, TestClient]]:
    """A service with the real MiniLM embedder, served on loopback, once the agent tier's
    ``entries`` learnings have their vectors (hybrid ranking needs them all)."""
    svc = MemoryService(dataclasses.replace(settings, embedder="minilm"))
    await svc.start()
    try:
        async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
            vectors = svc.embeddings.vectors
            assert vectors is not None

            async def embedded() -> bool:
                return len(vectors.tiers["agent:learnings"].index) == entries

            await eventually(embedded, f"the {entries} learnings embedded", within=60)
            yield svc, client
    finally:
        await svc.stop()


def block(key: str, importance: float, count: int, days: int, text: str, status: str = "active"
          ) -> str:  # fmt: skip
    when = (date.today() - timedelta(days=days)).isoformat()
    return (f"---\nid: {key}\nimportance: {importance}\nreinforcement_count: {count}\n"
            f"last_reinforced: '{when}'\nstatus: {status}\n---\n{text}\n")  # fmt: skip


async def ranked(client: TestClient, service: MemoryService, settings: Settings,
                 blocks: list[str], query: str) -> list[dict[str, Any]]:  # fmt: skip
    path = settings.agent_dir / "learnings" / "topic.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(blocks))
    await service.learnings.sync("agent")
    resp = await client.post("/memory/learnings/search", json={"query": query, "limit": 5})
    body = await resp.json()
    assert resp.status == 200, body
    return list(body["hits"])


def test_fit_counts_each_query_word_once() -> None:
    query = "rotate the vault token"
    assert fits(
        query,
        [
            "Token token token: the vault token again.",
            "Rotate the vault token with `vault token rotate`.",
        ],
    ) == [2 / 3, 1.0]
    assert fits("", ["anything"]) == [0.0]


async def test_the_prominent_lesson_comes_first_over_a_wordier_weak_entry(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    hits = await ranked(client, service, settings, [
        # A one-off note repeating the query's words: BM25 likes it best.
        block("weak", 0.2, 0, 200, "Staging deploy, staging deploy: slow staging deploy."),
        block("proven", 0.9, 8, 3, "Bring the VPN up first, with `vpn up` from the laptop, "
              "then run make release: the staging cluster refuses every deploy over the "
              "public network with a TLS handshake error that looks like a certificate bug."),
        block("retired", 1.0, 9, 1, "Staging deploy: always deploy from the release branch.",
              "retired"),
    ], "staging deploy")  # fmt: skip
    by_relevance = sorted(hits, key=lambda h: -h["relevance"])
    # Relevance alone puts the weak note first, by more than half: it used to lead.
    assert by_relevance[0]["id"] == "weak" and by_relevance[1]["relevance"] < 0.5
    assert [h["id"] for h in hits] == ["proven", "weak"]  # retired never shown


async def test_an_exact_low_importance_answer_beats_a_prominent_loose_one(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    hits = await ranked(client, service, settings, [
        block("prominent", 0.9, 10, 2, "Orders database migrations need a lock timeout."),
        block("exact", 0.2, 0, 120, "To rotate the orders database password, run "
              "`vault rotate orders-db` and restart the workers."),
    ], "rotate the orders database password")  # fmt: skip
    assert [h["id"] for h in hits] == ["exact", "prominent"]


def typed(key: str, kind: str, importance: float, count: int, days: int, text: str) -> str:
    when = (date.today() - timedelta(days=days)).isoformat()
    return (f"---\nid: {key}\ntype: {kind}\nimportance: {importance}\n"
            f"reinforcement_count: {count}\nlast_reinforced: '{when}'\n---\n{text}\n")  # fmt: skip


def test_fit_stems_words_as_the_index_does() -> None:
    # Porter, as BM25 sees them: "refunded" holds "refund", "deploying" holds "deploy".
    assert fits("refund an annual plan", ["Annual plans are refunded pro rata."]) == [1.0]
    assert fits("deploy checkout", ["Deploying checkout needs a drained queue."]) == [1.0]
    assert fits("the of", ["nothing shared", "the of"]) == [0.0, 1.0]  # stopwords only


def candidate(key: str, kind: str, fit_: float, prominence_: float, cosine: float | None = None
              ) -> ScoredLearning:  # fmt: skip
    c = ScoredLearning("agent", "learnings/t.md", {"id": key, "type": kind}, key, 1.0,
                       prominence_, fit=fit_, cosine=cosine)  # fmt: skip
    return c


def test_a_fact_repeating_the_task_does_not_raise_the_bar_for_guidance() -> None:
    weak = candidate("weak", "declarative", 1.0, 0.1)
    lesson = candidate("lesson", "procedural", 0.5, 9.0)
    loose = candidate("loose", "directive", 0.25, 9.0)
    # The bar is the best guidance (0.5), not the fact's 1.0: the lesson and the fact
    # answer; the loose entry (half the lesson's words) does not.
    assert answering([weak, lesson, loose], 0.5, 0.75) == [weak, lesson]
    # Only facts: the best one sets the bar, as before types counted.
    other = candidate("other", "declarative", 0.5, 9.0)
    assert answering([weak, other], 0.5, 0.75) == [weak]
    # A fact still counts half: guidance sharing one word of eight does not lower the bar.
    faint = candidate("faint", "directive", 0.125, 9.0)
    assert answering([weak, faint], 0.5, 0.75) == [weak]


def test_with_vectors_the_match_mixes_meaning_and_words() -> None:
    paraphrase = candidate("paraphrase", "directive", 0.2, 9.0, cosine=0.8)
    wordy = candidate("wordy", "directive", 0.6, 9.0, cosine=0.1)
    # Missing words lower the match; words beyond what the meaning bears out add nothing.
    assert paraphrase.match == pytest.approx(0.65) and wordy.match == pytest.approx(0.1)
    assert answering([wordy, paraphrase], 0.5, 0.75) == [paraphrase]
    assert candidate("no vector", "directive", 0.6, 1.0).match == 0.6
    assert candidate("opposed", "directive", 0.6, 1.0, cosine=-0.3).match == 0.0
    assert candidate("all words", "directive", 1.0, 1.0, cosine=0.7).match == pytest.approx(0.7)


def test_with_vectors_a_note_holding_every_word_does_not_shut_out_the_lesson() -> None:
    """Held-out lessons v2's shape: a low-importance instruction for a neighbouring step
    holds every word of the task (cosine 0.64), the reinforced lesson two of five in other
    words (cosine 0.6). Counting the note's words past its meaning set a bar of 0.82 the
    lesson missed by far; by its meaning the bar is 0.64, and the lesson's 0.55 answers."""
    note = candidate("note", "procedural", 1.0, 0.3, cosine=0.64)
    lesson = candidate("lesson", "directive", 0.4, 9.6, cosine=0.6)
    assert note.match == pytest.approx(0.64) and lesson.match == pytest.approx(0.55)
    assert answering([note, lesson], 0.5, 0.75) == [note, lesson]
    # The exact answer still shuts out a prominent entry on a neighbouring task that holds
    # a third of the words (as the exact-answer topics have it).
    exact = candidate("exact", "procedural", 1.0, 0.2, cosine=0.86)
    neighbour = candidate("neighbour", "corrective", 0.33, 10.9, cosine=0.5)
    assert answering([exact, neighbour], 0.5, 0.75) == [exact]


def test_with_vectors_meaning_outweighs_the_words_a_neighbouring_note_repeats() -> None:
    """Held-out lessons v3's shape: the note for a neighbouring step holds four of the
    task's five words (cosine 0.6), the reinforced lesson one (cosine 0.58). Meaning at
    half the match left the lesson at 0.39 against a bar of 0.45; at three quarters its
    0.49 clears it and prominence puts it first. The exact answer of the opposite topics
    (every word, cosine 0.77) still shuts out the prominent rule for a neighbouring task
    (three words of five, cosine 0.48)."""
    note = candidate("note", "corrective", 0.8, 0.19, cosine=0.6)
    lesson = candidate("lesson", "corrective", 0.2, 7.8, cosine=0.58)
    assert lesson.match == pytest.approx(0.485)
    assert [c.meta["id"] for c in order([note, lesson], "default")] == ["lesson", "note"]
    exact = candidate("exact", "corrective", 1.0, 0.22, cosine=0.77)
    neighbour = candidate("neighbour", "procedural", 0.6, 9.85, cosine=0.48)
    assert [c.meta["id"] for c in order([exact, neighbour], "default")] == ["exact", "neighbour"]


async def test_typed_lessons_sparse_the_lesson_over_a_note_and_the_exact_answer_over_a_rule(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    hits = await ranked(client, service, settings, [
        typed("note", "declarative", 0.3, 0, 60, "Billing service staging deploys are "
              "announced in the #deploys channel."),
        typed("lesson", "procedural", 0.9, 10, 2, "Before any staging deploy, pause the "
              "invoice queue consumers; in-flight jobs were charged twice."),
        typed("exact", "procedural", 0.2, 0, 150, "To rename a pushed branch: git branch -m "
              "old new, push the new name, then delete the old one on the remote."),
        typed("rule", "directive", 0.9, 11, 1, "Never force-push a shared branch; open a "
              "fresh pull request from a new branch instead."),
    ], "deploy the billing service to staging")  # fmt: skip
    assert max(hits, key=lambda h: h["relevance"])["id"] == "note"  # BM25 likes the note
    assert [h["id"] for h in hits][:2] == ["lesson", "note"]
    resp = await client.post("/memory/learnings/search",
                             json={"query": "rename a branch that was already pushed"})  # fmt: skip
    assert (await resp.json())["hits"][0]["id"] == "exact"


async def test_with_vectors_a_lesson_in_other_words_answers_where_words_alone_fall_short(
    settings: Settings,
) -> None:
    """The lesson holds one of the task's four words; its meaning is close (MiniLM cosine
    0.51, the note 0.72). By words alone it misses the bar the note sets; with its cosine it
    clears it, and prominence puts it first."""
    path = settings.agent_dir / "learnings" / "travel.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([
        typed("note", "declarative", 0.3, 0, 200, "Flights for the Tokyo trip last spring "
              "were booked through the corporate portal."),
        typed("lesson", "directive", 0.9, 10, 3, "Morgan only flies with a checked bag and a "
              "two-hour layover on international connections to Tokyo."),
        typed("other", "directive", 0.5, 1, 30, "Hotel rooms near the office are reserved "
              "by the front desk."),
    ]))  # fmt: skip
    async with embedded_service(settings, 3) as (_, client):
        query = "book flights for the Tokyo trip"
        found = {}
        for mode in ("sparse", "hybrid"):
            asked = {"query": query, "mode": mode, "scope": "agent"}
            resp = await client.post("/memory/learnings/search", json=asked)
            body = await resp.json()
            assert resp.status == 200 and body["mode"] == mode, body
            found[mode] = [h["id"] for h in body["hits"]]
        assert found == {"sparse": ["note", "lesson"], "hybrid": ["lesson", "note"]}


def test_a_search_that_fills_the_stem_cache_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache of stems starts over when full: a text it held when the search began (the
    query, asked again) must still be answered, not dropped with the rest (a KeyError, a
    500 on the learnings search that happened to fill it)."""
    monkeypatch.setattr(ranking, "STEMMED_MAX", 3)
    monkeypatch.setattr(ranking, "_stemmed", {})
    assert fits("refund plan", ["refunds are quick"]) == [0.5]
    assert fits("refund plan", ["plans renew", "refunded plans"]) == [0.5, 1.0]
    assert fits("refund plan", ["refunded plans"]) == [1.0]  # the cache works on after it


TWIN_TASK = "rotate the signing key for the mobile app"
LESSON = ("Before replacing a release certificate, expire the builds signed with the old one; "
          "replacing it early locked users out of updates twice.")  # fmt: skip
TWIN = ("Expire the builds signed with the old release certificate before you rotate the "
        "signing key; rotating early locked users out of updates.")  # fmt: skip
WEAK = ("Signing key rotation for the mobile app happens every spring; the store shows the "
        "new key's fingerprint.")  # fmt: skip
OTHER = ("Never ship a mobile app build without the crash reporter enabled; the last blind "
         "release cost a week.")  # fmt: skip


def test_a_near_duplicate_lends_its_share_of_the_task_words() -> None:
    """The lesson holds one of the task's five words, its paraphrase three (two thirds of
    their content words shared): the lesson is judged by the paraphrase's. Entries that
    share less with either keep their own."""
    shares = fits(TWIN_TASK, [LESSON, TWIN, WEAK, OTHER])
    assert shares == pytest.approx([0.2, 0.6, 1.0, 0.4])
    found = [candidate(key, "corrective", share, 1.0) for key, share in zip(
        ("lesson", "twin", "weak", "other"), shares, strict=True)]  # fmt: skip
    for c, stems in zip(found, ranking.index_stems([LESSON, TWIN, WEAK, OTHER]), strict=True):
        c.stems = stems
    ranking.lend_fits(found)
    assert [c.fit for c in found] == pytest.approx([0.6, 0.6, 1.0, 0.4])
    ranking.lend_fits([])  # nothing to lend


async def test_the_prominent_lesson_answers_through_its_better_worded_near_duplicate(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    """Sparse: the bar is the paraphrase's 0.6 (the note counts half of its 1.0), so the
    lesson's own 0.2 missed it and the paraphrase led; judged by its near-duplicate's
    words, the reinforced lesson answers and comes first. The prominent rule on another
    task (0.4) still does not answer."""
    hits = await ranked(client, service, settings, [
        typed("weak", "declarative", 0.3, 0, 90, WEAK),
        typed("lesson", "corrective", 0.9, 12, 4, LESSON),
        typed("twin", "corrective", 0.5, 1, 60, TWIN),
        typed("other", "directive", 0.9, 10, 2, OTHER),
    ], TWIN_TASK)  # fmt: skip
    order = [h["id"] for h in hits]
    assert order[0] == "lesson" and order.index("other") == 3, order


async def test_a_near_duplicate_in_the_other_tier_lends_its_words_too(
    client: TestClient, service: MemoryService, settings: Settings
) -> None:
    """The crew's copy of the agent's lesson holds the task's words: the agent's lesson is
    judged by them (both tiers searched together, as a member's lessons and the crew's)."""
    crew = settings.crew_dir / "learnings" / "release.md"
    crew.parent.mkdir(parents=True, exist_ok=True)
    crew.write_text(typed("twin", "corrective", 0.5, 1, 60, TWIN))
    await service.learnings.sync("crew")
    hits = await ranked(client, service, settings, [
        typed("weak", "declarative", 0.3, 0, 90, WEAK),
        typed("lesson", "corrective", 0.9, 12, 4, LESSON),
    ], TWIN_TASK)  # fmt: skip
    assert {h["id"]: h["tier"] for h in hits}["twin"] == "crew"
    assert hits[0]["id"] == "lesson", [h["id"] for h in hits]


def test_without_words_leaves_what_an_entry_says_beyond_the_task() -> None:
    """The task's words go as the index stems them ("renewals" under "renew"), words of no
    content stay; an entry with none of them is left whole."""
    assert beyond.without_words("Renew the TLS certificate for the payments gateway", [
        "Payments gateway TLS certificate renewals are logged once they renew.",
        "Check the intermediate chain is bundled.",
    ]) == ["are logged once they", "Check the intermediate chain is bundled."]  # fmt: skip
    assert beyond.without_words("deploy staging", ["Staging deploy: deploying."]) == [""]


def test_an_entry_saying_only_the_task_in_a_sentence_has_nothing_beyond_it() -> None:
    """Words of no content left alone ("the", "it", punctuation, an emoji) are no rest: the
    entry gets no more lift than the same words without them (``_beyond``: nothing beyond
    them), not the cosine of "the" to the task."""
    task = "Renew the TLS certificate"
    assert beyond.without_words(task, [
        "Renew the TLS certificate.", "For the TLS certificate, renew it!! 😀",
        "Renew TLS certificate", "Renew the TLS certificate before Friday",
    ]) == ["", "", "", "the before Friday"]  # fmt: skip


def test_a_cosine_counts_at_most_words_lift_above_what_the_rest_says() -> None:
    """Held-out lessons v3's shape, by its measured cosines: the note for a neighbouring
    step repeats the task (cosine 0.81) and says little else (its rest 0.07); the lesson
    holds one word in seven (0.41, its rest 0.37). Capped at 0.42 the note no longer sets a
    bar the lesson misses. The exact answer of the opposite topics (0.79, rest 0.26) still
    shuts out the prominent entry on a neighbouring task (0.80, rest 0.08)."""
    note = candidate("note", "procedural", 1.0, 0.17, cosine=0.81)
    lesson = candidate("lesson", "corrective", 0.14, 8.6, cosine=0.41)
    assert [c.meta["id"] for c in order([note, lesson], "default")] == ["note", "lesson"]
    note.beyond, lesson.beyond = 0.07, 0.37
    assert note.match == pytest.approx(0.07 + ranking.WORDS_LIFT)
    assert lesson.match == pytest.approx(0.75 * 0.41 + 0.25 * 0.14)  # under its cap: whole
    assert [c.meta["id"] for c in order([note, lesson], "default")] == ["lesson", "note"]
    exact = candidate("exact", "procedural", 0.83, 0.13, cosine=0.79)
    neighbour = candidate("neighbour", "corrective", 0.67, 11.0, cosine=0.80)
    exact.beyond, neighbour.beyond = 0.26, 0.08
    assert [c.meta["id"] for c in order([exact, neighbour], "default")] == ["exact", "neighbour"]


def test_only_the_best_matching_entries_holding_task_words_are_looked_at() -> None:
    """A rest is embedded at query time: only for entries whose cap can bind (a cosine
    above ``WORDS_LIFT``) that restate the task (``RESTATES`` of its words), active, the
    best ``CHECKED``."""
    lift = ranking.WORDS_LIFT
    found = [candidate(f"c{i}", "procedural", beyond.RESTATES, 1.0, cosine=lift + i / 20)
             for i in range(1, 7)]  # fmt: skip
    others = [
        candidate("no words", "procedural", 0.0, 1.0, cosine=0.9),
        candidate("some words", "procedural", 0.75, 1.0, cosine=0.95),
        candidate("far", "procedural", 1.0, 1.0, cosine=lift),
        candidate("no vector", "procedural", 1.0, 1.0),
        candidate("retired", "procedural", 1.0, 0.0, cosine=0.9),
    ]
    checked = beyond.to_check(others + found)
    assert [c.meta["id"] for c in checked] == ["c6", "c5", "c4", "c3"][: beyond.CHECKED]


def test_an_exact_answer_holding_part_of_the_task_keeps_its_cosine() -> None:
    """Held-out lessons v5's refund topic, by its measured figures: the exact answer holds
    two thirds of the task's words and is close to it (0.68) by what it says of them (its
    rest 0.17); capped, it set a bar the prominent rule on a neighbouring task (0.47, a
    third of the words) cleared, and the rule came first. It does not restate the task,
    so its rest is not looked at; the note restating the task still is."""
    exact = candidate("exact", "procedural", 0.67, 0.22, cosine=0.68)
    rule = candidate("rule", "directive", 0.33, 8.0, cosine=0.47)
    note = candidate("note", "procedural", 1.0, 0.1, cosine=0.85)
    assert beyond.to_check([exact, rule, note]) == [note]
    rests = {"exact": 0.17, "rule": 0.16, "note": 0.05}
    for c in beyond.to_check([exact, rule]):  # as ``Learnings._beyond`` sets them
        c.beyond = rests[c.meta["id"]]
    assert [c.meta["id"] for c in order([exact, rule], "default")] == ["exact", "rule"]
    exact.beyond = rests["exact"]  # capped, as before: the rule clears the lowered bar
    assert [c.meta["id"] for c in order([exact, rule], "default")] == ["rule", "exact"]


NOTE = ("Payments gateway TLS certificate renewals are logged in the change calendar once "
        "they renew.")  # fmt: skip
CERT_LESSON = ("Before swapping a certificate, check that the full intermediate chain is "
               "bundled; a leaf-only cert broke every Android client last March.")  # fmt: skip
EXACT = ("To rotate the reporting service's API keys, create a replacement credential in Vault, "
         "redeploy with it, and revoke the old credential a day later.")  # fmt: skip
RULE = "Never paste API keys into tickets or chat; a leaked one cost us a weekend of cleanup."


async def test_with_vectors_a_note_close_only_by_the_task_words_does_not_set_the_bar(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real MiniLM vectors. The note repeats the task (cosine 0.71) and says nothing else
    of it (its rest 0.03); the lesson (0.47, rest 0.39) answers and comes first. Without
    the rests (none looked at, or the embedder failing on them) the note leads as before.
    The exact answer to another task still beats the prominent rule beside it."""
    path = settings.agent_dir / "learnings" / "ops.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([
        typed("note", "procedural", 0.3, 0, 120, NOTE),
        typed("lesson", "corrective", 0.9, 10, 3, CERT_LESSON),
        typed("exact", "procedural", 0.2, 0, 150, EXACT),
        typed("rule", "directive", 0.9, 11, 2, RULE),
    ]))  # fmt: skip
    async with embedded_service(settings, 4) as (svc, client):

        async def first(query: str) -> list[str]:
            asked = {"query": query, "mode": "hybrid", "scope": "agent", "limit": 2}
            resp = await client.post("/memory/learnings/search", json=asked)
            body = await resp.json()
            assert resp.status == 200 and body["mode"] == "hybrid", body
            return [h["id"] for h in body["hits"]]

        task = "Renew the TLS certificate for the payments gateway"
        assert await first(task) == ["lesson", "note"]
        assert (await first("Rotate the API keys of the reporting service"))[0] == "exact"
        assert svc.embeddings.vectors is not None
        embedder = svc.embeddings.vectors.embedder
        whole = embedder.embed

        def refuse_rests(texts: list[str]) -> Any:
            if texts != [task]:
                raise EmbedderRefused("refused")
            return whole(texts)

        monkeypatch.setattr(embedder, "embed", refuse_rests)
        assert await first(task) == ["note", "lesson"]  # answered, by whole cosines
        assert svc.embeddings.retrieval() == "hybrid"  # refused texts: not down
        monkeypatch.undo()
        monkeypatch.setattr(beyond, "CHECKED", 0)
        assert await first(task) == ["note", "lesson"]


async def test_rests_the_embedder_fails_on_are_reported_not_silently_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An OpenAI-compatible server over loopback answers the query and fails on the rests
    (the batch holding a word only the note's rest has; it answers NaN as Ollama does).
    The entries keep their whole cosines, and the answer and the log say why: the order
    may differ from the one the rests would give."""
    agent = tmp_path / "a"
    path = agent / "learnings" / "ops.md"
    path.parent.mkdir(parents=True)
    path.write_text(typed("note", "procedural", 0.3, 0, 20, "renew certificate gateway zebra"))
    with OllamaStub(dim=64, models=("m",)) as stub:
        settings = Settings(agent_dir=agent, crew_dir=tmp_path / "c", embedder="openai",
                            embed_url=stub.url + "/v1", embed_model="m")  # fmt: skip
        svc = MemoryService(settings)
        await svc.start()
        try:
            assert svc.embeddings.vectors is not None
            await svc.embeddings.vectors.wait_idle()
            stub.refuse_word = "zebra"
            async with TestClient(TestServer(create_app(svc), host="127.0.0.1")) as client:
                asked = {"query": "renew certificate gateway", "mode": "hybrid", "scope": "agent"}
                resp = await client.post("/memory/learnings/search", json=asked)
                body = await resp.json()
            assert resp.status == 200 and [h["id"] for h in body["hits"]] == ["note"], body
            assert ["zebra"] in [r["input"] for r in stub.requests]  # the rest was asked for
            assert any("beyond the task" in d and "NaN" in d for d in body["degraded"]), body
            assert "learnings: rests not embedded" in caplog.messages
        finally:
            await svc.stop()


async def test_a_member_embedding_through_its_lead_checks_rests_there_and_goes_on_without_it(
    tmp_path: Path, settings: Settings
) -> None:
    """``--embedder lead``: the member's rests go to the lead's model like its query. The
    lead's model failing on them, then the lead gone, each leave a 200 that says why."""
    from sidecar.api.crew import create_crew_app
    from tests.sidecar_process import free_port

    port, token = free_port(), "crew-token-for-lessons"
    path = tmp_path / "member" / "learnings" / "ops.md"
    path.parent.mkdir(parents=True)
    path.write_text(typed("note", "procedural", 0.3, 0, 20, "renew certificate gateway zebra"))
    member = MemoryService(Settings(
        agent_dir=tmp_path / "member", crew_dir=settings.crew_dir, reconcile_interval=3600,
        embedder="lead", lead_url=f"http://127.0.0.1:{port}", crew_token=token, embed_retry=0.05,
    ))  # fmt: skip
    with OllamaStub() as stub:
        lead = MemoryService(dataclasses.replace(settings, embedder="ollama", ollama_url=stub.url))
        await lead.start()
        server = TestServer(create_crew_app(lead, token), host="127.0.0.1", port=port)
        await server.start_server()
        await member.start()
        try:
            assert member.embeddings.vectors is not None
            await member.embeddings.vectors.wait_idle()
            async with TestClient(TestServer(create_app(member), host="127.0.0.1")) as client:

                async def search() -> dict[str, Any]:
                    asked = {"query": "renew certificate gateway", "scope": "agent"}
                    resp = await client.post("/memory/learnings/search", json=asked)
                    body = await resp.json()
                    assert resp.status == 200 and [h["id"] for h in body["hits"]] == ["note"]
                    return dict(body)

                body = await search()
                assert body["mode"] == "hybrid" and "degraded" not in body, body
                assert ["zebra"] in [r["input"] for r in stub.requests]  # the rest, at the lead
                stub.refuse_word = "zebra"
                body = await search()
                assert any("beyond the task" in d for d in body["degraded"]), body
                stub.refuse_word = None

                async def hybrid() -> bool:
                    return member.embeddings.retrieval() == "hybrid"

                await eventually(hybrid, "the member's retry through its lead")
                await server.close()
                body = await search()
                assert body["mode"] == "sparse", body
                assert any("crew lead" in d or "127.0.0.1" in d for d in body["degraded"]), body
        finally:
            await member.stop()
            await server.close()
            await lead.stop()
