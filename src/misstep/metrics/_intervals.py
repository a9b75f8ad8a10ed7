"""Intervals on vote metrics: a seeded percentile bootstrap over problems.

The estimand of a checkpoint's pass@k, maj@k or sc_gain@k is its value over the benchmark's
problem population and the model's sampling distribution. Each problem contributes one
unbiased per-problem value (pass@k and maj@k are U-statistics of its n samples), so the metric
is a mean over problems and its uncertainty is, first of all, which problems were drawn: the
bootstrap resamples problems (with replacement) and recomputes the mean. The within-problem
sampling noise is inside each resampled problem's value, so it is carried along.

Between two checkpoints the change is paired: over the problems both have, each problem's
difference is resampled, which removes the problems' shared difficulty from the noise. A
change whose 95% interval covers 0 is ``within noise``; otherwise ``up`` or ``down``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from misstep.metrics._bootstrap import LEVEL, bootstrap_means
from misstep.metrics._boundary import boundary_interval

__all__ = ["mean_ci", "share_ci", "verdict"]

FloatArray = npt.NDArray[np.float64]


def mean_ci(
    values: FloatArray,
    n_boot: int,
    rng: np.random.Generator,
    level: float = LEVEL,
    counts: npt.NDArray[np.int64] | None = None,
) -> tuple[float, float] | None:
    """Percentile interval of the mean of ``values`` (problems resampled); None for fewer
    than two problems, where no interval can be had. ``counts`` (from ``resample_counts``)
    reuses one resample for several metrics of the same items (all values finite)."""
    if counts is not None and len(values) >= 2 and np.isfinite(values).all():
        means = counts @ values / len(values)
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(means, [tail, 1.0 - tail])
        return float(low), float(high)
    finite = values[np.isfinite(values)]
    if len(finite) < 2:
        return None
    means = bootstrap_means(finite, n_boot, rng)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def share_ci(
    values: FloatArray,
    n_boot: int,
    rng: np.random.Generator,
    level: float = LEVEL,
    counts: npt.NDArray[np.int64] | None = None,
) -> tuple[float, float] | None:
    """``mean_ci`` of a share whose per-problem values lie in [0, 1] (pass@k, maj@k). Where
    every problem's value is 0 (or every one is 1), each resample repeats it and the
    bootstrap says [0, 0]; the exact bound over the problems is given instead. It is valid
    for values in [0, 1], not only 0 or 1: a problem is at 1 with probability at most the
    mean, so n problems all at 1 have probability at most mean^n (the same for 0)."""
    ci = mean_ci(values, n_boot, rng, level, counts)
    finite = values[np.isfinite(values)]
    if ci is not None and (np.all(finite == 0.0) or np.all(finite == 1.0)):
        return boundary_interval(float(finite[0]), len(finite), level)
    return ci


def verdict(ci: tuple[float, float] | None) -> str:
    """``up`` or ``down`` when the interval excludes 0, else ``within noise``."""
    if ci is None or ci[0] <= 0.0 <= ci[1]:
        return "within noise"
    return "up" if ci[0] > 0 else "down"
