"""Which k a run's samples allow: the one rule for pass@k, maj@k and every vote at a budget k.

- A k is *allowed* for a run when ``1 <= k <= max_samples``, the most samples any problem of
  the run has. A larger k is an ``OptionError`` whose hint names ks the data do allow.
- A checkpoint (x dataset) group *has a value* at an allowed k only when every one of its
  problems has at least k samples (``k_fits(k, fewest)``); elsewhere the value is None (shown
  ``n/a``) with a note, never a vote over fewer samples than it says.
- Without ``--k``, the ks are those of ``DEFAULT_KS`` at which some group has a value, i.e.
  up to ``fitting_samples`` (the most samples that every problem of some checkpoint x dataset
  has), or ``[1]`` (``default_ks``): a default never asks for a column that is ``n/a``
  everywhere.

``summary``, ``voting``, ``link``/``report`` (through ``vote_metrics``) and ``compare`` all
use these functions.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from misstep.errors import OptionError
from misstep.metrics._counts import ProblemCounts, problem_counts

__all__ = ["DEFAULT_KS", "check_ks", "default_ks", "fitting_samples", "k_fits", "max_samples"]

DEFAULT_KS = (1, 4, 16)
"""The ks every command uses when none is given, as far as the samples allow them."""


def max_samples(graded: pd.DataFrame | ProblemCounts) -> int:
    """The most samples any problem (checkpoint x dataset x problem_id) has; 0 when empty."""
    counts = graded if isinstance(graded, ProblemCounts) else problem_counts(graded)
    problems = counts.problems
    return 0 if problems.empty else int(problems["n"].max())


def fitting_samples(graded: pd.DataFrame | ProblemCounts) -> int:
    """The largest k at which some checkpoint x dataset has a value: over those groups, the
    most of their fewest samples on a problem; 0 when empty."""
    counts = graded if isinstance(graded, ProblemCounts) else problem_counts(graded)
    problems = counts.problems
    if problems.empty:
        return 0
    return int(problems.groupby(["checkpoint", "dataset"])["n"].min().max())


def default_ks(most: int) -> list[int]:
    """``DEFAULT_KS`` up to ``most`` (``fitting_samples`` of the run), or ``[1]``."""
    return [k for k in DEFAULT_KS if k <= most] or [1]


def k_fits(k: int, fewest: int) -> bool:
    """A group whose fewest samples on a problem is ``fewest`` has a value at ``k``."""
    return 1 <= k <= fewest


def check_ks(ks: Iterable[int], most: int) -> list[int]:
    """The requested ks, sorted and distinct, when ``most`` samples per problem allow every
    one; else an ``OptionError`` (field ``ks``) whose hint is ks that these samples allow
    (the requested ks that fit, and ``most`` itself)."""
    wanted = sorted({int(k) for k in ks})
    if not wanted:
        raise OptionError(option="ks", value=[], allowed="at least one k >= 1")
    if wanted[0] < 1:
        raise OptionError(option="ks", value=wanted[0], allowed="every k must be >= 1")
    if most and wanted[-1] > most:
        valid = sorted({k for k in wanted if k <= most} | {most})
        raise OptionError(
            option="ks",
            value=",".join(str(k) for k in wanted),
            allowed=f"k <= {most}, the most samples any problem has",
            hint="pass ks these samples allow, e.g. {option} " + ",".join(map(str, valid)),
        )
    return wanted
