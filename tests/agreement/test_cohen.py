"""Cohen's kappa: scikit-learn's value against hand-worked ones, and the vectorised form."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from misstep.agreement import cohen_kappa, kappa_from_confusions


def test_hand_worked_small_example() -> None:
    a = ["x", "x", "y", "y"]
    b = ["x", "y", "y", "y"]
    # p_o = 3/4; marginals a: x .5, y .5; b: x .25, y .75
    # p_e = .5*.25 + .5*.75 = .5; kappa = (.75 - .5) / (1 - .5) = 0.5
    assert cohen_kappa(a, b) == pytest.approx(0.5)


def test_published_example_yes_no_applications() -> None:
    # Wikipedia "Cohen's kappa", 50 grant proposals: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = .7; A yes 25/50 = .5, B yes 30/50 = .6
    # p_e = .5*.6 + .5*.4 = .5; kappa = (.7 - .5) / .5 = 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_perfect_and_undefined() -> None:
    assert cohen_kappa(["a", "b"], ["a", "b"]) == pytest.approx(1.0)
    # One category everywhere: p_e = 1, kappa = 0/0.
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["a"], ["a", "b"])


def test_vectorised_form_equals_sklearn() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 4, size=50)
        b = np.where(rng.random(50) < 0.6, a, rng.integers(0, 4, size=50))
        conf = np.zeros((4, 4))
        np.add.at(conf, (a, b), 1.0)
        assert kappa_from_confusions(conf) == pytest.approx(cohen_kappa_score(a, b))
    # A stack, with one undefined matrix (all mass in one cell).
    stack = np.zeros((2, 2, 2))
    stack[0] = [[3, 1], [0, 4]]
    stack[1] = [[5, 0], [0, 0]]
    out = kappa_from_confusions(stack)
    # p_o = 7/8; rows (4, 4), cols (3, 5): p_e = (4*3 + 4*5) / 64 = .5; kappa = .375/.5 = .75
    assert out[0] == pytest.approx(0.75)
    assert np.isnan(out[1])
