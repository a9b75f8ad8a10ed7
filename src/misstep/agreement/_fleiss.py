"""Fleiss' kappa (statsmodels) for items that all carry the same number of ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

__all__ = ["fleiss_kappa_of"]


def fleiss_kappa_of(ratings: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa of an items x ratings table of labels (every item the same number of
    ratings, at least two). None when the table does not have that shape, or kappa is 0/0."""
    if not ratings:
        return None
    width = len(ratings[0])
    if width < 2 or any(len(row) != width for row in ratings):
        return None
    values = sorted({v for row in ratings for v in row})
    if len(values) < 2:
        return None
    index = {v: i for i, v in enumerate(values)}
    coded = np.array([[index[v] for v in row] for row in ratings], dtype=np.int64)
    table, _ = aggregate_raters(coded, n_cat=len(values))
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(fleiss_kappa(table, method="fleiss"))
    return None if math.isnan(value) or math.isinf(value) else value
