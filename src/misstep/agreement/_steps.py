"""Agreement on where the first error is: exact-step agreement and ProcessBench's F1."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["StepScores", "step_scores"]


class StepScores:
    """Step agreement from per-item indicators, for one item set or a stack of resampling
    counts (rows of ``counts``).

    - ``exact``: share of items where both give the same first error step (both "no error"
      counts as the same).
    - ``acc_erroneous``: on items the reference says are wrong, share where the rater gives
      the same step; ``acc_correct``: on items the reference says are error-free, share where
      the rater says error-free too.
    - ``f1``: ProcessBench's F1, the harmonic mean of those two accuracies (NaN when the
      reference has no error-free items, or no erroneous ones).
    """

    def __init__(
        self,
        same: npt.NDArray[np.float64],
        ref_has_error: npt.NDArray[np.bool_],
        counts: npt.NDArray[np.float64] | npt.NDArray[np.int64] | None = None,
    ) -> None:
        w = np.ones((1, same.size)) if counts is None else counts
        erroneous = ref_has_error.astype(np.float64)
        clean = 1.0 - erroneous
        with np.errstate(invalid="ignore", divide="ignore"):
            self.exact = (w @ same) / w.sum(axis=1)
            self.acc_erroneous = (w @ (same * erroneous)) / (w @ erroneous)
            self.acc_correct = (w @ (same * clean)) / (w @ clean)
            self.f1 = (
                2.0
                * self.acc_erroneous
                * self.acc_correct
                / (self.acc_erroneous + self.acc_correct)
            )
        # Both accuracies 0 makes the harmonic mean 0/0; by the usual convention it is 0.
        both_zero = (self.acc_erroneous == 0) & (self.acc_correct == 0)
        self.f1 = np.where(both_zero, 0.0, self.f1)
        self.n_erroneous = int(erroneous.sum())
        self.n_correct = int(clean.sum())


def step_scores(
    reference: Sequence[int | None],
    rated: Sequence[int | None],
    counts: npt.NDArray[np.float64] | npt.NDArray[np.int64] | None = None,
) -> StepScores:
    """Step scores of a rater against a reference; None means "no error" for either."""
    same = np.array([r == s for r, s in zip(reference, rated, strict=True)], dtype=np.float64)
    has_error = np.array([r is not None for r in reference], dtype=np.bool_)
    return StepScores(same, has_error, counts)
