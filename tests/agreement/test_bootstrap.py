"""The seeded item bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from misstep.agreement import percentile_ci, resample_counts


def test_counts_are_seeded_resamples() -> None:
    counts = resample_counts(7, 50, seed=1)
    assert counts.shape == (50, 7)
    assert (counts.sum(axis=1) == 7).all()
    assert (resample_counts(7, 50, seed=1) == counts).all()
    assert not (resample_counts(7, 50, seed=2) == counts).all()
    # Each item is drawn with probability 1/7 per draw: mean count 1.
    many = resample_counts(7, 20000, seed=0)
    assert many.mean(axis=0) == pytest.approx(np.ones(7), abs=0.03)


def test_percentile_interval() -> None:
    values = np.arange(101, dtype=np.float64)  # 0..100: percentiles are the values themselves
    assert percentile_ci(values) == pytest.approx((2.5, 97.5))
    assert percentile_ci(values, level=0.9) == pytest.approx((5.0, 95.0))
    mostly_nan = np.array([1.0, np.nan, np.nan])
    assert percentile_ci(mostly_nan) is None
    with_some_nan = np.array([1.0, 2.0, 3.0, np.nan])
    assert percentile_ci(with_some_nan, level=0.0) == pytest.approx((2.0, 2.0))


def test_interval_of_a_mean_covers_it_at_about_the_nominal_rate() -> None:
    # Mean of 60 Bernoulli(0.3) draws: the 95% interval covers 0.3 in most of 200 datasets.
    rng = np.random.default_rng(5)
    covered = 0
    for seed in range(200):
        x = (rng.random(60) < 0.3).astype(np.float64)
        ci = percentile_ci(resample_counts(60, 400, seed) @ x / 60)
        assert ci is not None
        covered += ci[0] <= 0.3 <= ci[1]
    assert 0.88 <= covered / 200 <= 0.99
