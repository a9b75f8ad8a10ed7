"""pass@k, the unbiased estimator of Chen et al. (2021).

For one problem with ``n`` samples of which ``c`` are correct::

    pass@k = 1 - C(n - c, k) / C(n, k)

the probability that a uniformly random k-subset of the samples holds at least one correct
one. A checkpoint's pass@k is the mean over its problems. It is only defined for ``k <= n``:
a problem with fewer than ``k`` samples gets NaN here, and ``vote_metrics`` then reports
pass@k of that checkpoint (x dataset) as null with a note rather than a biased mean.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["pass_at_k", "pass_at_k_one"]

FloatArray = npt.NDArray[np.float64]


def pass_at_k_one(n: int, c: int, k: int) -> float:
    """pass@k of one problem (NaN when ``k > n``), computed exactly with integers."""
    if k < 1 or c < 0 or c > n:
        raise ValueError(f"need 1 <= k and 0 <= c <= n, got n={n}, c={c}, k={k}")
    if k > n:
        return math.nan
    # Ratio of two exact integers: no cancellation, exact to float precision.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray:
    """Vectorised pass@k: one value per problem, computed once per distinct (n, c) pair."""
    n_arr = np.asarray(n, dtype=np.int64)
    c_arr = np.asarray(c, dtype=np.int64)
    if n_arr.size == 0:
        return np.zeros(0, dtype=np.float64)
    pairs, inverse = np.unique(np.stack([n_arr, c_arr], axis=1), axis=0, return_inverse=True)
    values = np.array([pass_at_k_one(int(a), int(b), k) for a, b in pairs], dtype=np.float64)
    return values[inverse.reshape(-1)]
