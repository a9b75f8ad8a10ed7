"""The estimators of error-type shares by name: ``JudgeOnly`` always (the judge's own
shares), and the correction a run asks for (``AnalysisConfig.estimator``), so that a stored
name rebuilds the same estimator."""

from __future__ import annotations

from collections.abc import Callable

from misstep.agreement._config import AnalysisConfig, Estimator
from misstep.agreement._correction import Pooled
from misstep.agreement._judge_only import JudgeOnly
from misstep.agreement._ppi import PPI
from misstep.agreement._shares import ShareEstimator, ShareInputs

__all__ = ["CORRECTIONS", "correction_for"]


def _ppi(inputs: ShareInputs, config: AnalysisConfig, judge: JudgeOnly) -> ShareEstimator:
    return PPI(inputs, config)


CORRECTIONS: dict[Estimator, Callable[[ShareInputs, AnalysisConfig, JudgeOnly], ShareEstimator]]
CORRECTIONS = {Estimator.PPI: _ppi, Estimator.POOLED: Pooled.of}
"""Estimator -> how to build it from a run's labels, its config and the run's ``JudgeOnly``
(whose shares a correction may start from). ``judge`` has none: nothing is corrected."""


def correction_for(
    estimator: Estimator, inputs: ShareInputs, config: AnalysisConfig, judge: JudgeOnly
) -> ShareEstimator | None:
    """The estimator that corrects the judge's shares, or None: ``judge`` asked for, or no
    people's labels of judged traces to correct them with."""
    make = CORRECTIONS.get(estimator)
    if make is None or not (inputs.has_human and inputs.pairs):
        return None
    return make(inputs, config, judge)
