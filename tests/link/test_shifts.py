"""Shift tests on the estimators' shares and variances, and BH."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from misstep.agreement import AnalysisConfig, ErrorDistribution, error_distributions
from misstep.labels import LabelStatus, StoredLabel
from misstep.link._shifts import bh_adjust, change_draws, checkpoint_shares, distribution_shifts


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
    shifts = distribution_shifts(shares, change_draws(wl, cks, types, n_boot=200), types)
    assert shifts[0].p_value is not None and shifts[0].p_value > 0.05
    assert shifts[1].p_value is not None and shifts[1].p_value < 0.001
    c = {ch.error_type: ch for ch in shifts[1].changes}
    assert c["c"].delta > 0.2 and c["c"].p_value is not None and c["c"].p_value < 0.001
    assert c["c"].ci is not None and c["c"].ci[0] > 0
    assert 0 < (shifts[1].jsd or 0) <= 1


def test_too_few_is_stated() -> None:
    wl = pd.DataFrame(_rows("c1", [["a"], ["b"]]) + _rows("c2", [["a"], ["a"]]))
    shares = checkpoint_shares(_dists(wl, ["a", "b"], 20), ["c1", "c2"], ["a", "b"])
    draws = change_draws(wl, ["c1", "c2"], ["a", "b"], n_boot=20)
    (shift,) = distribution_shifts(shares, draws, ["a", "b"])
    assert shift.p_value is None and shift.note and "too few" in shift.note
