"""Prediction-powered inference (PPI++) of the error-type shares of one group of wrong traces.

The judge typed every trace of the group (``f``: one-hot judge type); people typed a random
subset of them (``y``: one-hot human type, ``f`` of the same traces). The estimate of the
share vector is (Angelopoulos, Duchi and Zrnic 2023, "PPI++")

    theta = sum_i w_i lam f_i  +  sum_j v_j (y_j - lam f_j)

with ``w`` the normalised design weights of the judged traces (inverse label-budget inclusion
probability) and ``v`` those of the human-labelled ones (the ``weight`` of ``misstep sample``:
inverse inclusion probability of both draws). Both sums are Hajek means of unbiased
estimators, so theta is unbiased for the group's true shares whatever the judge does, and
whatever its confusion did at other checkpoints: only this group's human labels correct it.

Variance: linearisation. Every judged trace i contributes ``w_i lam (f_i - fbar)`` and every
human-labelled trace ``v_j ((y_j - ybar) - lam (f_j - fbar_L))``; the covariance of theta is
the sum of the outer products of these contributions, summed first within a cluster (a
problem) when clusters are given, times C/(C-1). The human-labelled traces are part of the
judged ones ("nested"), so their two terms share a cluster and the covariance between them is
counted. With ``lam = 0`` this is the human-only estimate with the same variance formula;
``lam`` per type minimises the estimated variance over [0, 1], which contains 0, so a PPI
interval is never wider than the human-only one (the power tuning of PPI++, coordinate-wise).

Not ppi-python: it imports numba at import time (seconds of start-up in every command), has no
clustered variance and no nested design; ``tests/agreement/test_ppi.py`` checks this code
against ``ppi_py.ppi_mean_ci`` on the disjoint design, where the two must agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from misstep.agreement._config import AnalysisConfig, Estimator
from misstep.agreement._shares import Group, NoEstimate, ShareEstimate, ShareInputs
from misstep.metrics import DEFAULT_SEED, LEVEL, boundary_interval

__all__ = ["MIN_PPI_HUMAN", "PPI", "PPIEstimate", "ppi_shares", "simultaneous_z"]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PPIEstimate:
    """Shares of K types with their covariance."""

    estimate: Array
    """(K,) point estimate (not clipped: may leave [0, 1] by sampling error)."""
    cov: Array
    """(K, K) estimated covariance of ``estimate``."""
    lam: Array
    """(K,) power-tuning parameter per type (0: human labels alone)."""
    n_human: int
    """Human-labelled traces used."""
    n_judged: int
    """Judged traces used."""

    @property
    def se(self) -> Array:
        """Standard errors."""
        out: Array = np.sqrt(np.clip(np.diag(self.cov), 0.0, None))
        return out

    def intervals(self, level: float = LEVEL, *, z: float | None = None) -> Array:
        """(K, 2) Wald intervals clipped to [0, 1] (``z``: a critical value, e.g. a
        simultaneous one). A type with zero estimated variance (every person gave it, or
        nobody did, and so did the judge) gets the exact Clopper-Pearson interval of the
        human labels alone instead of a zero-width one."""
        crit = float(stats.norm.ppf(0.5 + level / 2)) if z is None else z
        lo = self.estimate - crit * self.se
        hi = self.estimate + crit * self.se
        out = np.clip(np.stack([lo, hi], axis=1), 0.0, 1.0)
        for t in np.flatnonzero(self.se <= 1e-12):
            out[t] = boundary_interval(float(self.estimate[t]), self.n_human, level)
        return out


def _normalised(weights: Array | None, n: int) -> Array:
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    out: Array = w / w.sum()
    return out


def ppi_shares(
    y: Array,
    f_labelled: Array,
    f_judged: Array,
    *,
    labelled_index: npt.NDArray[np.int64] | None = None,
    w_labelled: Array | None = None,
    w_judged: Array | None = None,
    clusters: npt.NDArray[np.int64] | None = None,
    lam: float | Array | None = None,
) -> PPIEstimate:
    """PPI++ shares from ``y`` (n, K) human one-hot, ``f_labelled`` (n, K) the judge's one-hot
    of the same traces and ``f_judged`` (N, K) the judge's one-hot of every judged trace.

    ``labelled_index`` (n,): the row of ``f_judged`` each human-labelled trace is (-1: not
    among them; None: none is, the disjoint design of ppi-python). ``w_*``: design weights
    (None: equal). ``clusters`` (N,): a cluster id per judged trace (None: every trace its
    own). ``lam``: fixed power tuning (None: tuned per type)."""
    n, k = y.shape
    big_n = f_judged.shape[0]
    v = _normalised(w_labelled, n)
    w = _normalised(w_judged, big_n)
    fbar = w @ f_judged
    ybar = v @ y
    fbar_l = v @ f_labelled
    # contributions: alpha multiplies lam, beta does not
    alpha_j = w[:, None] * (f_judged - fbar)
    alpha_l = -v[:, None] * (f_labelled - fbar_l)
    beta_l = v[:, None] * (y - ybar)
    index = np.full(n, -1, dtype=np.int64) if labelled_index is None else labelled_index
    base = np.arange(big_n, dtype=np.int64) if clusters is None else np.asarray(clusters)
    _, judged_ids = np.unique(base, return_inverse=True)
    n_groups = int(judged_ids.max()) + 1 if big_n else 0
    lab_ids = np.where(index >= 0, judged_ids[np.clip(index, 0, None)], 0)
    extra = np.flatnonzero(index < 0)
    lab_ids[extra] = n_groups + np.arange(extra.size)
    c = n_groups + extra.size
    a = np.zeros((c, k))
    b = np.zeros((c, k))
    np.add.at(a, judged_ids, alpha_j)
    np.add.at(a, lab_ids, alpha_l)
    np.add.at(b, lab_ids, beta_l)
    scale = c / (c - 1) if clusters is not None and c > 1 else 1.0
    if lam is None:
        # per type, the lam in [0, 1] minimising sum_c (lam a_c + b_c)^2
        aa = (a * a).sum(axis=0)
        ab = (a * b).sum(axis=0)
        lam_v = np.clip(np.divide(-ab, aa, out=np.zeros(k), where=aa > 0), 0.0, 1.0)
    else:
        lam_v = np.broadcast_to(np.asarray(lam, dtype=np.float64), (k,)).copy()
    contrib = a * lam_v + b
    cov = scale * contrib.T @ contrib
    estimate = lam_v * fbar + (ybar - lam_v * fbar_l)
    return PPIEstimate(estimate=estimate, cov=cov, lam=lam_v, n_human=n, n_judged=big_n)


def simultaneous_z(
    cov: Array, level: float = LEVEL, *, draws: int = 100_000, seed: int = DEFAULT_SEED
) -> float:
    """Critical value c with P(max_t |Z_t| / sd_t <= c) = level for Z ~ N(0, cov): the
    Gaussian max-|z| (sup-t) band over the types, from seeded draws. Never above the Bonferroni
    value (taken when it is smaller, which only happens by Monte Carlo error)."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    keep = sd > 1e-12
    k = int(keep.sum())
    bonferroni = float(stats.norm.ppf(1 - (1 - level) / (2 * max(k, 1))))
    if k <= 1:
        return float(stats.norm.ppf(0.5 + level / 2))
    corr = cov[np.ix_(keep, keep)] / np.outer(sd[keep], sd[keep])
    vals, vecs = np.linalg.eigh(corr)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    z = np.random.default_rng(seed).standard_normal((draws, k)) @ root.T
    crit = float(np.quantile(np.abs(z).max(axis=1), level))
    return min(crit, bonferroni)


MIN_PPI_HUMAN = 10
"""Fewest human-labelled traces a group needs for a ``ppi`` share (its interval is a normal
approximation); fewer: no corrected share, and a note says to label more or use ``pooled``."""


class PPI:
    """Prediction-powered inference (PPI++) of a group's shares from the group's own human
    labels (module docstring): judged traces weigh by their stratum's wrong / judged (a label
    budget), human-labelled ones by their sampling weight; problems are the clusters."""

    name = Estimator.PPI

    def __init__(self, inputs: ShareInputs, config: AnalysisConfig) -> None:
        self.inputs = inputs
        self.config = config

    def estimate(self, group: Group) -> ShareEstimate | NoEstimate:
        """The group's PPI++ shares, or why not (fewer than ``MIN_PPI_HUMAN`` human labels)."""
        inputs, level = self.inputs, self.config.level
        ids = list(group.trace_ids)
        human_ids = [t for t in ids if t in inputs.people]
        if len(human_ids) < MIN_PPI_HUMAN:
            return NoEstimate(
                reason=f"{len(human_ids)} human-labelled trace(s) here, ppi needs "
                f"{MIN_PPI_HUMAN}: label more (misstep plan) or use --estimator pooled",
                n=len(human_ids),
            )
        cats = inputs.categories
        index = {c: i for i, c in enumerate(cats)}
        eye = np.eye(len(cats))
        f_all = eye[[index[t] for t in group.types]]
        clusters = None
        if group.clusters is not None:
            clusters = np.unique(list(group.clusters), return_inverse=True)[1].astype(np.int64)
        row = {t: i for i, t in enumerate(ids)}
        est = ppi_shares(
            eye[[index[inputs.people[t][0]] for t in human_ids]],
            eye[[index[inputs.judged[t]] for t in human_ids]],
            f_all,
            labelled_index=np.array([row[t] for t in human_ids], dtype=np.int64),
            w_labelled=np.array([inputs.people[t][1] for t in human_ids]),
            w_judged=group.design.weights,
            clusters=clusters,
        )
        sim: list[tuple[float, float] | None] | None = None
        if self.config.simultaneous:
            rows = est.intervals(level, z=simultaneous_z(est.cov, level))
            sim = [(float(lo), float(hi)) for lo, hi in rows]
        return ShareEstimate(
            estimator=self.name,
            categories=cats,
            shares=np.array([min(max(float(v), 0.0), 1.0) for v in est.estimate]),
            cov=est.cov,
            se=est.se,
            ci=[(float(lo), float(hi)) for lo, hi in est.intervals(level)],
            n=len(human_ids),
            n_units=group.n_units,
            sim_ci=sim,
        )
