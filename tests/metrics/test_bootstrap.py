"""The one bootstrap toolbox: seeded resampling counts, percentile intervals, the design of a
stratified sample."""

from __future__ import annotations

import numpy as np
import pytest

from misstep.metrics import percentile_ci, resample_counts, stratify


def test_counts_are_seeded_resamples() -> None:
    counts = resample_counts(7, 50, np.random.default_rng(1))
    assert counts.shape == (50, 7)
    assert (counts.sum(axis=1) == 7).all()
    assert (resample_counts(7, 50, np.random.default_rng(1)) == counts).all()
    assert not (resample_counts(7, 50, np.random.default_rng(2)) == counts).all()
    # Each item is drawn with probability 1/7 per draw: mean count 1.
    many = resample_counts(7, 20000, np.random.default_rng(0))
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
        ci = percentile_ci(resample_counts(60, 400, np.random.default_rng(seed)) @ x / 60)
        assert ci is not None
        covered += ci[0] <= 0.3 <= ci[1]
    assert 0.88 <= covered / 200 <= 0.99


def test_stratified_design_weights_and_shares() -> None:
    # Stratum x holds 4 items (2 sampled), y holds 2 (both sampled), z 5 (none sampled):
    # weights N_h / n_h = 4/2 = 2 for x's items, 2/2 = 1 for y's; shares N_h / N over the
    # strata with a sampled item: x 4/6, y 2/6 (z has none, so it is not counted).
    design = stratify(["x", "y", "x", "y"], {"x": 4, "y": 2, "z": 5})
    assert design.rows == {"x": [0, 2], "y": [1, 3]}
    assert design.weights.tolist() == [2.0, 1.0, 2.0, 1.0]
    assert design.shares == pytest.approx({"x": 4 / 6, "y": 2 / 6})
    # The weighted mean of the items' values is the stratified mean sum_h N_h / N * mean_h.
    values = np.array([1.0, 0.0, 0.0, 1.0])
    w = design.weights
    assert w @ values / w.sum() == pytest.approx(4 / 6 * 0.5 + 2 / 6 * 0.5)
