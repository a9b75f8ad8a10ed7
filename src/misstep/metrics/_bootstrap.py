"""The one bootstrap toolbox: resampling counts, percentile intervals and the design of a
stratified sample, for every interval misstep shows (vote metrics, agreement, error shares).

- ``resample_counts``: how often each item is drawn in each resample with replacement. A
  statistic that is a sum over items becomes ``counts @ per_item``, which vectorises a whole
  bootstrap; several statistics of the same items can share one draw.
- ``percentile_ci``: the percentile interval of replicates at any ``level``.
- ``stratify``: a stratified sample's design (which items each stratum holds, its size): its
  design weights (``N_h / n_h``, the inverse inclusion probability of an item in its stratum)
  and its stratum shares (``N_h / N``) are computed here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_N_BOOT",
    "DEFAULT_SEED",
    "LEVEL",
    "Strata",
    "bootstrap_means",
    "percentile_ci",
    "resample_counts",
    "stratify",
]

DEFAULT_N_BOOT = 1000
"""Bootstrap resamples behind an interval when none is asked for (every command's default)."""
LEVEL = 0.95
"""Confidence level of an interval when none is asked for (every command's default)."""
DEFAULT_SEED = 0
"""Seed of every random step when none is asked for (every command's default)."""

FloatArray = npt.NDArray[np.float64]


def resample_counts(n: int, n_boot: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """``n_boot`` x ``n`` counts of each item in a resample with replacement: one draw that
    several metrics of the same items can share (each row sums to ``n``).

    Each row counts ``n`` uniform draws of an item (the multinomial(n, 1/n) distribution,
    exactly): ``n_boot * n`` integers and one ``bincount`` cost about half the CPU of numpy's
    ``multinomial``, which draws each row's counts one item at a time (0.06 s against 0.03 s
    for 1,319 problems and 1,000 replicates). The same generator state gives the same counts."""
    if n == 0:
        return np.zeros((n_boot, 0), dtype=np.int64)
    draws = rng.integers(0, n, size=(n_boot, n), dtype=np.int64)
    draws += np.arange(n_boot, dtype=np.int64)[:, None] * n  # row r's items at r*n .. r*n+n-1
    return np.bincount(draws.ravel(), minlength=n_boot * n).reshape(n_boot, n)


def bootstrap_means(values: FloatArray, n_boot: int, rng: np.random.Generator) -> FloatArray:
    """``n_boot`` means of ``values`` resampled with replacement (one row of weights per
    replicate, drawn as multinomial counts: exact and vectorised)."""
    n = len(values)
    if n == 0:
        return np.full(n_boot, np.nan)
    counts = resample_counts(n, n_boot, rng)
    return np.asarray(counts @ values / n, dtype=np.float64)


def percentile_ci(replicates: FloatArray, level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile interval of the finite replicates along axis 0; None when fewer than half of
    them are finite (the statistic is mostly undefined on resamples)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0 or finite.size < replicates.size / 2:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Strata:
    """The design of a stratified sample: the sampled items of each stratum and every
    stratum's size (items in the population, sampled or not)."""

    rows: dict[str, list[int]]
    """Stratum -> positions of its sampled items, strata in sorted order."""
    sizes: dict[str, int]
    """Stratum -> its size ``N_h``."""
    n_items: int
    """Sampled items in all."""

    @property
    def shares(self) -> dict[str, float]:
        """Stratum -> ``N_h / N``, ``N`` the size of the strata with a sampled item: what a
        stratified mean weighs each stratum's mean by."""
        total = sum(self.sizes[h] for h in self.rows)
        return {h: self.sizes[h] / total for h in self.rows}

    @property
    def weights(self) -> FloatArray:
        """Per sampled item, its design weight ``N_h / n_h``: the inverse of its inclusion
        probability in its stratum."""
        out = np.empty(self.n_items)
        for h, rows in self.rows.items():
            out[rows] = self.sizes[h] / len(rows)
        return out


def stratify(strata: Sequence[str], sizes: Mapping[str, int]) -> Strata:
    """The design of a sample whose ``i``-th item is of stratum ``strata[i]``, the strata of
    ``sizes[h]`` items each (a random sample within each stratum, as a label budget draws)."""
    rows: dict[str, list[int]] = {}
    for i, h in enumerate(strata):
        rows.setdefault(h, []).append(i)
    ordered = {h: rows[h] for h in sorted(rows)}
    return Strata(rows=ordered, sizes={h: int(sizes[h]) for h in ordered}, n_items=len(strata))
