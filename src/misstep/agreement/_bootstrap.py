"""Seeded item-resampling bootstrap: multinomial resampling counts and percentile intervals."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["percentile_ci", "resample_counts"]


def resample_counts(n_items: int, n_boot: int, seed: int) -> npt.NDArray[np.float64]:
    """How often each item is drawn in each of ``n_boot`` resamples of ``n_items`` items with
    replacement: shape (n_boot, n_items), each row summing to ``n_items``.

    A statistic that is a sum over items becomes ``counts @ per_item``, which vectorises the
    whole bootstrap. The same seed gives the same counts.
    """
    if n_items == 0 or n_boot == 0:
        return np.zeros((n_boot, n_items), dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_boot, n_items))
    counts = np.zeros((n_boot, n_items), dtype=np.float64)
    np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1.0)
    return counts


def percentile_ci(
    replicates: npt.NDArray[np.float64], level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile interval of the finite replicates along axis 0; None when fewer than half of
    them are finite (the statistic is mostly undefined on resamples)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0 or finite.size < replicates.size / 2:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)
