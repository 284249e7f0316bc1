"""heldout2: the second held-out set for knowledge updates and lessons (issue 33).

Written after the first (``bench/heldout.py``, v1) had been scored and become development
data, by someone who read neither the ranking code nor any earlier set's contents; other
topics, the same format and the same scoring (``heldout.run_version``). Score it once, at
the end of a ranking change: ``python -m bench --only heldout2``. With ``--quick`` it runs a
smoke slice (three pairs, three lesson tasks) that only shows the files load and score.
"""

from __future__ import annotations

from bench import heldout
from bench.context import Context
from bench.report import BenchResult

NAME = "heldout2"
DESCRIPTION = "second held-out set of updates and lessons, written blind to ranking and v1"


def run(ctx: Context) -> BenchResult:
    return heldout.run_version(ctx, NAME, "v2", heldout.UPDATES2, heldout.LESSONS2)
