"""A share at 0 or 1 on every problem gets the exact bound, not a zero-width bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from misstep.metrics import mean_ci, share_ci


def test_every_problem_at_one_gets_the_exact_lower_bound() -> None:
    # 40 problems, pass@16 = 1 on each: 0.025^(1/40) = exp(-3.68888 / 40) = exp(-0.092222)
    # = 0.91190, the Beta(40, 1) quantile at 0.025.
    values = np.ones(40)
    rng = np.random.default_rng(0)
    assert mean_ci(values, 200, rng) == (1.0, 1.0)  # what the bootstrap alone says
    low, high = share_ci(values, 200, np.random.default_rng(0))  # type: ignore[misc]
    assert low == pytest.approx(0.91190, abs=1e-5)
    assert low == pytest.approx(stats.beta.ppf(0.025, 40, 1))
    assert high == 1.0


def test_every_problem_at_zero_with_shared_counts() -> None:
    # 10 problems at 0: upper bound 1 - 0.025^(1/10) = 1 - 0.69150 = 0.30850.
    rng = np.random.default_rng(1)
    counts = rng.multinomial(10, np.full(10, 0.1), size=100)
    assert share_ci(np.zeros(10), 100, rng, counts=counts) == pytest.approx(
        (0.0, 0.30850), abs=1e-5
    )


def test_a_mixed_share_keeps_its_bootstrap_interval() -> None:
    values = np.array([0.0, 1.0] * 20)
    a = share_ci(values, 300, np.random.default_rng(2))
    b = mean_ci(values, 300, np.random.default_rng(2))
    assert a == b and a is not None and a[0] < 0.5 < a[1]


def test_the_bound_covers_in_simulation() -> None:
    # Known truth: per-problem success p = 0.97, 40 problems; when all 40 succeed (prob
    # 0.97^40 = 0.296) the bound must still cover 0.97 (0.9119 < 0.97), and over every run the
    # interval covers p at least at the nominal rate, up to simulation noise (400 runs: SE 1.1%).
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(400):
        values = (rng.random(40) < 0.97).astype(np.float64)
        ci = share_ci(values, 300, rng)
        assert ci is not None
        covered += ci[0] <= 0.97 <= ci[1]
    assert covered / 400 >= 0.90
