"""heldout4: the fourth held-out set for knowledge updates and lessons (issue 33).

Written after v1, v2 and v3 had been scored and become development data for the ranking, by
someone who read neither the ranking code nor any earlier set's contents: fourteen other
domains (hotel operations, public library, orchestra, mining site, shipping port, dental
practice, wind farm, museum curation, city transit, brewery, esports team, wedding planning,
data-center ops, real estate agency), the same format and scoring (``heldout.run_version``),
and more sanity questions than before (13), each with later events on its subject that do
not replace it. Score it once, at the end: ``python -m bench --only heldout4``. ``--quick``
runs the smoke slice that only shows the files load and score.
"""

from __future__ import annotations

from bench import heldout
from bench.context import Context
from bench.report import BenchResult

NAME = "heldout4"
DESCRIPTION = "fourth held-out set of updates and lessons, written blind to ranking and v1-v3"


def run(ctx: Context) -> BenchResult:
    return heldout.run_version(ctx, NAME, "v4", heldout.UPDATES4, heldout.LESSONS4)
