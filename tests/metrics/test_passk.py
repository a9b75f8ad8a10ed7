from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from misstep.metrics import pass_at_k, pass_at_k_one


def _brute(n: int, c: int, k: int) -> float:
    flags = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(flags, k))
    return sum(any(s) for s in subsets) / len(subsets)


def test_hand_worked_values() -> None:
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5
    assert pass_at_k_one(4, 1, 2) == pytest.approx(0.5)
    # n=16, c=2, k=4: 1 - C(14,4)/C(16,4) = 1 - 1001/1820 = 0.45
    assert pass_at_k_one(16, 2, 4) == pytest.approx(0.45)
    assert pass_at_k_one(5, 0, 3) == 0.0
    assert pass_at_k_one(5, 5, 1) == 1.0
    # pass@1 is the share correct: 3/8
    assert pass_at_k_one(8, 3, 1) == pytest.approx(0.375)


def test_k_above_n_is_nan_and_bad_input_raises() -> None:
    assert math.isnan(pass_at_k_one(3, 1, 4))
    with pytest.raises(ValueError):
        pass_at_k_one(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k_one(3, 1, 0)


def test_matches_brute_force_on_random_cases() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 9)
        c = rng.randint(0, n)
        k = rng.randint(1, n)
        assert pass_at_k_one(n, c, k) == pytest.approx(_brute(n, c, k), abs=1e-12)


def test_vectorised_equals_scalar() -> None:
    n = np.array([4, 16, 16, 3, 4])
    c = np.array([1, 2, 2, 1, 1])
    got = pass_at_k(n, c, 2)
    want = [pass_at_k_one(int(a), int(b), 2) for a, b in zip(n, c, strict=True)]
    np.testing.assert_allclose(got, want)
    assert pass_at_k([], [], 1).shape == (0,)
