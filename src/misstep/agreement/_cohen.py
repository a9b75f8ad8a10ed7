"""Cohen's kappa for two raters: scikit-learn for one estimate, a vectorised form for bootstraps."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sklearn.metrics import cohen_kappa_score

__all__ = ["cohen_kappa", "kappa_from_confusions"]


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (scikit-learn).

    None when it is undefined: no items, or chance agreement is 1 (both raters gave one and
    the same category to every item), where kappa is 0/0.
    """
    if len(a) != len(b):
        raise ValueError(f"raters must label the same items: {len(a)} != {len(b)}")
    if not a:
        return None
    if len(set(a) | set(b)) < 2:
        return None  # one category throughout: chance agreement 1, kappa 0/0
    value = float(cohen_kappa_score(list(a), list(b), replace_undefined_by=np.nan))
    return None if math.isnan(value) else value


def kappa_from_confusions(confusions: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Cohen's kappa of each confusion matrix in a stack of shape (..., K, K); NaN if undefined.

    kappa = (p_o - p_e) / (1 - p_e), p_o = trace / total, p_e = sum_k row_k * col_k / total^2.
    Used for bootstrap replicates, where calling scikit-learn a thousand times would be slow;
    the tests check it equals :func:`cohen_kappa`.
    """
    total = confusions.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(confusions, axis1=-2, axis2=-1) / total
        p_e = (confusions.sum(axis=-1) * confusions.sum(axis=-2)).sum(axis=-1) / total**2
        kappa = (p_o - p_e) / (1.0 - p_e)
    # 1 - p_e == 0 gives +-inf or NaN; both mean "undefined".
    return np.where(np.isfinite(kappa), kappa, np.nan)
