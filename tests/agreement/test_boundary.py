"""A share seen in none or all of the labels gets an exact interval, not [0, 0]."""

from __future__ import annotations

import pytest
from scipy import stats

from misstep.agreement import correct_distribution


def test_absent_type_gets_the_exact_upper_bound_over_problems() -> None:
    # 40 labels from 20 problems (2 each), no label 'misread'. The exact 95% upper bound for
    # 0 of 20 independent problems: 1 - 0.025^(1/20) = 1 - exp(ln 0.025 / 20)
    # = 1 - exp(-3.68888 / 20) = 1 - 0.83157 = 0.16843; the same as the Beta(1, 20) quantile.
    judge = ["arithmetic"] * 12 + ["arithmetic", "other"] * 6 + ["other"] * 16
    problems = [f"p{i // 2}" for i in range(40)]
    d = correct_distribution(
        judge, [], ["arithmetic", "misread", "other"], clusters=problems, n_boot=200
    )
    assert d.raw["misread"] == 0.0
    assert d.raw_ci["misread"] == pytest.approx((0.0, 0.16843), abs=1e-5)
    assert d.raw_ci["misread"][1] == pytest.approx(stats.beta.ppf(0.975, 1, 20))
    # The types that were seen keep their bootstrap interval, of non-zero width.
    low, high = d.raw_ci["arithmetic"]  # type: ignore[misc]
    assert low < 0.5 < high


def test_type_given_to_every_label_mirrors_the_bound_and_counts_labels_without_problems() -> None:
    # 10 labels, all 'other', no problems given: 10 independent units, lower bound 0.025^(1/10)
    # = exp(-3.68888 / 10) = 0.69150.
    d = correct_distribution(["other"] * 10, [], ["arithmetic", "other"], n_boot=100)
    assert d.raw_ci["other"] == pytest.approx((0.69150, 1.0), abs=1e-5)
    assert d.raw_ci["arithmetic"] == pytest.approx((0.0, 1 - 0.69150), abs=1e-5)
