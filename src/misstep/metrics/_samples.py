"""One sample per problem: which checkpoints are greedy evaluations, and what that rules out.

A checkpoint has *one sample per problem* when none of its problems (dataset x problem_id)
has more than one sample: a greedy evaluation, or any harness output written with one
response per problem. There is then nothing to vote over: maj@k and sc_gain for k > 1,
pass@k for k > 1, majority-vote failures, answer entropy and agreement are not measured (not
zero), and ``link``, ``report`` and ``summary`` tell the accuracy-and-error-types story
instead (``ONE_SAMPLE_REASON`` says why, once). A run whose checkpoints all have one sample
is a ``one-sample`` run; one where some do and some do not is ``mixed`` (the vote story over
the checkpoints with several samples, accuracy and error types over all of them); else
``votes``.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

from misstep.metrics._counts import ProblemCounts, problem_counts
from misstep.metrics._order import order_checkpoints

__all__ = [
    "ONE_SAMPLE_REASON",
    "Story",
    "one_sample_checkpoints",
    "story_note",
    "story_of",
]

ONE_SAMPLE_REASON = "one sample per problem: majority voting needs several"
"""The one sentence every command and the report give for leaving the vote metrics out."""

Story = Literal["votes", "one-sample", "mixed"]
"""Which story a run's samples tell (see the module docstring)."""


def one_sample_checkpoints(graded: pd.DataFrame | ProblemCounts) -> list[str]:
    """The checkpoints none of whose problems has more than one sample, in checkpoint order
    (``order_checkpoints``); empty for an empty table."""
    counts = graded if isinstance(graded, ProblemCounts) else problem_counts(graded)
    problems = counts.problems
    if problems.empty:
        return []
    most = problems.groupby(problems["checkpoint"].astype(str), sort=False)["n"].max()
    single = {str(ck) for ck, n in most.items() if int(n) <= 1}
    return [ck for ck in order_checkpoints(problems) if ck in single]


def story_of(one_sample: list[str] | set[str], checkpoints: list[str]) -> Story:
    """``one-sample`` when every checkpoint is in ``one_sample``, ``mixed`` when some are,
    else ``votes``."""
    single = set(one_sample) & set(checkpoints)
    if not single:
        return "votes"
    return "one-sample" if len(single) == len(set(checkpoints)) else "mixed"


def story_note(story: Story, one_sample: list[str], checkpoints: list[str]) -> str | None:
    """The one note that says why the vote metrics are left out, and for which checkpoints
    (None for a ``votes`` run): every command that leaves them out prints this sentence."""
    if story == "one-sample":
        return (
            f"{ONE_SAMPLE_REASON}: maj@k, sc_gain, pass@k for k > 1, majority-vote failures "
            "and answer entropy are left out (not measured, not zero)"
        )
    if story == "mixed":
        single = [ck for ck in checkpoints if ck in set(one_sample)]
        rest = len(checkpoints) - len(single)
        return (
            f"{', '.join(single)}: {ONE_SAMPLE_REASON}; their vote metrics are left out "
            f"(the vote story covers the other {rest} checkpoint(s))"
        )
    return None
