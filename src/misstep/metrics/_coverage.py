"""Which problems each checkpoint solves, and how that set moves along the run.

A problem is a (dataset, problem_id) pair; ``n_problems`` counts every problem seen at any
checkpoint. S_t is the set of problems checkpoint t *solves*: at least one correct sample.
Checkpoints are in ``order_checkpoints`` order.

- ``jaccard[i][j]`` = |S_i ∩ S_j| / |S_i ∪ S_j| (null when both sets are empty).
- between consecutive checkpoints (null for the first): ``retention`` = |S_t ∩ S_t-1| /
  |S_t-1| (null when S_t-1 is empty), ``acquisition`` = |S_t \\ S_t-1| / n_problems,
  ``forgetting`` = |S_t-1 \\ S_t| / n_problems.
- ``union_coverage`` = |∪_t S_t| / n_problems: solved by at least one checkpoint, using every
  checkpoint's samples.
- ``union_coverage_at_budget``: the same at the sample budget of *one* checkpoint. For each
  problem, B = the fewest samples any checkpoint has of it, split over the T checkpoints that
  sampled it in checkpoint order: floor(B/T) each, one more for the first B mod T. The
  probability that at least one drawn sample is correct is then exact and unbiased:
  1 - prod_t C(n_t - c_t, b_t) / C(n_t, b_t) (a product of hypergeometric misses); the
  reported value is its mean over problems.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from misstep.metrics._counts import ProblemCounts, problem_counts
from misstep.metrics._order import order_checkpoints

__all__ = ["Coverage", "coverage"]


class Coverage(BaseModel):
    """Coverage of a run across checkpoints (see the module docstring for definitions)."""

    model_config = ConfigDict(frozen=True)

    checkpoints: list[str]
    """Checkpoints in training order."""
    n_problems: int
    """Distinct (dataset, problem_id) pairs seen at any checkpoint."""
    solved: list[int]
    """|S_t| per checkpoint."""
    jaccard: list[list[float | None]]
    """Jaccard similarity of the solved sets, in checkpoint order."""
    retention: list[float | None]
    """|S_t ∩ S_t-1| / |S_t-1|; null for the first checkpoint or an empty S_t-1."""
    acquisition: list[float | None]
    """|S_t \\ S_t-1| / n_problems; null for the first checkpoint."""
    forgetting: list[float | None]
    """|S_t-1 \\ S_t| / n_problems; null for the first checkpoint."""
    union_coverage: float
    """Share of problems solved by at least one checkpoint."""
    union_coverage_at_budget: float
    """Expected union coverage at one checkpoint's sample budget split across checkpoints."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``misstep coverage --format json``."""
        return self.model_dump()


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _budget_coverage(problems: pd.DataFrame, order: list[str]) -> float:
    rank = {name: i for i, name in enumerate(order)}
    table = problems.assign(rank=problems["checkpoint"].map(rank)).sort_values(
        ["dataset", "problem_id", "rank"]
    )
    total, n_problems = 0.0, 0
    for _, group in table.groupby(["dataset", "problem_id"], sort=False):
        n = group["n"].to_numpy(np.int64)
        c = group["c"].to_numpy(np.int64)
        budget, spread = int(n.min()), len(n)
        miss = 1.0
        for i, (n_t, c_t) in enumerate(zip(n, c, strict=True)):
            b_t = budget // spread + (1 if i < budget % spread else 0)
            miss *= math.comb(int(n_t - c_t), b_t) / math.comb(int(n_t), b_t)
        total += 1.0 - miss
        n_problems += 1
    return total / n_problems if n_problems else 0.0


def coverage(graded: pd.DataFrame | ProblemCounts) -> Coverage:
    """Solved sets per checkpoint, their overlap, and union coverage."""
    counts = graded if isinstance(graded, ProblemCounts) else problem_counts(graded)
    problems = counts.problems
    order = order_checkpoints(problems)
    keys = problems["dataset"] + "\x1f" + problems["problem_id"]
    n_problems = int(keys.nunique())
    solved_mask = problems["c"].to_numpy() > 0
    sets: list[set[str]] = [set() for _ in order]
    position = {name: i for i, name in enumerate(order)}
    for name, key in zip(problems["checkpoint"][solved_mask], keys[solved_mask], strict=True):
        sets[position[name]].add(key)

    jaccard = [[_ratio(len(a & b), len(a | b)) for b in sets] for a in sets]
    retention: list[float | None] = [None]
    acquisition: list[float | None] = [None]
    forgetting: list[float | None] = [None]
    for before, after in itertools.pairwise(sets):
        retention.append(_ratio(len(after & before), len(before)))
        acquisition.append(_ratio(len(after - before), n_problems))
        forgetting.append(_ratio(len(before - after), n_problems))
    union = set().union(*sets) if sets else set()
    return Coverage(
        checkpoints=order,
        n_problems=n_problems,
        solved=[len(s) for s in sets],
        jaccard=jaccard,
        retention=retention,
        acquisition=acquisition,
        forgetting=forgetting,
        union_coverage=len(union) / n_problems if n_problems else 0.0,
        union_coverage_at_budget=_budget_coverage(problems, order),
    )
