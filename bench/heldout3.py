"""heldout3: the third held-out set for knowledge updates and lessons (issue 33).

Written after v1 and v2 had been scored and become development data for the ranking, by
someone who read neither the ranking code nor any earlier set's contents: twelve other
domains (restaurant kitchen, water utility, film production, clinical trial ops,
open-source maintainership, construction site, airline crew scheduling, newsroom, farm,
university admissions, insurance claims, veterinary clinic), the same format and scoring
(``heldout.run_version``). Score it once, at the end: ``python -m bench --only heldout3``.
``--quick`` runs the smoke slice that only shows the files load and score.
"""

from __future__ import annotations

from bench import heldout
from bench.context import Context
from bench.report import BenchResult

NAME = "heldout3"
DESCRIPTION = "third held-out set of updates and lessons, written blind to ranking, v1 and v2"


def run(ctx: Context) -> BenchResult:
    return heldout.run_version(ctx, NAME, "v3", heldout.UPDATES3, heldout.LESSONS3)
