"""How many traces people must label for a given precision: ``misstep plan``.

For one checkpoint with N judged wrong traces and n human labels drawn at random among them,
the ``ppi`` share of type t (``_ppi``, power tuning lam = C / V_f) has variance

    V_t(n) = C^2 / (V_f N) + V_y (1 - rho^2) / n

with V_y = Var(y_t), V_f = Var(f_t), C = Cov(y_t, f_t), rho their correlation (y: the human
type is t, f: the judge's type is t), all estimated on the pilot: the checkpoint's human
labels (weighted by their sampling weights), or every checkpoint's when the checkpoint has
fewer than ``MIN_PILOT``. The half-width is z * sqrt(V_t(n)); the plan takes, per checkpoint,
the smallest n that brings every type's half-width to at most H:

    n = max_t V_y (1 - rho^2) / ((H / z)^2 - C^2 / (V_f N)),

capped at N. Without a pilot it is the human-only worst case, V_y = 1/4 (a share of one
half): n = z^2 / (4 H^2). The plan ignores clustering by problem (the estimate's variance
counts it, so a run whose problems hold many traces of one type comes out somewhat wider);
``benchmarks/bench_estimators.py`` draws planned samples and measures the half-width they give.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel
from scipy import stats

__all__ = ["MIN_PILOT", "PlanRow", "labels_needed"]

Array = npt.NDArray[np.float64]

MIN_PILOT = 30
"""Fewest human labels of a checkpoint for its own pilot; fewer: every checkpoint's pooled."""


class PlanRow(BaseModel):
    """The label plan of one checkpoint."""

    checkpoint: str
    """Checkpoint."""
    human_labels_needed: int
    """Human labels needed in all (those already held included) for the half-width."""
    human_labels_held: int
    """Human-labelled traces of this checkpoint already held (with a judge type)."""
    expected_halfwidth: float
    """Largest expected half-width over the types with ``human_labels_needed`` labels."""
    n_judged: int
    """Judged wrong traces of the checkpoint (the most people can label)."""
    pilot: str
    """Where the agreement came from: ``checkpoint``, ``pooled`` (every checkpoint's human
    labels) or ``none`` (the human-only worst case)."""


def _moments(y: Array, f: Array, w: Array) -> tuple[Array, Array, Array]:
    """Weighted variances of y and f and their covariance, per type."""
    w = w / w.sum()
    yc = y - w @ y
    fc = f - w @ f
    return w @ (yc * yc), w @ (fc * fc), w @ (yc * fc)


def _halfwidth(n: int, vy: Array, vf: Array, c: Array, big_n: int, z: float) -> float:
    floor = np.divide(c * c, vf * big_n, out=np.zeros_like(c), where=vf > 0)
    resid = vy - np.divide(c * c, vf, out=np.zeros_like(c), where=vf > 0)
    return float(z * np.sqrt(floor + np.clip(resid, 0.0, None) / max(n, 1)).max())


def labels_needed(
    halfwidth: float,
    n_judged: int,
    *,
    y: Array | None = None,
    f: Array | None = None,
    weights: Array | None = None,
    level: float = 0.95,
) -> tuple[int, float]:
    """(labels needed, expected largest half-width with them) for one checkpoint of
    ``n_judged`` judged traces, from the pilot's one-hot human types ``y`` and judge types
    ``f`` (None: no pilot, the worst case)."""
    z = float(stats.norm.ppf(0.5 + level / 2))
    if y is None or f is None or len(y) == 0:
        n = min(n_judged, math.ceil(z * z / (4 * halfwidth * halfwidth)))
        return n, z * 0.5 / math.sqrt(max(n, 1))
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    vy, vf, c = _moments(y, f, w)
    floor = np.divide(c * c, vf * n_judged, out=np.zeros_like(c), where=vf > 0)
    resid = np.clip(vy - np.divide(c * c, vf, out=np.zeros_like(c), where=vf > 0), 0.0, None)
    room = (halfwidth / z) ** 2 - floor
    if (room <= 0).any():
        n = n_judged  # the judge's own sampling noise alone exceeds H
    else:
        n = min(n_judged, max(2, math.ceil(float((resid / room).max()))))
    return n, _halfwidth(n, vy, vf, c, n_judged, z)
