"""The analysis options (``--seed``, ``--estimator``, ``--simultaneous``) of summary, link and
report, bound whole to ``misstep.agreement.AnalysisConfig``: the config owns their defaults
and validation; a field it refuses is reported under its flag (``cli._errors.FIELD_FLAGS``).

The CLI starts without importing the analysis packages, so ``--estimator`` has its own enum
with the values of ``misstep.agreement.ESTIMATORS`` (``tests/cli/test_options.py`` holds the
two equal, default included)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.errors import OptionError

if TYPE_CHECKING:
    from misstep.agreement import AnalysisConfig

__all__ = [
    "DEFAULT_ESTIMATOR",
    "EstimatorChoice",
    "EstimatorOpt",
    "SimultaneousOpt",
    "analysis_config",
]


class EstimatorChoice(StrEnum):
    """``--estimator``: ``misstep.agreement.ESTIMATORS``, by value."""

    ppi = "ppi"
    pooled = "pooled"


DEFAULT_ESTIMATOR = EstimatorChoice.ppi
"""``misstep.agreement.DEFAULT_ESTIMATOR``, as the option's default."""

EstimatorOpt = Annotated[
    EstimatorChoice,
    typer.Option(
        "--estimator",
        metavar="NAME",
        help="How people's labels correct the judge's error-type shares: ppi (per checkpoint, "
        "from its own human labels; valid when the judge drifts) or pooled (one confusion "
        "matrix over all checkpoints, inverted; assumes the judge errs the same way at every "
        "checkpoint, and tests it). See docs/validation.md.",
    ),
]
SimultaneousOpt = Annotated[
    bool,
    typer.Option(
        "--simultaneous",
        metavar="",
        help="Also give intervals that hold for every type of a checkpoint at once "
        "(ppi: Gaussian max-|z| band; pooled: Bonferroni).",
    ),
]


def analysis_config(**fields: Any) -> AnalysisConfig:
    """``AnalysisConfig`` from the options given (by field name); a value it refuses is an
    ``OptionError`` on that field, which ``handles_errors`` reports under its flag."""
    from pydantic import ValidationError

    from misstep.agreement import AnalysisConfig

    try:
        return AnalysisConfig(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "config"
        raise OptionError(option=field, value=first.get("input"), allowed=first["msg"]) from None
