"""heldout6: the sixth held-out set for knowledge updates and lessons (issue 33).

Written once v1 to v5 had been scored and turned into development data for the ranking, by
someone who read neither the ranking code nor any earlier set's contents: twenty further
domains (pharmacy, florist, marina, observatory, cinema chain, language school, pet grooming,
pottery studio, election office, blood bank, ferry service, makerspace, food bank, ice rink,
plant nursery, car rental, payroll bureau, podcast studio, translation agency, mobile app
release team), the same format and scoring (``heldout.run_version``), and 16 sanity
questions, each followed by three events on its subject that do not replace it. Score it
once, at the end: ``python -m bench --only heldout6``. ``--quick`` runs the smoke slice that
only shows the files load and score.
"""

from __future__ import annotations

from bench import heldout
from bench.context import Context
from bench.report import BenchResult

NAME = "heldout6"
DESCRIPTION = "sixth held-out set of updates and lessons, written blind to ranking and v1-v5"


def run(ctx: Context) -> BenchResult:
    return heldout.run_version(ctx, NAME, "v6", heldout.UPDATES6, heldout.LESSONS6)
