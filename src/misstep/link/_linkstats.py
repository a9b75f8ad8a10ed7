"""Statistics behind the link: vote metrics per checkpoint, rank correlations with permutation
p-values, the per-problem logistic regression, dominant-type transitions and coverage.

Thresholds below which a result is reported as "too few data" instead of a number:

- correlations across checkpoints need ``MIN_CHECKPOINTS`` (5) checkpoints with both values;
- the regression needs ``MIN_REG_ROWS`` (40) problems that could fail (at least one right sample
  and one labelled wrong trace) with at least ``MIN_REG_CLASS`` (10) failures and 10 non-failures.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats
from sklearn.linear_model import LogisticRegression

from misstep.link._anatomy import PROBLEM_KEY
from misstep.metrics import Change

__all__ = [
    "MIN_CHECKPOINTS",
    "MIN_REG_CLASS",
    "MIN_REG_ROWS",
    "Correlation",
    "RegressionResult",
    "Transition",
    "coverage_table",
    "dominant_transitions",
    "finite",
    "problem_regression",
    "spearman_permutation",
    "vote_table",
]

MIN_CHECKPOINTS = 5
MIN_REG_ROWS = 40
MIN_REG_CLASS = 10


def finite(x: Any) -> float | None:
    """A float for JSON, None for NaN / inf / None."""
    if x is None:
        return None
    v = float(x)
    return v if np.isfinite(v) else None


@dataclass(frozen=True)
class VoteTable:
    """The per-checkpoint vote metrics the link reads (``vote_table``)."""

    metrics: pd.DataFrame
    """Per checkpoint (index): ``pass@1`` and ``maj@k`` / ``sc_gain@k`` for each k."""
    sc_changes: dict[str, dict[int, Change | None]]
    """Per checkpoint, the paired change of sc_gain@k from the previous checkpoint."""
    intervals: dict[str, dict[str, Any]]
    """Per checkpoint, the interval of each column of ``metrics``."""
    accuracy_changes: dict[str, Change | None]
    """Per checkpoint, the paired change of pass@1 from the previous checkpoint."""


def vote_table(graded: pd.DataFrame, ks: list[int], seed: int) -> VoteTable:
    """Per checkpoint (index): ``pass@1`` and ``maj@k`` / ``sc_gain@k`` for each k, from
    ``misstep.metrics.vote_metrics`` with datasets pooled (the numbers of ``misstep summary
    --by checkpoint``); and per checkpoint, the paired changes of sc_gain@k and of pass@1 from
    the previous checkpoint with their intervals (absent for the first)."""
    from misstep.metrics import vote_metrics

    ks_all = sorted({1, *ks})
    metrics = vote_metrics(graded, ks_all, by_dataset=False, seed=seed)
    rows = [m.to_json() for m in metrics]
    cols = ["pass@1"] + [f"{p}@{k}" for k in ks for p in ("maj", "sc_gain")]
    df = pd.DataFrame(rows).set_index("checkpoint")
    changes = {m.checkpoint: dict(m.change.sc_gain_at_k) for m in metrics if m.change is not None}
    accuracy = {m.checkpoint: m.change.pass_at_1 for m in metrics if m.change is not None}
    intervals = {str(r["checkpoint"]): {c: r.get(f"{c}_ci") for c in cols} for r in rows}
    return VoteTable(df[cols].astype(float), changes, intervals, accuracy)


class Correlation(BaseModel):
    """Spearman rank correlation across checkpoints, with a permutation p-value."""

    x: str
    """First variable (an error type's share, or a training metric)."""
    y: str
    """Second variable (``sc_gain@k``, or an error type's share)."""
    kind: str
    """``type_vs_sc_gain``, ``cause_vs_sc_gain``, ``train_vs_sc_gain`` or ``train_vs_type``;
    in a one-sample run ``type_vs_accuracy``, ``cause_vs_accuracy``, ``train_vs_accuracy``
    (against pass@1: there is no vote)."""
    n: int
    """Checkpoints with both values."""
    rho: float | None
    """Spearman's rho; None when too few data or a constant variable."""
    p_value: float | None
    """Permutation p-value (two-sided), BH-adjusted across all correlations."""
    p_raw: float | None
    """Permutation p-value before adjustment."""
    note: str | None = None
    """Why there is no number, when there is none."""


def spearman_permutation(
    x: np.ndarray, y: np.ndarray, *, n_perm: int, rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """Spearman's rho and its two-sided permutation p-value ``(1 + #|rho*| >= |rho|)/(1 + B)``."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < MIN_CHECKPOINTS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    rx = stats.rankdata(x)
    ry = stats.rankdata(y)
    rx = (rx - rx.mean()) / np.linalg.norm(rx - rx.mean())
    ry = (ry - ry.mean()) / np.linalg.norm(ry - ry.mean())
    rho = float(rx @ ry)
    perms = rng.permuted(np.tile(ry, (n_perm, 1)), axis=1)
    null = perms @ rx
    p = (1 + int((np.abs(null) >= abs(rho) - 1e-12).sum())) / (1 + n_perm)
    return rho, float(p)


class Coefficient(BaseModel):
    """One coefficient of the per-problem logistic regression."""

    feature: str
    """``share:<type>``, ``entropy`` or ``wrong_consistency``."""
    coef: float
    """Log-odds change per unit of the feature (share 0 to 1, entropy in bits)."""
    ci: tuple[float, float] | None
    """95% bootstrap percentile interval (resampling problems)."""


class RegressionResult(BaseModel):
    """Logistic regression of majority-vote failure on a problem's wrong-trace mix."""

    n: int
    """Problems in the fit (could fail: some right sample, some labelled wrong trace)."""
    n_failures: int
    """Of which majority-vote failures."""
    intercept: float | None
    """Fitted intercept."""
    coefficients: list[Coefficient]
    """One per feature; empty when too few data."""
    n_boot: int
    """Bootstrap resamples behind the intervals."""
    note: str | None = None
    """Plain statement when data are too few to fit, or how the model was fit."""
    reference: str | None = None
    """The type left out of the fit as the reference category (the most common one)."""


def problem_regression(
    votes: pd.DataFrame,
    wrong_labelled: pd.DataFrame,
    types: list[str],
    *,
    seed: int,
    n_boot: int = 100,
) -> RegressionResult:
    """L2-penalised (C=1) logistic regression, features on their raw scale: the share of each
    type among the problem's labelled wrong traces, answer entropy and wrong-answer consistency.
    The shares sum to one, so the most common type overall is the reference category and is
    left out (with an intercept, all shares together would be collinear); each coefficient is
    the change in log-odds when a share moves from the reference type to that type."""
    if wrong_labelled.empty or not types:
        return RegressionResult(
            n=0,
            n_failures=0,
            intercept=None,
            coefficients=[],
            n_boot=0,
            note="too few data to fit: no labelled wrong trace",
        )
    else:
        ct = pd.crosstab(
            [wrong_labelled[c] for c in PROBLEM_KEY], wrong_labelled["error_type"]
        ).reindex(columns=types, fill_value=0)
        shares = ct.div(ct.sum(axis=1), axis=0)
    v = votes[votes["correct_votes"] >= 1].set_index(PROBLEM_KEY)
    data = shares.join(v[["entropy", "wrong_consistency", "majority_failure"]], how="inner")
    data["wrong_consistency"] = data["wrong_consistency"].fillna(0.0)
    totals = wrong_labelled["error_type"].value_counts() if not wrong_labelled.empty else None
    reference = (
        sorted(types, key=lambda t: (-int(totals.get(t, 0)), t))[0]
        if totals is not None and types
        else None
    )
    kept = [t for t in types if t != reference]
    features = [f"share:{t}" for t in kept] + ["entropy", "wrong_consistency"]
    x = data[[*kept, "entropy", "wrong_consistency"]].to_numpy(dtype=float)
    y = data["majority_failure"].to_numpy(dtype=bool)
    n_fail = int(y.sum())
    if len(y) < MIN_REG_ROWS or n_fail < MIN_REG_CLASS or len(y) - n_fail < MIN_REG_CLASS:
        return RegressionResult(
            n=len(y),
            n_failures=n_fail,
            intercept=None,
            coefficients=[],
            n_boot=0,
            note=(
                f"too few data to fit: {len(y)} problems that could fail, {n_fail} failures; "
                f"needs at least {MIN_REG_ROWS} problems with {MIN_REG_CLASS} of each outcome"
            ),
        )
    model = LogisticRegression(C=1.0, max_iter=200, solver="newton-cholesky")
    model.fit(x, y)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(y), len(y))
        if y[idx].all() or not y[idx].any():
            continue
        boots.append(
            LogisticRegression(C=1.0, max_iter=200, solver="newton-cholesky")
            .fit(x[idx], y[idx])
            .coef_[0]
        )
    ci: list[tuple[float, float] | None] = [None] * len(features)
    if boots:
        lo, hi = np.percentile(np.array(boots), [2.5, 97.5], axis=0)
        ci = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
    return RegressionResult(
        n=len(y),
        n_failures=n_fail,
        intercept=float(model.intercept_[0]),
        coefficients=[
            Coefficient(feature=f, coef=float(c), ci=i)
            for f, c, i in zip(features, model.coef_[0], ci, strict=True)
        ],
        n_boot=len(boots),
        note="L2-penalised (C=1) logistic regression; reference type "
        f"{reference!r} (left out: the shares sum to 1); intervals from a problem bootstrap",
        reference=reference,
    )


class Transition(BaseModel):
    """Problems whose dominant error type moved from one type to another."""

    before: str
    """Earlier checkpoint."""
    checkpoint: str
    """Later checkpoint."""
    from_type: str
    """Dominant type at the earlier checkpoint."""
    to_type: str
    """Dominant type at the later checkpoint."""
    n_problems: int
    """Problems that made this move."""
    n_tracked: int
    """Problems with a dominant type at both checkpoints."""


def dominant_transitions(
    wrong_labelled: pd.DataFrame, checkpoints: list[str]
) -> tuple[list[Transition], dict[str, dict[str, dict[str, int]]]]:
    """Per problem, the dominant type (most labelled wrong traces; ties: smaller key) at each
    checkpoint; returns the moves between consecutive checkpoints (type changed), most
    frequent first, and the full from x to table per later checkpoint."""
    if wrong_labelled.empty:
        return [], {}
    counts = (
        wrong_labelled.groupby([*PROBLEM_KEY, "error_type"], sort=False)
        .size()
        .rename("k")
        .reset_index()
        .sort_values(["k", "error_type"], ascending=[False, True])
        .drop_duplicates(PROBLEM_KEY)
    )
    dom = counts.set_index(["dataset", "problem_id", "checkpoint"])["error_type"]
    moves: list[Transition] = []
    tables: dict[str, dict[str, dict[str, int]]] = {}
    by_ck = {ck: s.droplevel("checkpoint") for ck, s in dom.groupby(level="checkpoint")}
    for a, b in itertools.pairwise(checkpoints):
        if a not in by_ck or b not in by_ck:
            continue
        both = pd.concat([by_ck[a].rename("a"), by_ck[b].rename("b")], axis=1, join="inner")
        if both.empty:
            continue
        ct = pd.crosstab(both["a"], both["b"])
        tables[b] = {str(r): {str(c): int(ct.loc[r, c]) for c in ct.columns} for r in ct.index}
        for r in ct.index:
            for c in ct.columns:
                if r != c and ct.loc[r, c] > 0:
                    moves.append(
                        Transition(
                            before=a,
                            checkpoint=b,
                            from_type=str(r),
                            to_type=str(c),
                            n_problems=int(ct.loc[r, c]),
                            n_tracked=len(both),
                        )
                    )
    moves.sort(key=lambda m: (-m.n_problems, m.checkpoint, m.from_type, m.to_type))
    return moves, tables


def coverage_table(graded: pd.DataFrame) -> dict[str, Any]:
    """The solved-set coverage of ``misstep coverage`` (``misstep.metrics.coverage``): one
    definition for the command, the link and the report."""
    from misstep.metrics import coverage

    return coverage(graded).to_json()
