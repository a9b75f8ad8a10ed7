"""How an analysis estimates and states its uncertainty: the one source of its defaults.

``AnalysisConfig`` owns the settings every analysis command shares (``summary``, ``link``,
``report``, ``review``, ``sample``, ``plan``): the bootstrap's resamples and seed, the
intervals' level, the estimator of the error-type shares and whether to add simultaneous
intervals. Its fields validate themselves; the CLI builds it whole from its options and names
a field's flag when a value is refused (``misstep.cli``).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from misstep.metrics import DEFAULT_N_BOOT, DEFAULT_SEED, LEVEL

__all__ = ["DEFAULT_ESTIMATOR", "ESTIMATORS", "AnalysisConfig", "Estimator"]


class Estimator(StrEnum):
    """Which estimator makes a group's error-type shares; its value is what tables and JSON
    show (``error_dist_estimator``)."""

    JUDGE = "judge"
    """The judge's labels alone, uncorrected (``JudgeOnly``): every group's raw shares, and
    the only shares without people's labels."""
    PPI = "ppi"
    """Prediction-powered inference per group, from the group's own people's labels
    (``PPI``); valid whatever the judge's confusion does between checkpoints."""
    POOLED = "pooled"
    """One confusion matrix over every human-labelled trace, inverted at every group
    (``Pooled``); assumes the judge errs the same way at every checkpoint."""


ESTIMATORS: tuple[Estimator, ...] = (Estimator.PPI, Estimator.POOLED)
"""The estimators that correct the judge's shares with people's labels (``--estimator``)."""
DEFAULT_ESTIMATOR = Estimator.PPI
"""Chosen by ``benchmarks/bench_estimators.py`` (docs/validation.md): the pooled inversion's
intervals cover far below 95% when the judge's confusion drifts between checkpoints."""


class AnalysisConfig(BaseModel):
    """The settings every analysis shares; the defaults are every command's."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    n_boot: int = Field(default=DEFAULT_N_BOOT, ge=1)
    """Bootstrap resamples behind every bootstrap interval (count)."""
    level: float = Field(default=LEVEL, gt=0.0, lt=1.0)
    """Confidence level of every interval (share)."""
    seed: int = Field(default=DEFAULT_SEED, ge=0)
    """Seed of every random step (bootstraps, permutations, Monte Carlo)."""
    estimator: Estimator = DEFAULT_ESTIMATOR
    """How people's labels correct the judge's error-type shares (``judge``: they do not)."""
    simultaneous: bool = False
    """Also give intervals that hold for every type of a group at once."""
