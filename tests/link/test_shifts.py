"""Shift tests on the estimators' shares and variances, and BH."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from misstep.agreement import AnalysisConfig, ErrorDistribution, error_distributions
from misstep.labels import LabelStatus, StoredLabel
from misstep.link._shifts import bh_adjust, checkpoint_shares, distribution_shifts


def test_bh_hand_checked() -> None:
    # sorted p: 0.01, 0.02, 0.03, 0.5 (m=4): p*m/rank = 0.04, 0.04, 0.04, 0.5;
    # step-up minimum from the top keeps them
    out = bh_adjust([0.03, None, 0.01, 0.5, 0.02])
    assert out[1] is None
    assert out[0] == pytest.approx(0.04)
    assert out[2] == pytest.approx(0.04)
    assert out[4] == pytest.approx(0.04)
    assert out[3] == pytest.approx(0.5)


def _rows(ck: str, per_problem: list[list[str]]) -> list[dict[str, str]]:
    return [
        {"checkpoint": ck, "dataset": "d", "problem_id": f"p{i}", "error_type": t}
        for i, types in enumerate(per_problem)
        for t in types
    ]


def _dists(wl: pd.DataFrame, types: list[str], n_boot: int) -> dict[str, ErrorDistribution]:
    """The error distributions of ``wl``'s labelled wrong traces, by checkpoint."""
    ids = [f"{r.checkpoint}/{i}" for i, r in enumerate(wl.itertuples())]
    graded = wl.assign(trace_id=ids, outcome="wrong")
    labels = {
        t: StoredLabel(trace_id=t, judge="j", status=LabelStatus.OK, error_type=e)
        for t, e in zip(ids, wl["error_type"], strict=True)
    }
    config = AnalysisConfig(n_boot=n_boot)
    found = error_distributions(graded, labels, types, config=config, pool_datasets=True)
    return {d.checkpoint: d for d in found}


def test_shares_and_cluster_variance_come_from_the_estimator() -> None:
    # problem 0: a a b (m=3, x_a=2); problem 1: a (m=1, x_a=1) -> r_a = 3/4
    wl = pd.DataFrame(_rows("c1", [["a", "a", "b"], ["a"]]))
    (s,) = checkpoint_shares(_dists(wl, ["a", "b"], 50), ["c1"], ["a", "b"])
    assert s.shares["a"] == pytest.approx(0.75)
    # residuals x - r m: 2 - 2.25 = -0.25, 1 - 0.75 = 0.25; var = 2/1 * 0.125 / 16
    assert s.variance["a"] == pytest.approx(2 * 0.125 / 16)
    assert s.n_labelled == 4 and s.n_problems == 2
    # a checkpoint without labels has no shares to test
    (empty,) = checkpoint_shares({}, ["c0"], ["a", "b"])
    assert empty.n_labelled == 0


def test_planted_shift_detected_null_not() -> None:
    rng = np.random.default_rng(0)
    types = ["a", "b", "c"]

    def draw(ck: str, p: list[float]) -> list[dict[str, str]]:
        return _rows(ck, [list(rng.choice(types, size=6, p=p)) for _ in range(60)])

    same = [0.5, 0.3, 0.2]
    wl = pd.DataFrame(draw("c1", same) + draw("c2", same) + draw("c3", [0.2, 0.3, 0.5]))
    cks = ["c1", "c2", "c3"]
    shares = checkpoint_shares(_dists(wl, types, 200), cks, types)
    shifts = distribution_shifts(shares, types)
    assert shifts[0].p_value is not None and shifts[0].p_value > 0.05
    assert shifts[1].p_value is not None and shifts[1].p_value < 0.001
    c = {ch.error_type: ch for ch in shifts[1].changes}
    assert c["c"].delta > 0.2 and c["c"].p_value is not None and c["c"].p_value < 0.001
    assert c["c"].ci is not None and c["c"].ci[0] > 0
    assert 0 < (shifts[1].jsd or 0) <= 1


def test_too_few_is_stated() -> None:
    wl = pd.DataFrame(_rows("c1", [["a"], ["b"]]) + _rows("c2", [["a"], ["a"]]))
    shares = checkpoint_shares(_dists(wl, ["a", "b"], 20), ["c1", "c2"], ["a", "b"])
    (shift,) = distribution_shifts(shares, ["a", "b"])
    assert shift.p_value is None and shift.note and "too few" in shift.note


def test_the_interval_of_a_change_is_its_z_tests_at_the_level() -> None:
    # c1: 10 problems of (a, a), 10 of (b, b): share_a 0.5; cluster residuals +-1 on m = 2,
    # var_a = 20/19 * 20 / 40^2. c2: 10 of (a, a), 30 of (b, b): share_a 0.25; residuals
    # 2 - 0.5 = 1.5 (10 times) and -0.5 (30 times): var_a = 40/39 * 30 / 80^2.
    wl = pd.DataFrame(
        _rows("c1", [["a", "a"]] * 10 + [["b", "b"]] * 10)
        + _rows("c2", [["a", "a"]] * 10 + [["b", "b"]] * 30)
    )
    shares = checkpoint_shares(_dists(wl, ["a", "b"], 20), ["c1", "c2"], ["a", "b"])
    var = 20 / 19 * 20 / 40**2 + 40 / 39 * 30 / 80**2
    assert shares[0].variance["a"] + shares[1].variance["a"] == pytest.approx(var)
    for level in (0.95, 0.9):
        z = NormalDist().inv_cdf(0.5 + level / 2)  # 1.96, 1.645 (the standard library's)
        (shift,) = distribution_shifts(shares, ["a", "b"], level=level)
        a = shift.changes[0]
        assert a.delta == pytest.approx(-0.25)
        assert a.ci == pytest.approx((-0.25 - z * var**0.5, -0.25 + z * var**0.5))
        # the interval excludes 0 exactly when the unadjusted p-value is below 1 - level
        assert a.p_raw is not None and (a.ci[1] < 0) == (a.p_raw < 1 - level)
