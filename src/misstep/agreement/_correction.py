"""``Pooled``: error-type distributions corrected for the judge's measured confusion, one
confusion matrix pooled over every human-labelled trace and inverted at every group.

Model: each wrong trace has a true type t (what a careful person says), drawn with the
distribution p; the judge says j with probability M[t, j]. So the judge's distribution is
q = M^T p. M is estimated on the human-labelled subset (rows: the human type, the human
consensus when several people labelled a trace; items weighted by their sampling ``weight``;
a small additive ``smoothing`` per cell keeps rows of unseen types defined), q is the share of
each type among the judge's ``ok`` labels of one group's wrong traces.

Estimator: least squares on the probability simplex, min ||M^T p - q||^2 subject to p >= 0 and
sum(p) = 1, solved exactly: the optimum is the equality-constrained solution on one face of the
simplex, so every face (support) is solved as a small linear system and the best feasible one
wins. That is exact, needs no iterations, and runs on a whole stack of bootstrap replicates at
once; it is used up to 12 categories, beyond which projected gradient descent (accelerated,
a fixed number of steps) takes over.

Interval: percentile bootstrap that resamples BOTH the human-labelled items (re-estimating M)
and the group's judge labels (re-estimating q), so it includes the uncertainty of M.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from misstep.agreement._config import AnalysisConfig, Estimator
from misstep.agreement._judge_only import JudgeOnly, percentile_cis
from misstep.agreement._shares import Group, ShareEstimate, ShareInputs
from misstep.errors import AnalysisError
from misstep.metrics import DEFAULT_N_BOOT, DEFAULT_SEED, LEVEL, resample_counts

__all__ = [
    "CorrectedDistribution",
    "Pooled",
    "correct_distribution",
    "estimate_confusion",
    "identified_categories",
    "simplex_lstsq",
]

Array = npt.NDArray[np.float64]

SMOOTHING = 0.01
"""Weight added to every cell of the confusion counts: it keeps rows of unseen types
defined."""


def estimate_confusion(
    human: Sequence[str],
    judge: Sequence[str],
    categories: Sequence[str],
    *,
    weights: Sequence[float] | Array | None = None,
    smoothing: float = SMOOTHING,
) -> Array:
    """Row-stochastic M[t, j] = P(judge says j | human says t), weighted, smoothed."""
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    w = np.ones(len(human)) if weights is None else np.asarray(weights, dtype=np.float64)
    counts = np.zeros((k, k))
    np.add.at(counts, ([index[h] for h in human], [index[j] for j in judge]), w)
    return _normalise_rows(counts + smoothing)


def _normalise_rows(counts: Array) -> Array:
    """Rows divided by their sums; a row with nothing in it becomes uniform."""
    sums = counts.sum(axis=-1, keepdims=True)
    k = counts.shape[-1]
    safe = np.where(sums > 0, sums, 1.0)
    out: Array = np.where(sums > 0, counts / safe, 1.0 / k)
    return out


def _project_simplex(v: Array) -> Array:
    """Euclidean projection of each row of (..., K) onto the probability simplex."""
    u = -np.sort(-v, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    ind = np.arange(1, v.shape[-1] + 1)
    rho = (u - css / ind > 0).sum(axis=-1, keepdims=True)
    theta = np.take_along_axis(css, rho - 1, axis=-1) / rho
    out: Array = np.maximum(v - theta, 0.0)
    return out


def _by_faces(q: Array, a: Array) -> Array:
    k = q.shape[-1]
    best = np.full(q.shape, np.nan)
    best_obj = np.full(q.shape[:-1], np.inf)
    for mask in range(1, 2**k):
        cols = [i for i in range(k) if mask >> i & 1]
        s = len(cols)
        a_s = a[..., :, cols]
        kkt = np.zeros((*q.shape[:-1], s + 1, s + 1))
        kkt[..., :s, :s] = 2.0 * np.swapaxes(a_s, -1, -2) @ a_s
        kkt[..., :s, s] = 1.0
        kkt[..., s, :s] = 1.0
        rhs = np.concatenate(
            [2.0 * np.einsum("...js,...j->...s", a_s, q), np.ones((*q.shape[:-1], 1))], axis=-1
        )
        try:
            sol = np.linalg.solve(kkt, rhs[..., None])[..., :s, 0]
        except np.linalg.LinAlgError:
            # A singular face (collinear columns of M): the least-norm solution still
            # gives its optimum.
            sol = np.einsum("...ij,...j->...i", np.linalg.pinv(kkt), rhs)[..., :s]
        feasible = (sol >= -1e-12).all(axis=-1) & (np.abs(sol.sum(axis=-1) - 1.0) < 1e-8)
        p = np.zeros(q.shape)
        p[..., cols] = np.clip(sol, 0.0, None)
        obj = ((np.einsum("...jt,...t->...j", a, p) - q) ** 2).sum(axis=-1)
        better = feasible & (obj < best_obj - 1e-15)
        best = np.where(better[..., None], p, best)
        best_obj = np.where(better, obj, best_obj)
    return best


def _by_gradient(q: Array, a: Array, steps: int = 3000) -> Array:
    lipschitz = 2.0 * np.linalg.norm(a, ord=2, axis=(-2, -1))[..., None]
    p = np.full(q.shape, 1.0 / q.shape[-1])
    y, t = p.copy(), 1.0
    for _ in range(steps):
        grad = 2.0 * np.einsum("...jt,...j->...t", a, np.einsum("...jt,...t->...j", a, y) - q)
        new = _project_simplex(y - grad / lipschitz)
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y = new + (t - 1.0) / t_new * (new - p)
        p, t = new, t_new
    return p


def simplex_lstsq(q: Array, m: Array) -> Array:
    """p on the simplex minimising ||M^T p - q||^2, for one (K,) / (K, K) pair or stacks
    (..., K) / (..., K, K) (rows of M: true type, columns: judge's type)."""
    shape = np.broadcast_shapes(q.shape, m.shape[:-1])
    q_b = np.broadcast_to(q, shape)
    a = np.broadcast_to(np.swapaxes(m, -1, -2), (*shape, shape[-1]))
    if shape[-1] <= 12:
        return _by_faces(q_b, a)
    return _by_gradient(q_b, a)


class CorrectedDistribution(BaseModel):
    """One group's error-type distribution as the judge gives it and corrected."""

    group: str
    """The group (e.g. ``checkpoint/dataset``)."""
    categories: list[str]
    """Taxonomy keys, in order."""
    n_judge: int
    """Wrong traces with an ``ok`` judge label in this group."""
    n_human: int
    """Human-labelled items the confusion matrix was estimated on (pooled over groups)."""
    raw: dict[str, float]
    """Share per type as the judge gives it."""
    raw_ci: dict[str, tuple[float, float] | None]
    """Bootstrap 95% interval of ``raw``."""
    corrected: dict[str, float | None] = Field(default_factory=dict)
    """Share per type corrected for the judge's confusion (empty without human labels); None
    for a type the confusion matrix does not identify (see ``not_identified``)."""
    corrected_ci: dict[str, tuple[float, float] | None] = Field(default_factory=dict)
    """Bootstrap 95% interval of ``corrected``, including the confusion's uncertainty."""
    not_identified: list[str] = Field(default_factory=list)
    """Types whose corrected share the human-labelled items cannot identify: no person gave
    the type, or the judge's answers for it can be mixed from other types' (the judge never
    uses the categories that would tell them apart)."""
    corrected_cov: list[list[float]] | None = None
    """Bootstrap covariance of the corrected shares (types in ``categories`` order)."""
    corrected_se: dict[str, float | None] = Field(default_factory=dict)
    """Bootstrap standard error of ``corrected``."""
    simultaneous_ci: dict[str, tuple[float, float] | None] = Field(default_factory=dict)
    """Bonferroni intervals over the identified types (each at level 1 - (1 - level) / K):
    they hold for every type at once."""
    method: str = "lstsq-simplex"
    """The estimator (see the module docstring)."""


def identified_categories(
    human: Sequence[str],
    judge: Sequence[str],
    categories: Sequence[str],
    *,
    weights: Sequence[float] | Array | None = None,
) -> list[bool]:
    """Per category: is its corrected share identified by these human-labelled items?

    The judge's distribution is q = M^T p. Rows of M that no person used are unknown, so those
    types are not identified. Among the rest, p_t is identified exactly when every vector of
    the null space of M^T (the directions along which p can move without changing q) is zero
    in coordinate t. M here is the unsmoothed estimate: smoothing would make any M invertible
    and hide the problem (a rules judge that says only two types cannot tell five apart)."""
    cats = list(categories)
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    w = np.ones(len(human)) if weights is None else np.asarray(weights, dtype=np.float64)
    counts = np.zeros((k, k))
    np.add.at(counts, ([index[h] for h in human], [index[j] for j in judge]), w)
    seen = counts.sum(axis=1) > 0
    out = [False] * k
    rows = np.flatnonzero(seen)
    if rows.size == 0:
        return out
    m = counts[rows] / counts[rows].sum(axis=1, keepdims=True)
    # null space of M_seen^T (k x r): right singular vectors beyond the rank
    _, s, vt = np.linalg.svd(m.T)
    tol = max(m.shape) * np.finfo(float).eps * (s[0] if s.size else 1.0) * 1e3
    rank = int((s > tol).sum())
    null = vt[rank:]
    for pos, row in enumerate(rows):
        out[int(row)] = bool(null.size == 0 or np.all(np.abs(null[:, pos]) < 1e-8))
    return out


def correct_distribution(
    judge_types: Sequence[str],
    human_pairs: Sequence[tuple[str, str]],
    categories: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    group: str = "all",
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = LEVEL,
    smoothing: float = SMOOTHING,
    strata: Sequence[str] | None = None,
    stratum_sizes: Mapping[str, int] | None = None,
    clusters: Sequence[str] | None = None,
) -> CorrectedDistribution:
    """One group's judge shares (``JudgeOnly``) and, with ``human_pairs`` ((human type, judge
    type) per human-labelled item, weighed by ``weights``), their pooled inversion
    (``Pooled``) as one record: for scripts and benchmarks that hold one group's labels in
    lists. With no pairs, only the raw distribution is given.

    With ``strata`` (the stratum of each judge label) and ``stratum_sizes`` (how many items
    each stratum holds, labelled or not), the labels are taken as a random sample within each
    stratum and the raw distribution is the stratified estimate ``sum_h (N_h / N) q_h`` over
    the strata with labels, its interval from a bootstrap within each stratum (design-based:
    a stratum labelled at a lower rate weighs by its size, not by its label count).

    With ``clusters`` (the problem of each judge label) the raw distribution's bootstrap
    resamples whole problems (within each stratum)."""
    cats = list(categories)
    n = len(judge_types)
    if n == 0:
        raise AnalysisError(f"group {group!r} has no judge labels to build a distribution from")
    config = AnalysisConfig(n_boot=n_boot, seed=seed, level=level)
    stratified = strata is not None and stratum_sizes is not None
    one = Group(
        checkpoint=group,
        dataset="",
        trace_ids=[str(i) for i in range(n)],
        types=list(judge_types),
        strata=list(strata) if strata is not None and stratified else ["all"] * n,
        sizes=dict(stratum_sizes) if stratum_sizes is not None and stratified else {"all": n},
        clusters=None if clusters is None else list(clusters),
    )
    judge = JudgeOnly(cats, config)
    raw = judge.estimate(one)
    result = CorrectedDistribution(
        group=group,
        categories=cats,
        n_judge=n,
        n_human=len(human_pairs),
        raw=dict(zip(cats, raw.shares.tolist(), strict=True)),
        raw_ci=raw.ci_dict(),
    )
    if not human_pairs:
        return result
    config = config.model_copy(update={"simultaneous": True})
    pooled = Pooled(cats, human_pairs, config, judge, weights=weights, smoothing=smoothing)
    fixed = pooled.estimate(one)
    result.corrected = fixed.as_dict()
    result.corrected_ci = fixed.ci_dict()
    result.not_identified = fixed.not_identified
    result.corrected_cov = fixed.cov.tolist()
    result.corrected_se = {
        c: (float(v) if np.isfinite(v) else None) for c, v in zip(cats, fixed.se, strict=True)
    }
    result.simultaneous_ci = dict(zip(cats, fixed.sim_ci or [], strict=True))
    return result


class Pooled:
    """The pooled inversion (module docstring): one confusion matrix over every
    human-labelled trace, inverted at every group; its replicates resample the human-labelled
    items (re-estimating M) and, through ``JudgeOnly``'s replicates, the group's judge labels.
    Types the human-labelled items do not identify have no share (NaN)."""

    name = Estimator.POOLED

    def __init__(
        self,
        categories: Sequence[str],
        pairs: Sequence[tuple[str, str]],
        config: AnalysisConfig,
        judge: JudgeOnly,
        *,
        weights: Sequence[float] | None = None,
        smoothing: float = SMOOTHING,
    ) -> None:
        cats = list(categories)
        k = len(cats)
        h = [x for x, _ in pairs]
        j = [y for _, y in pairs]
        w = np.ones(len(h)) if weights is None else np.asarray(weights, dtype=np.float64)
        self.categories = cats
        self.config = config
        self.judge = judge
        self.n_human = len(pairs)
        self.m = estimate_confusion(h, j, cats, weights=w, smoothing=smoothing)
        cells = np.zeros((len(h), k * k))
        index = {c: i for i, c in enumerate(cats)}
        cells[np.arange(len(h)), [index[a] * k + index[b] for a, b in pairs]] = w
        n_boot = config.n_boot
        counts = resample_counts(len(h), n_boot, np.random.default_rng(config.seed + 1))
        self.m_boot = _normalise_rows((counts @ cells).reshape(n_boot, k, k) + smoothing)
        self.ok = identified_categories(h, j, cats, weights=w)

    @classmethod
    def of(cls, inputs: ShareInputs, config: AnalysisConfig, judge: JudgeOnly) -> Pooled:
        """The pooled inversion of a run's people's labels (every shared trace)."""
        return cls(inputs.categories, inputs.pairs, config, judge, weights=inputs.weights)

    def estimate(self, group: Group) -> ShareEstimate:
        """The group's corrected shares: the judge's (``JudgeOnly``) through the inverse of
        the pooled confusion, with the bootstrap of both."""
        raw = self.judge.estimate(group)
        assert raw.draws is not None  # JudgeOnly always bootstraps
        level, ok = self.config.level, self.ok
        p = simplex_lstsq(raw.shares, self.m)
        p_boot = simplex_lstsq(raw.draws, self.m_boot)
        cis = percentile_cis(p_boot, level)
        sim = None
        if self.config.simultaneous:
            sim_cis = percentile_cis(p_boot, 1.0 - (1.0 - level) / max(sum(ok), 1))
            sim = [ci if good else None for ci, good in zip(sim_cis, ok, strict=True)]
        cats = self.categories
        return ShareEstimate(
            estimator=self.name,
            categories=cats,
            shares=np.where(ok, p, np.nan),
            cov=np.cov(p_boot, rowvar=False),
            se=np.where(ok, p_boot.std(axis=0), np.nan),
            ci=[ci if good else None for ci, good in zip(cis, ok, strict=True)],
            n=self.n_human,
            n_units=raw.n_units,
            draws=p_boot,
            sim_ci=sim,
            not_identified=[c for c, good in zip(cats, ok, strict=True) if not good],
        )
