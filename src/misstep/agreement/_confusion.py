"""Human consensus, the confusion matrix of a rater against it, and per-category metrics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from misstep.labels import majority_labels

__all__ = ["CategoryScores", "confusion_counts", "consensus", "per_category_scores"]


consensus = majority_labels
"""Majority label per item over raters; ties have no consensus (``misstep.labels``)."""


def confusion_counts(
    reference: Sequence[str],
    rated: Sequence[str],
    categories: Sequence[str],
    weights: Sequence[float] | None = None,
) -> npt.NDArray[np.float64]:
    """Counts (or summed weights) C[t, j] of items the reference calls t and the rater j."""
    index = {c: i for i, c in enumerate(categories)}
    matrix = np.zeros((len(categories), len(categories)), dtype=np.float64)
    w = np.ones(len(reference)) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.array([index[r] for r in reference], dtype=np.int64)
    cols = np.array([index[r] for r in rated], dtype=np.int64)
    np.add.at(matrix, (rows, cols), w)
    return matrix


class CategoryScores:
    """Precision, recall and F1 per category from a stack of confusion matrices (..., K, K)
    whose rows are the reference and columns the rater; NaN where 0/0."""

    def __init__(self, confusions: npt.NDArray[np.float64]) -> None:
        tp = np.diagonal(confusions, axis1=-2, axis2=-1)
        predicted = confusions.sum(axis=-2)
        actual = confusions.sum(axis=-1)
        total = confusions.sum(axis=(-2, -1))[..., None]
        with np.errstate(invalid="ignore", divide="ignore"):
            self.precision = tp / predicted
            self.recall = tp / actual
            self.f1 = 2.0 * tp / (predicted + actual)
            self.prevalence_reference = actual / total
            self.prevalence_rater = predicted / total
            self.accuracy = tp.sum(axis=-1) / total[..., 0]


def per_category_scores(confusion: npt.NDArray[np.float64]) -> CategoryScores:
    """Scores of one confusion matrix or a stack of them."""
    return CategoryScores(confusion)
