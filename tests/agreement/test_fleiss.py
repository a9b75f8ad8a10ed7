"""Fleiss' kappa: hand-worked and the published example of Fleiss (1971) / Wikipedia."""

from __future__ import annotations

import pytest

from misstep.agreement import fleiss_kappa_of

# Wikipedia "Fleiss' kappa" worked example: 10 items, 14 raters, 5 categories; kappa = 0.210.
WIKIPEDIA_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_published_example() -> None:
    ratings = [
        [f"c{j}" for j, count in enumerate(row) for _ in range(count)] for row in WIKIPEDIA_COUNTS
    ]
    assert fleiss_kappa_of(ratings) == pytest.approx(0.210, abs=5e-4)


def test_hand_worked() -> None:
    # Items (a,a), (a,b), (b,b): P_i = 1, 0, 1 -> P_bar = 2/3; p_a = p_b = 1/2 -> P_e = 1/2
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    assert fleiss_kappa_of([["a", "a"], ["a", "b"], ["b", "b"]]) == pytest.approx(1 / 3)


def test_unequal_raters_or_degenerate_is_none() -> None:
    assert fleiss_kappa_of([["a", "a"], ["a", "b", "b"]]) is None
    assert fleiss_kappa_of([["a"], ["b"]]) is None
    assert fleiss_kappa_of([["a", "a"], ["a", "a"]]) is None
    assert fleiss_kappa_of([]) is None
