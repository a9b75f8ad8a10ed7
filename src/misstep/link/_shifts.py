"""Shift of the error-type distribution of wrong traces between consecutive checkpoints.

Link estimates no share itself: each checkpoint's shares, intervals and variances are its
error distribution's (``misstep.agreement.ErrorDistribution``: ``judge_estimate``, and
``corrected_estimate`` with people's labels), the ones ``summary`` shows
(``checkpoint_shares``). Traces of one problem are not independent (a problem that draws a
consistent wrong answer draws many traces of one type), so every uncertainty treats the
*problem* as the unit.

Without corrected shares (the judge's, ``JudgeOnly``: stratified by dataset under a label
budget, with the variance of its linearisation over problems):

- the per-pair omnibus test is scipy's Pearson chi-square on the 2 x T table of shares x labels,
  divided by a first-order Rao-Scott design effect (the mean, over types and both checkpoints, of
  the estimator's variance / multinomial variance, never below 1) before taking its p-value;
- the per-type change ``share_b - share_a`` is a two-sided z test with the two variances
  (checkpoints treated as independent samples of problems, which is conservative when a
  problem's mix persists between checkpoints).

With people's labels the shares are the corrected ones (``ppi`` or ``pooled``) and so are the
tests (``estimator_shifts``): the per-type change is a two-sided z test of ``share_b - share_a``
with the two estimates' variances, the omnibus a Wald test of the whole vector with the sum of
the two covariances (pseudo-inverse; dof its rank).

For every estimator the interval of a change is that z test's, ``delta +- z se`` at the
analysis's level (``z`` 1.96 at 95%): it excludes 0 exactly when the unadjusted p-value is
below 1 - level.
The checkpoints' ``ppi`` estimates are independent (separate traces and human labels); the
``pooled`` ones share one confusion matrix, so adding their covariances overstates the
variance of a difference (conservative).

p-values are Benjamini-Hochberg adjusted (statsmodels ``multipletests``, ``fdr_bh``): omnibus
tests across all pairs; per-type tests across all pairs x types. The Jensen-Shannon divergence is
``scipy.spatial.distance.jensenshannon(p, q, base=2) ** 2`` (the divergence, not the distance),
in [0, 1]. A pair where either checkpoint has fewer than ``MIN_LABELLED`` labelled wrong traces or
fewer than ``MIN_PROBLEMS`` problems with one is not tested (``p_value`` None, ``note`` says why).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel
from scipy import stats
from scipy.spatial.distance import jensenshannon
from statsmodels.stats.multitest import multipletests

from misstep.metrics import LEVEL

if TYPE_CHECKING:
    from misstep.agreement import ErrorDistribution

__all__ = [
    "MIN_LABELLED",
    "MIN_PROBLEMS",
    "CheckpointShares",
    "Shift",
    "TypeChange",
    "bh_adjust",
    "checkpoint_shares",
    "distribution_shifts",
    "estimator_shifts",
]

MIN_LABELLED = 20
MIN_PROBLEMS = 5
_CLUSTER = ["dataset", "problem_id"]


def bh_adjust(p_values: list[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values; None entries stay None and are not counted."""
    idx = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if not idx:
        return out
    adj = multipletests([p_values[i] for i in idx], method="fdr_bh")[1]
    for i, a in zip(idx, adj, strict=True):
        out[i] = float(a)
    return out


class CheckpointShares(BaseModel):
    """One checkpoint's error-type shares as its estimator gives them
    (``misstep.agreement.ErrorDistribution.estimate``): link estimates nothing itself."""

    checkpoint: str
    """Checkpoint name."""
    n_labelled: int
    """Labelled wrong traces."""
    n_problems: int
    """Problems with at least one labelled wrong trace."""
    shares: dict[str, float]
    """Share per type: the corrected ones where people's labels correct them, else the
    judge's (``JudgeOnly``); zeros without labels."""
    ci: dict[str, tuple[float, float]]
    """The interval of each share, as ``summary`` shows it."""
    variance: dict[str, float]
    """Variance of the judge's share of each type (``JudgeOnly``'s covariance: over
    problems, by linearisation): the uncorrected shift tests use it."""


class TypeChange(BaseModel):
    """The change of one type's share between two consecutive checkpoints."""

    error_type: str
    """Taxonomy key."""
    share_before: float
    """Share at the earlier checkpoint."""
    share_after: float
    """Share at the later checkpoint."""
    delta: float
    """``share_after - share_before``."""
    ci: tuple[float, float] | None
    """Interval of ``delta`` at the analysis's level (95% by default): the z test's,
    ``delta +- z se``, with the estimators' variances."""
    cohen_h: float
    """Effect size ``2 asin sqrt(after) - 2 asin sqrt(before)``."""
    p_value: float | None
    """Two-sided z-test p-value, BH-adjusted across all pairs x types."""
    p_raw: float | None
    """The same p-value before adjustment."""


class Shift(BaseModel):
    """Distribution shift between two consecutive checkpoints."""

    before: str
    """Earlier checkpoint."""
    after: str
    """Later checkpoint."""
    chi2: float | None
    """Rao-Scott corrected chi-square statistic."""
    dof: int | None
    """Degrees of freedom (types present - 1)."""
    design_effect: float | None
    """Divisor applied to Pearson's statistic (>= 1)."""
    p_value: float | None
    """Omnibus p-value, BH-adjusted across pairs."""
    p_raw: float | None
    """Omnibus p-value before adjustment."""
    jsd: float | None
    """Jensen-Shannon divergence (base 2, squared distance), in [0, 1]."""
    changes: list[TypeChange]
    """Per-type change, in type order."""
    note: str | None = None
    """Why the pair was not tested, when it was not."""


def checkpoint_shares(
    dists: Mapping[str, ErrorDistribution], checkpoints: list[str], types: list[str]
) -> list[CheckpointShares]:
    """Per checkpoint, its shares, intervals and the judge's variances of ``types``, all from
    its error distribution's estimates (``dists``: by checkpoint)."""
    out: list[CheckpointShares] = []
    for ck in checkpoints:
        d = dists.get(ck)
        judged = None if d is None else d.judge_estimate
        if d is None or judged is None:
            zeros = dict.fromkeys(types, 0.0)
            out.append(
                CheckpointShares(
                    checkpoint=ck, n_labelled=0, n_problems=0, shares=zeros, ci={}, variance=zeros
                )
            )
            continue
        at = {c: i for i, c in enumerate(judged.categories)}
        if d.error_dist_corrected is not None:
            shares = {t: v for t, v in d.error_dist_corrected.items() if v is not None}
            ci = {t: c for t, c in (d.error_dist_ci or {}).items() if c is not None}
        else:
            shares = {t: v for t, v in (d.error_dist or {}).items() if t in types}
            ci = {t: c for t, c in (d.error_dist_raw_ci or {}).items() if c is not None}
        out.append(
            CheckpointShares(
                checkpoint=ck,
                n_labelled=judged.n,
                n_problems=judged.n_units,
                shares=shares,
                ci=ci,
                variance={t: float(judged.cov[at[t], at[t]]) for t in types},
            )
        )
    return out


def _omnibus(
    a: CheckpointShares, b: CheckpointShares, types: list[str]
) -> tuple[float, int, float, float]:
    """Rao-Scott corrected chi-square: statistic, dof, design effect, raw p-value."""
    present = [t for t in types if a.shares[t] + b.shares[t] > 0]
    # shares x labels: the counts themselves, or the design-weighted ones under a label budget
    table = np.array(
        [[cs.shares[t] * cs.n_labelled for t in present] for cs in (a, b)], dtype=float
    )
    pearson, _, dof, _ = stats.chi2_contingency(table, correction=False)
    deffs = []
    for cs in (a, b):
        for t in present:
            r = cs.shares[t]
            if 0 < r < 1 and np.isfinite(cs.variance[t]):
                deffs.append(cs.variance[t] / (r * (1 - r) / cs.n_labelled))
    deff = max(1.0, float(np.mean(deffs))) if deffs else 1.0
    stat = float(pearson) / deff
    return stat, int(dof), deff, float(stats.chi2.sf(stat, dof))


def _jsd(pa: np.ndarray, pb: np.ndarray) -> float:
    """Jensen-Shannon divergence (base 2). For equal shares scipy's sum can round to a tiny
    negative number under its square root (a RuntimeWarning and NaN): that is 0."""
    with np.errstate(invalid="ignore"):
        distance = float(jensenshannon(pa, pb, base=2))
    if not np.isfinite(distance) and np.allclose(pa, pb):
        return 0.0
    return distance**2


def _critical(level: float) -> float:
    """The two-sided normal critical value of ``level`` (1.96 at 0.95)."""
    return float(stats.norm.ppf(0.5 + level / 2))


def distribution_shifts(
    shares: list[CheckpointShares], types: list[str], *, level: float = LEVEL
) -> list[Shift]:
    """Shifts between consecutive checkpoints of ``shares`` (in checkpoint order); intervals
    of the changes at ``level``."""
    z = _critical(level)
    shifts: list[Shift] = []
    for a, b in itertools.pairwise(shares):
        few = [
            cs.checkpoint
            for cs in (a, b)
            if cs.n_labelled < MIN_LABELLED or cs.n_problems < MIN_PROBLEMS
        ]
        changes = []
        # A checkpoint without labels has no distribution: nothing changed "by 0 pp".
        for t in types if a.n_labelled and b.n_labelled else []:
            ra, rb = a.shares[t], b.shares[t]
            p_raw: float | None = None
            ci: tuple[float, float] | None = None
            if not few:
                se = float(np.sqrt(a.variance[t] + b.variance[t]))
                p_raw = (
                    1.0
                    if se == 0 or not np.isfinite(se)
                    else float(2 * stats.norm.sf(abs(rb - ra) / se))
                )
                # the z test's interval: it excludes 0 exactly when p_raw < 1 - level
                ci = (rb - ra - z * se, rb - ra + z * se) if np.isfinite(se) else None
            h = 2 * np.arcsin(np.sqrt(rb)) - 2 * np.arcsin(np.sqrt(ra))
            changes.append(
                TypeChange(
                    error_type=t,
                    share_before=ra,
                    share_after=rb,
                    delta=rb - ra,
                    ci=ci,
                    cohen_h=float(h),
                    p_value=p_raw,
                    p_raw=p_raw,
                )
            )
        if few:
            note = (
                f"too few data at {', '.join(few)}: each checkpoint needs at least "
                f"{MIN_LABELLED} labelled wrong traces over {MIN_PROBLEMS} problems"
            )
            shifts.append(_untested(a, b, changes, note, jsd=None))
            continue
        present = [t for t in types if a.shares[t] + b.shares[t] > 0]
        if len(present) < 2:
            # one type at both checkpoints (a judge that types one class, the rules judge's
            # arithmetic, the rest not typed): no mix can shift, and a chi-square has no df
            note = (
                "the typed traces hold one type at both checkpoints ("
                + (", ".join(present) or "none")
                + "): no shift of the mix to test (traces not typed are no type)"
            )
            shifts.append(_untested(a, b, changes, note, jsd=0.0))
            continue
        stat, dof, deff, p = _omnibus(a, b, types)
        pa = np.array([a.shares[t] for t in types])
        pb = np.array([b.shares[t] for t in types])
        shifts.append(
            Shift(
                before=a.checkpoint,
                after=b.checkpoint,
                chi2=stat,
                dof=dof,
                design_effect=deff,
                p_value=p,
                p_raw=p,
                jsd=_jsd(pa, pb),
                changes=changes,
            )
        )
    # Adjust: omnibus across pairs, per-type across pairs x types.
    for s, adj in zip(shifts, bh_adjust([s.p_raw for s in shifts]), strict=True):
        s.p_value = adj
    flat = [c for s in shifts for c in s.changes]
    for c, adj in zip(flat, bh_adjust([c.p_raw for c in flat]), strict=True):
        c.p_value = adj
    return shifts


def _untested(
    a: CheckpointShares,
    b: CheckpointShares,
    changes: list[TypeChange],
    note: str,
    *,
    jsd: float | None,
) -> Shift:
    """A shift between ``a`` and ``b`` with no omnibus test, and why (``note``)."""
    return Shift(
        before=a.checkpoint,
        after=b.checkpoint,
        chi2=None,
        dof=None,
        design_effect=None,
        p_value=None,
        p_raw=None,
        jsd=jsd,
        changes=changes,
        note=note,
    )


def _vector(d: ErrorDistribution | None, types: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The corrected shares of ``types`` and their covariance, or None without them."""
    if d is None or d.error_dist_corrected is None or d.error_dist_cov is None:
        return None
    order = list(d.error_dist_corrected)
    idx = [order.index(t) for t in types]
    cov = np.asarray(d.error_dist_cov, dtype=float)[np.ix_(idx, idx)]
    return np.array([float(d.error_dist_corrected[t] or 0.0) for t in types]), cov


def _estimator_pair(
    before: str,
    after: str,
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
    types: list[str],
    z: float,
) -> Shift:
    """The Wald and per-type z tests of one pair from the estimates and covariances."""
    delta = b[0] - a[0]
    cov = a[1] + b[1]
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    changes = []
    for j, t in enumerate(types):
        p_raw = 1.0 if se[j] == 0 else float(2 * stats.norm.sf(abs(delta[j]) / se[j]))
        ra, rb = (min(max(float(x), 0.0), 1.0) for x in (a[0][j], b[0][j]))
        changes.append(
            TypeChange(
                error_type=t,
                share_before=float(a[0][j]),
                share_after=float(b[0][j]),
                delta=float(delta[j]),
                ci=(float(delta[j] - z * se[j]), float(delta[j] + z * se[j])),
                cohen_h=float(2 * np.arcsin(np.sqrt(rb)) - 2 * np.arcsin(np.sqrt(ra))),
                p_value=p_raw,
                p_raw=p_raw,
            )
        )
    vals = np.linalg.eigvalsh(cov) if cov.size else np.zeros(0)
    rank = int((vals > max(vals.max(initial=0.0), 0.0) * 1e-9).sum())
    stat = float(delta @ np.linalg.pinv(cov, hermitian=True, rcond=1e-9) @ delta) if rank else 0.0
    pa = np.clip(a[0], 0.0, None)
    pb = np.clip(b[0], 0.0, None)
    jsd = (
        float(jensenshannon(pa / pa.sum(), pb / pb.sum(), base=2) ** 2)
        if pa.sum() > 0 and pb.sum() > 0
        else None
    )
    p = float(stats.chi2.sf(stat, rank)) if rank else None
    return Shift(
        before=before,
        after=after,
        chi2=stat if rank else None,
        dof=rank or None,
        design_effect=None,
        p_value=p,
        p_raw=p,
        jsd=jsd,
        changes=changes,
    )


def estimator_shifts(
    dists: Sequence[ErrorDistribution | None],
    checkpoints: list[str],
    types: list[str],
    *,
    level: float = LEVEL,
) -> list[Shift]:
    """Shifts between consecutive checkpoints from their corrected error distributions
    (``dists`` in checkpoint order): the tests of the module docstring, BH-adjusted;
    intervals of the changes at ``level``."""
    z = _critical(level)
    shifts: list[Shift] = []
    for (ck_a, da), (ck_b, db) in itertools.pairwise(zip(checkpoints, dists, strict=True)):
        both = [
            t
            for t in types
            if all(
                d is not None and (d.error_dist_corrected or {}).get(t) is not None
                for d in (da, db)
            )
        ]
        a, b = _vector(da, both), _vector(db, both)
        if a is None or b is None:
            few = [ck for ck, v in ((ck_a, a), (ck_b, b)) if v is None]
            shifts.append(
                Shift(
                    before=ck_a,
                    after=ck_b,
                    chi2=None,
                    dof=None,
                    design_effect=None,
                    p_value=None,
                    p_raw=None,
                    jsd=None,
                    changes=[],
                    note=f"no corrected shares at {', '.join(few)} (too few human labels or "
                    "an unidentified type): not tested",
                )
            )
            continue
        shifts.append(_estimator_pair(ck_a, ck_b, a, b, both, z))
    for s, adj in zip(shifts, bh_adjust([s.p_raw for s in shifts]), strict=True):
        s.p_value = adj
    flat = [c for s in shifts for c in s.changes]
    for c, adj in zip(flat, bh_adjust([c.p_raw for c in flat]), strict=True):
        c.p_value = adj
    return shifts
