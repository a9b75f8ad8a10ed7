"""Krippendorff's alpha, nominal, missing ratings allowed: the ``krippendorff`` package for one
estimate, a vectorised coincidence-matrix form for bootstraps."""

from __future__ import annotations

import math
from collections.abc import Sequence

import krippendorff
import numpy as np
import numpy.typing as npt

__all__ = ["alpha_from_coincidences", "item_coincidences", "krippendorff_alpha"]


def _codes(matrix: Sequence[Sequence[str | None]]) -> tuple[npt.NDArray[np.float64], list[str]]:
    values = sorted({v for row in matrix for v in row if v is not None})
    index = {v: i for i, v in enumerate(values)}
    coded = np.array(
        [[np.nan if v is None else float(index[v]) for v in row] for row in matrix],
        dtype=np.float64,
    )
    return coded, values


def krippendorff_alpha(matrix: Sequence[Sequence[str | None]]) -> float | None:
    """Nominal alpha of a raters x items matrix of labels, None marking a missing rating.

    Items with fewer than two ratings carry no pairs and are ignored, as the definition says.
    None when alpha is undefined: fewer than two pairable ratings, or a single value used
    throughout (expected disagreement 0).
    """
    coded, values = _codes(matrix)
    if coded.size == 0 or len(values) < 2:
        return None
    pairable = (~np.isnan(coded)).sum(axis=0) >= 2
    if pairable.sum() == 0:
        return None
    coded = coded[:, pairable]
    if len({int(v) for v in coded[~np.isnan(coded)]}) < 2:
        return None
    value = float(
        krippendorff.alpha(
            reliability_data=coded,
            level_of_measurement="nominal",
            value_domain=list(range(len(values))),
        )
    )
    return None if math.isnan(value) else value


def item_coincidences(codes: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.float64]:
    """Per-item coincidence matrices, shape (items, k, k), from an items x raters code array
    where -1 marks a missing rating.

    Item u with m_u >= 2 ratings and n_uc ratings of value c adds
    (n_uc * n_uk - [c == k] * n_uc) / (m_u - 1) to cell (c, k) (Krippendorff 2011, eq. for o_ck).
    """
    counts = np.zeros((codes.shape[0], k), dtype=np.float64)
    for col in range(codes.shape[1]):
        present = codes[:, col] >= 0
        counts[np.nonzero(present)[0], codes[present, col]] += 1.0
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :]
    outer -= counts[:, :, None] * np.eye(k)[None, :, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled: npt.NDArray[np.float64] = outer / (m - 1.0)[:, None, None]
    scaled[m < 2] = 0.0
    return scaled


def alpha_from_coincidences(coincidences: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Nominal alpha of each coincidence matrix in a stack (..., k, k); NaN where undefined.

    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k, with n_c the row sums.
    """
    n_c = coincidences.sum(axis=-1)
    n = n_c.sum(axis=-1)
    observed = coincidences.sum(axis=(-2, -1)) - np.trace(coincidences, axis1=-2, axis2=-1)
    expected = n**2 - (n_c**2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where(np.isfinite(alpha), alpha, np.nan)
