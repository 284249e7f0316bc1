"""Consolidation scenarios, scripted: episodes, what the model answers, what must be true.

Each step records its episodes (``days_ago`` sets when they happened), then runs one
consolidation job whose answer is scripted the way a model would answer that prompt:
``{id:word}`` stands for the id the prompt showed for the fact containing "word"
(the stub fills it in), ``invented-...`` for an id the model made up. After the last
step, exactly ``active`` must be true, every sentence in ``invalid`` must have stopped
being true when the episode that ended it happened, and nothing is duplicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EPISODES = "__episodes__"


def N(category: str, fact: str, *keywords: str) -> dict[str, Any]:
    return {
        "action": "new",
        "existing_fact_id": None,
        "category": category,
        "fact": fact,
        "keywords": list(keywords),
        "episode_ids": [EPISODES],
    }


def U(word: str, category: str, fact: str, *keywords: str) -> dict[str, Any]:
    return {
        **N(category, fact, *keywords),
        "action": "update",
        "existing_fact_id": f"{{id:{word}}}",
    }


def R(word: str, category: str, fact: str) -> dict[str, Any]:
    return {**N(category, fact), "action": "reinforce", "existing_fact_id": f"{{id:{word}}}"}


def X(word: str, category: str, fact: str) -> dict[str, Any]:
    return {**N(category, fact), "action": "invalidate", "existing_fact_id": f"{{id:{word}}}"}


@dataclass
class Step:
    days_ago: float
    episodes: list[str]
    answer: list[dict[str, Any]]


@dataclass
class Scenario:
    name: str
    steps: list[Step]
    active: set[str]
    invalid: set[str] = field(default_factory=set)


S = Scenario
SCENARIOS = [
    S(
        "a user moves city",
        [
            Step(
                40,
                ["I live in Osaka now", "Osaka has great ramen", "Work is near Osaka station"],
                [N("identity", "The user lives in Osaka.", "Osaka")],
            ),
            Step(
                3,
                ["We moved to Tokyo", "The Tokyo flat is small", "New commute in Tokyo"],
                [U("Osaka", "identity", "The user lives in Tokyo.", "Tokyo")],
            ),
        ],
        {"The user lives in Tokyo."},
        {"The user lives in Osaka."},
    ),
    S(
        "a preference is reversed",
        [
            Step(
                30,
                ["I love dark mode", "Dark themes everywhere please", "Turn on dark mode"],
                [N("preference", "The user prefers dark mode.", "dark mode")],
            ),
            Step(
                2,
                ["Dark mode hurts my eyes now", "Switch me to light mode", "Light theme is better"],
                [U("dark", "preference", "The user prefers light mode.", "light mode")],
            ),
        ],
        {"The user prefers light mode."},
        {"The user prefers dark mode."},
    ),
    S(
        "a fact restated three ways",
        [
            Step(
                20,
                ["I am a nurse", "Night shift at the hospital", "Nursing is tiring"],
                [N("identity", "The user works as a nurse.", "nurse")],
            ),
            Step(
                10,
                ["As a nurse I rarely sleep", "Hospital again", "Ward rounds"],
                [N("identity", "The user works as a nurse", "nurse")],
            ),
            Step(
                1,
                ["Still nursing", "Shift swap", "Hospital life"],
                [N("identity", "the user works as a nurse.", "nursing")],
            ),
        ],
        {"The user works as a nurse."},
    ),
    S(
        "an unrelated fact survives an invalidation",
        [
            Step(
                15,
                ["I am vegetarian", "I like spicy food", "No meat for me"],
                [
                    N("preference", "The user is vegetarian.", "vegetarian"),
                    N("preference", "The user likes spicy food.", "spicy"),
                ],
            ),
            Step(
                1,
                ["I eat fish again", "Had salmon", "Not vegetarian any more"],
                [X("vegetarian", "preference", "The user is vegetarian.")],
            ),
        ],
        {"The user likes spicy food."},
        {"The user is vegetarian."},
    ),
    S(
        "an invented id on update becomes new",
        [
            Step(
                10,
                ["I have a dog called Miso", "Miso barks", "Walked Miso"],
                [N("identity", "The user has a dog called Miso.", "Miso")],
            ),
            Step(
                1,
                ["Got a cat too", "The cat is called Tofu", "Tofu sleeps all day"],
                [
                    {
                        **U("Tofu", "identity", "The user has a cat called Tofu.", "Tofu"),
                        "existing_fact_id": "invented-1234",
                    }
                ],
            ),
        ],
        {"The user has a dog called Miso.", "The user has a cat called Tofu."},
    ),
    S(
        "an invented id on invalidate touches nothing",
        [
            Step(
                10,
                ["I run every morning", "5k today", "Running shoes"],
                [N("interest", "The user runs every morning.", "running")],
            ),
            Step(
                1,
                ["Knee hurts", "Doctor visit", "Resting"],
                [{**X("x", "interest", "The user swims."), "existing_fact_id": "invented-9"}],
            ),
        ],
        {"The user runs every morning."},
    ),
    S(
        "reinforce adds sources, not facts",
        [
            Step(
                9,
                ["Tea please", "Green tea", "Tea time"],
                [N("preference", "The user prefers tea to coffee.", "tea")],
            ),
            Step(
                1,
                ["More tea", "No coffee", "Teapot"],
                [R("tea", "preference", "The user prefers tea to coffee.")],
            ),
        ],
        {"The user prefers tea to coffee."},
    ),
    S(
        "nothing lasting was said",
        [
            Step(1, ["ok", "thanks", "see you"], []),
        ],
        set(),
    ),
    S(
        "a job changes one fact twice: the second change is dropped",
        [
            Step(
                10,
                ["I use vim", "vim config", "vim plugins"],
                [N("preference", "The user edits code in vim.", "vim")],
            ),
            Step(
                1,
                ["Trying emacs", "Emacs org mode", "Back to vim? no, emacs"],
                [
                    U("vim", "preference", "The user edits code in emacs.", "emacs"),
                    X("vim", "preference", "The user edits code in vim."),
                ],
            ),
        ],
        {"The user edits code in emacs."},
        {"The user edits code in vim."},
    ),
    S(
        "two new copies in one answer are one fact",
        [
            Step(
                1,
                ["My name is Ana", "Call me Ana", "Ana here"],
                [
                    N("identity", "The user's name is Ana.", "Ana"),
                    N("identity", "The user's name is Ana", "Ana"),
                ],
            ),
        ],
        {"The user's name is Ana."},
    ),
    S(
        "an update to the same sentence is a reinforcement",
        [
            Step(
                10,
                ["I speak Portuguese", "Portuguese at home", "Falo português"],
                [N("identity", "The user speaks Portuguese.", "Portuguese")],
            ),
            Step(
                1,
                ["Portuguese again", "More Portuguese", "Still Portuguese"],
                [U("Portuguese", "identity", "The user speaks Portuguese.", "Portuguese")],
            ),
        ],
        {"The user speaks Portuguese."},
    ),
    S(
        "a guideline is learned",
        [
            Step(
                1,
                ["Stop apologising", "No apologies please", "Just answer"],
                [N("guideline", "The assistant should not apologise.", "apologies")],
            ),
        ],
        {"The assistant should not apologise."},
    ),
    S(
        "a guideline is relaxed",
        [
            Step(
                20,
                ["Answer only in English", "English please", "Only English"],
                [N("guideline", "The assistant answers only in English.", "English")],
            ),
            Step(
                1,
                ["Portuguese is fine too", "Você pode responder em português", "Either language"],
                [
                    U(
                        "English",
                        "guideline",
                        "The assistant may answer in English or Portuguese.",
                        "English",
                        "Portuguese",
                    )
                ],
            ),
        ],
        {"The assistant may answer in English or Portuguese."},
        {"The assistant answers only in English."},
    ),
    S(
        "a goal is reached",
        [
            Step(
                60,
                ["Training for a marathon", "Long run", "Race in May"],
                [N("goal", "The user is training for a marathon.", "marathon")],
            ),
            Step(
                1,
                ["Finished the marathon!", "4 hours 10", "Medal"],
                [
                    X("marathon", "goal", "The user is training for a marathon."),
                    N("experience", "The user has run a marathon.", "marathon"),
                ],
            ),
        ],
        {"The user has run a marathon."},
        {"The user is training for a marathon."},
    ),
    S(
        "a job changes",
        [
            Step(
                50,
                ["I work at Globex", "Globex office", "Globex team"],
                [N("experience", "The user works at Globex.", "Globex")],
            ),
            Step(
                1,
                ["First day at Initech", "Left Globex", "Initech onboarding"],
                [U("Globex", "experience", "The user works at Initech.", "Initech")],
            ),
        ],
        {"The user works at Initech."},
        {"The user works at Globex."},
    ),
    S(
        "several facts from one job",
        [
            Step(
                1,
                ["I'm Sam, 34, in Porto", "I like jazz", "I want to learn Japanese"],
                [
                    N("identity", "The user is called Sam.", "Sam"),
                    N("identity", "The user lives in Porto.", "Porto"),
                    N("interest", "The user likes jazz.", "jazz"),
                    N("goal", "The user wants to learn Japanese.", "Japanese"),
                ],
            ),
        ],
        {
            "The user is called Sam.",
            "The user lives in Porto.",
            "The user likes jazz.",
            "The user wants to learn Japanese.",
        },
    ),
    S(
        "a relationship routine",
        [
            Step(
                1,
                ["Every Monday we plan the week", "Monday planning again", "Planning Monday"],
                [
                    N(
                        "relationship",
                        "The user plans the week with the assistant on Mondays.",
                        "Monday",
                        "planning",
                    )
                ],
            ),
        ],
        {"The user plans the week with the assistant on Mondays."},
    ),
    S(
        "a personality trait, then reinforced twice",
        [
            Step(
                30,
                ["Be blunt with me", "I prefer directness", "Skip the fluff"],
                [N("personality", "The user prefers blunt, direct answers.", "direct")],
            ),
            Step(
                15,
                ["Direct again", "Be blunt", "No fluff"],
                [R("blunt", "personality", "The user prefers blunt, direct answers.")],
            ),
            Step(
                1,
                ["Blunt please", "Direct", "Short"],
                [R("blunt", "personality", "The user prefers blunt, direct answers.")],
            ),
        ],
        {"The user prefers blunt, direct answers."},
    ),
    S(
        "a move and an unrelated reinforcement in one job",
        [
            Step(
                20,
                ["I live in Lyon", "I cycle to work", "Lyon life"],
                [
                    N("identity", "The user lives in Lyon.", "Lyon"),
                    N("interest", "The user cycles to work.", "cycling"),
                ],
            ),
            Step(
                1,
                ["Moved to Paris", "Still cycling in Paris", "Paris bike lanes"],
                [
                    U("Lyon", "identity", "The user lives in Paris.", "Paris"),
                    R("cycles", "interest", "The user cycles to work."),
                ],
            ),
        ],
        {"The user lives in Paris.", "The user cycles to work."},
        {"The user lives in Lyon."},
    ),
    S(
        "an allergy is corrected",
        [
            Step(
                10,
                ["Allergic to nuts", "No peanuts", "Nut allergy"],
                [N("identity", "The user is allergic to nuts.", "nuts")],
            ),
            Step(
                1,
                ["Actually it's only peanuts", "Almonds are fine", "Peanuts only"],
                [U("nuts", "identity", "The user is allergic to peanuts only.", "peanuts")],
            ),
        ],
        {"The user is allergic to peanuts only."},
        {"The user is allergic to nuts."},
    ),
    S(
        "a tool preference with a duplicate new",
        [
            Step(
                10,
                ["I use pytest", "pytest fixtures", "pytest -x"],
                [N("preference", "The user tests Python code with pytest.", "pytest")],
            ),
            Step(
                1,
                ["pytest again", "pytest params", "pytest marks"],
                [N("preference", "The user tests Python code with pytest", "pytest")],
            ),
        ],
        {"The user tests Python code with pytest."},
    ),
    S(
        "a schedule changes twice",
        [
            Step(
                40,
                ["I work 9 to 5", "Office hours 9-5", "Leaving at 5"],
                [N("relationship", "The user works from 9:00 to 17:00.", "hours")],
            ),
            Step(
                20,
                ["Now 8 to 4", "Earlier shift", "Off at 4"],
                [U("9:00", "relationship", "The user works from 8:00 to 16:00.", "hours")],
            ),
            Step(
                1,
                ["Back to 10 to 6", "Late start", "Off at 6"],
                [U("8:00", "relationship", "The user works from 10:00 to 18:00.", "hours")],
            ),
        ],
        {"The user works from 10:00 to 18:00."},
        {"The user works from 9:00 to 17:00.", "The user works from 8:00 to 16:00."},
    ),
    S(
        "invalidate one of two similar facts",
        [
            Step(
                10,
                ["I have a sister in Rome", "And a brother in Oslo", "Family"],
                [
                    N("relationship", "The user has a sister in Rome.", "sister", "Rome"),
                    N("relationship", "The user has a brother in Oslo.", "brother", "Oslo"),
                ],
            ),
            Step(
                1,
                ["My brother moved away from Oslo", "He left Norway", "Brother gone"],
                [X("Oslo", "relationship", "The user has a brother in Oslo.")],
            ),
        ],
        {"The user has a sister in Rome."},
        {"The user has a brother in Oslo."},
    ),
    S(
        "a new fact worded like an old one in another category stays separate",
        [
            Step(
                10,
                ["I like chess", "Chess club", "Chess books"],
                [N("interest", "The user likes chess.", "chess")],
            ),
            Step(
                1,
                ["Won a chess tournament", "Trophy", "Chess win"],
                [N("experience", "The user won a chess tournament.", "chess")],
            ),
        ],
        {"The user likes chess.", "The user won a chess tournament."},
    ),
    S(
        "reinforce with an invented id becomes new",
        [
            Step(
                1,
                ["I collect stamps", "Stamps from Japan", "Album"],
                [
                    {
                        **R("stamps", "interest", "The user collects stamps."),
                        "existing_fact_id": "invented-77",
                    }
                ],
            ),
        ],
        {"The user collects stamps."},
    ),
    S(
        "a pet dies",
        [
            Step(
                30,
                ["My cat Luna", "Luna purrs", "Feeding Luna"],
                [N("identity", "The user has a cat called Luna.", "Luna")],
            ),
            Step(
                1,
                ["Luna passed away", "Sad week", "Miss Luna"],
                [X("Luna", "identity", "The user has a cat called Luna.")],
            ),
        ],
        set(),
        {"The user has a cat called Luna."},
    ),
    S(
        "a language goal becomes a skill",
        [
            Step(
                90,
                ["Learning German", "Duolingo German", "German class"],
                [N("goal", "The user is learning German.", "German")],
            ),
            Step(
                1,
                ["Passed the B2 German exam", "Certificate", "German B2"],
                [U("German", "experience", "The user speaks German at B2 level.", "German")],
            ),
        ],
        {"The user speaks German at B2 level."},
        {"The user is learning German."},
    ),
    S(
        "two tiers of time: a back-dated episode",
        [
            Step(
                100,
                ["I lived in Berlin in 2020", "Berlin flat", "Berlin job"],
                [N("identity", "The user lived in Berlin.", "Berlin")],
            ),
        ],
        {"The user lived in Berlin."},
    ),
    S(
        "a correction of a misheard name",
        [
            Step(
                5,
                ["I'm Jon", "Jon here", "This is Jon"],
                [N("identity", "The user's name is John.", "John")],
            ),
            Step(
                1,
                ["It's Jon, without h", "J-O-N", "Not John"],
                [U("John", "identity", "The user's name is Jon.", "Jon")],
            ),
        ],
        {"The user's name is Jon."},
        {"The user's name is John."},
    ),
    S(
        "a reversed then restored preference",
        [
            Step(
                30,
                ["Short answers please", "Be brief", "Brief"],
                [N("preference", "The user prefers short answers.", "short")],
            ),
            Step(
                15,
                ["Give me more detail", "Longer please", "Explain fully"],
                [U("short", "preference", "The user prefers detailed answers.", "detailed")],
            ),
            Step(
                1,
                ["Too long, short again", "Brief please", "Keep it short"],
                [U("detailed", "preference", "The user prefers short answers.", "short")],
            ),
        ],
        {"The user prefers short answers."},
        {"The user prefers detailed answers."},
    ),
    S(
        "a fact no episode supports is still dated by the job's episodes",
        [
            Step(
                2,
                ["We talked about hiking", "Alps trip", "Boots"],
                [
                    {
                        **N("interest", "The user likes hiking.", "hiking"),
                        "episode_ids": ["invented"],
                    }
                ],
            ),
        ],
        {"The user likes hiking."},
    ),
]
