"""heldout5: the fifth held-out set for knowledge updates and lessons (issue 33).

Written once v1 to v4 had been scored and turned into development data for the ranking, by
someone who read neither the ranking code nor any earlier set's contents: sixteen further
domains (fire station, ski resort, bakery chain, theatre company, fitness studio, recycling
plant, community garden, shipyard, radio station, auction house, climbing gym, print shop,
zoo, bike-share, sports league, call centre), the same format and scoring
(``heldout.run_version``), and 14 sanity questions, each followed by three events on its
subject that do not replace it. Score it once, at the end: ``python -m bench --only
heldout5``. ``--quick`` runs the smoke slice that only shows the files load and score.
"""

from __future__ import annotations

from bench import heldout
from bench.context import Context
from bench.report import BenchResult

NAME = "heldout5"
DESCRIPTION = "fifth held-out set of updates and lessons, written blind to ranking and v1-v4"


def run(ctx: Context) -> BenchResult:
    return heldout.run_version(ctx, NAME, "v5", heldout.UPDATES5, heldout.LESSONS5)
