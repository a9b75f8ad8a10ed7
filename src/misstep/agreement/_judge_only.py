"""``JudgeOnly``: a group's error-type shares as the judge gives them, uncorrected.

Shares: the stratified estimate ``sum_h (N_h / N) q_h`` over the group's strata (datasets) with
labels, ``q_h`` the share of each type among stratum h's judge labels: a label budget samples
within each dataset, so a dataset labelled at a lower rate weighs by its size, not its label
count (the plain share of the labels when there is one stratum or every one is labelled at
the same rate).

Replicates and intervals: a seeded bootstrap within each stratum that resamples whole problems
(the samples of one problem tend to err alike; resampling their labels one by one made
intervals that covered a clustered truth 59-71% of the time instead of 95%,
tests/agreement/test_cluster_ci.py), percentile intervals of it; a share seen in none or all of
the labels gets the exact interval over the problems (``metrics.boundary_interval``).

Covariance: the linearisation of the ratio ``sum_i w_i f_i / sum_i w_i`` over problems (``w``
the design weights ``N_h / n_h``, ``f`` one-hot types): with ``x_p`` the weighted type counts
of problem p, ``m_p`` its weighted labels and ``r`` the ratio,
``P/(P-1) * sum_p (x_p - r m_p)(x_p - r m_p)^T / (sum_p m_p)^2`` over the P problems; NaN with
one problem. Its diagonal is the cluster-robust variance the shift tests of ``misstep.link``
use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from misstep.agreement._config import AnalysisConfig, Estimator
from misstep.agreement._shares import Group, ShareEstimate
from misstep.metrics import Strata, boundary_interval, percentile_ci

__all__ = ["JudgeOnly"]

Array = npt.NDArray[np.float64]


def onehot(labels: Sequence[str], categories: Sequence[str]) -> Array:
    """(n, K) one-hot rows of ``labels`` over ``categories``."""
    index = {c: i for i, c in enumerate(categories)}
    out = np.zeros((len(labels), len(categories)))
    out[np.arange(len(labels)), [index[x] for x in labels]] = 1.0
    return out


def _boot_shares(
    rows: Array, clusters: Sequence[str] | None, rng: np.random.Generator, n_boot: int
) -> Array:
    """Bootstrap replicates (``n_boot`` x categories) of the category shares of the one-hot
    ``rows``. With ``clusters`` (each label's problem) whole clusters are resampled; without
    them, or with fewer than two, the labels one by one (multinomial)."""
    n = rows.shape[0]
    inverse = (
        None
        if clusters is None
        else np.unique(np.asarray(clusters, dtype=str), return_inverse=True)[1]
    )
    c = 0 if inverse is None else int(inverse.max()) + 1
    if inverse is None or c < 2:
        labels: Array = rng.multinomial(n, rows.mean(axis=0), size=n_boot) / n
        return labels
    sums = np.zeros((c, rows.shape[1]))
    np.add.at(sums, inverse, rows)
    draws = rng.multinomial(c, np.full(c, 1.0 / c), size=n_boot).astype(np.float64)
    counts = draws @ sums
    # every label is one category, so a replicate's counts sum to its labels (never 0)
    shares: Array = counts / counts.sum(axis=1, keepdims=True)
    return shares


def stratified_shares(
    rows: Array,
    design: Strata,
    clusters: Sequence[str] | None,
    rng: np.random.Generator,
    n_boot: int,
) -> tuple[Array, Array]:
    """The stratified share estimate ``sum_h (N_h / N) q_h`` of the one-hot ``rows`` and its
    within-stratum bootstrap (``_boot_shares``)."""
    k = rows.shape[1]
    q = np.zeros(k)
    q_boot = np.zeros((n_boot, k))
    shares = design.shares
    for h, members in design.rows.items():
        part = rows[members]
        q += shares[h] * part.mean(axis=0)
        within = None if clusters is None else [clusters[i] for i in members]
        q_boot += shares[h] * _boot_shares(part, within, rng, n_boot)
    return q, q_boot


def percentile_cis(boot: Array, level: float) -> list[tuple[float, float] | None]:
    """The percentile interval of each column of ``boot``."""
    return [percentile_ci(boot[:, i], level) for i in range(boot.shape[1])]


def _linearised_cov(rows: Array, design: Strata, clusters: Sequence[str] | None) -> Array:
    """The covariance of the design-weighted shares by linearisation over the clusters (see
    the module docstring); NaN with fewer than two clusters."""
    weights = design.weights
    # Equal weights (one stratum, or every stratum labelled at the same rate) leave the
    # ratio as the plain share of the labels: counted, not weighted.
    weighted = rows if np.allclose(weights, weights[0]) else rows * weights[:, None]
    if clusters is None:
        x = weighted
    else:
        _, inverse = np.unique(np.asarray(clusters, dtype=str), return_inverse=True)
        x = np.zeros((int(inverse.max()) + 1, rows.shape[1]))
        np.add.at(x, inverse, weighted)
    m = x.sum(axis=1)
    total = m.sum()
    k, p = rows.shape[1], x.shape[0]
    if p < 2:
        return np.full((k, k), np.nan)
    r = x.sum(axis=0) / total
    resid = x - np.outer(m, r)
    products = (resid[:, :, None] * resid[:, None, :]).sum(axis=0)
    cov: Array = p / (p - 1) * products / total**2
    return cov


class JudgeOnly:
    """The judge's shares of a group, uncorrected (module docstring); computed once per
    group and estimator, as the corrections start from them."""

    name = Estimator.JUDGE

    def __init__(self, categories: Sequence[str], config: AnalysisConfig) -> None:
        self.categories = list(categories)
        self.config = config
        self._done: dict[int, tuple[Group, ShareEstimate]] = {}

    def estimate(self, group: Group) -> ShareEstimate:
        """The group's judge shares with their replicates, intervals and covariance."""
        done = self._done.get(id(group))
        if done is not None and done[0] is group:
            return done[1]
        config = self.config
        rows = onehot(group.types, self.categories)
        rng = np.random.default_rng(config.seed)
        q, q_boot = stratified_shares(rows, group.design, group.clusters, rng, config.n_boot)
        cis = percentile_cis(q_boot, config.level)
        for i in range(len(self.categories)):
            if q[i] <= 0.0 or q[i] >= 1.0:
                # every resample repeats a share seen in none or all of the labels
                cis[i] = boundary_interval(float(q[i]), group.n_units, config.level)
        cov = _linearised_cov(rows, group.design, group.clusters)
        out = ShareEstimate(
            estimator=self.name,
            categories=self.categories,
            shares=q,
            cov=cov,
            se=np.sqrt(np.clip(np.diag(cov), 0.0, None)),
            ci=cis,
            n=len(group.types),
            n_units=group.n_units,
            draws=q_boot,
        )
        self._done[id(group)] = (group, out)
        return out
