"""Does the judge err the same way at every checkpoint? A test on the human-labelled traces.

The pooled inversion (``_correction``) estimates one confusion matrix M[t, j] = P(judge says j
| person says t) from the human labels of all checkpoints and inverts it at each one: it
assumes M is the same at every checkpoint. Null hypothesis: for each human type t, the judge's
type among traces people called t has the same distribution at every checkpoint. Test: the
likelihood-ratio (G) statistic of independence of checkpoint and judge type, one table per
human type (rows: checkpoints with such traces, columns: judge types used), summed over the
human types with their degrees of freedom; p-value from the chi-square distribution, and, as
the chi-square approximation is poor for the sparse tables a few hundred labels give, from a
permutation of the checkpoints within each human type (seeded). A small p-value says the
judge's confusion changed: use the per-checkpoint estimator (``ppi``). A large one is no proof
that it did not (the test has little power with few labels per checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats

from misstep.metrics import DEFAULT_SEED

__all__ = ["Homogeneity", "confusion_homogeneity"]


class Homogeneity(BaseModel):
    """Result of the test of one confusion matrix across checkpoints."""

    statistic: float | None
    """Summed G statistic (None: nothing to test)."""
    dof: int
    """Summed degrees of freedom."""
    p_value: float | None
    """Permutation p-value (None: nothing to test)."""
    p_chi2: float | None
    """Chi-square approximation of the p-value."""
    n: int
    """Human-labelled traces with a judge type in the test."""
    n_checkpoints: int
    """Checkpoints with human labels."""
    meaning: str
    """What the result says, in words."""


def _g_stat(groups: np.ndarray, judge: np.ndarray) -> tuple[float, int]:
    """G statistic and dof of one checkpoint x judge-type table (rows/cols that occur)."""
    _, gi = np.unique(groups, return_inverse=True)
    _, ji = np.unique(judge, return_inverse=True)
    table = np.zeros((gi.max() + 1, ji.max() + 1))
    np.add.at(table, (gi, ji), 1.0)
    if table.shape[0] < 2 or table.shape[1] < 2:
        return 0.0, 0
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    nz = table > 0
    g = 2.0 * float((table[nz] * np.log(table[nz] / expected[nz])).sum())
    return g, (table.shape[0] - 1) * (table.shape[1] - 1)


def _total(by_type: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, int]:
    g_sum, dof = 0.0, 0
    for groups, judge in by_type:
        g, d = _g_stat(groups, judge)
        g_sum += g
        dof += d
    return g_sum, dof


def confusion_homogeneity(
    checkpoint: Sequence[str],
    human: Sequence[str],
    judge: Sequence[str],
    *,
    n_perm: int = 1000,
    seed: int = DEFAULT_SEED,
) -> Homogeneity:
    """Test one confusion across checkpoints from the human-labelled traces (their
    checkpoint, human type and judge type)."""
    ck = np.asarray(checkpoint, dtype=object)
    hu = np.asarray(human, dtype=object)
    ju = np.asarray(judge, dtype=object)
    n_ck = len(set(ck.tolist()))
    by_type = [(ck[hu == t], ju[hu == t]) for t in sorted(set(hu.tolist()))]
    g, dof = _total(by_type)
    if dof == 0:
        return Homogeneity(
            statistic=None,
            dof=0,
            p_value=None,
            p_chi2=None,
            n=len(ck),
            n_checkpoints=n_ck,
            meaning="not testable: human labels at fewer than two checkpoints, or the judge "
            "gives one type for every human type",
        )
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_perm):
        shuffled = [(rng.permutation(groups), judged) for groups, judged in by_type]
        hits += _total(shuffled)[0] >= g - 1e-9
    p = (hits + 1) / (n_perm + 1)
    meaning = (
        f"the judge's confusion differs between checkpoints (p = {p:.3g}): the pooled "
        "inversion's assumption fails, use the per-checkpoint estimator (ppi)"
        if p < 0.05
        else f"no evidence that the judge's confusion differs between checkpoints "
        f"(p = {p:.3g}); with few labels per checkpoint the test has little power"
    )
    return Homogeneity(
        statistic=g,
        dof=dof,
        p_value=p,
        p_chi2=float(stats.chi2.sf(g, dof)),
        n=len(ck),
        n_checkpoints=n_ck,
        meaning=meaning,
    )
