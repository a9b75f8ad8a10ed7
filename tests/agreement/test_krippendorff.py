"""Krippendorff's alpha (nominal, missing allowed): hand-worked and published values."""

from __future__ import annotations

import numpy as np
import pytest

from misstep.agreement import alpha_from_coincidences, item_coincidences, krippendorff_alpha

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, missing values; nominal alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def _labels(matrix: list[list[int | None]]) -> list[list[str | None]]:
    return [[None if v is None else f"c{v}" for v in row] for row in matrix]


def _codes(matrix: list[list[str | None]]) -> tuple[np.ndarray, int]:
    cats = sorted({v for row in matrix for v in row if v is not None})
    items = len(matrix[0])
    codes = np.array(
        [[cats.index(r[i]) if r[i] is not None else -1 for r in matrix] for i in range(items)]
    )
    return codes, len(cats)


def test_published_example() -> None:
    data = _labels(KRIPPENDORFF_2011)
    assert krippendorff_alpha(data) == pytest.approx(0.743, abs=5e-4)
    codes, k = _codes(data)
    # Unit 12 has a single rating: no pairs, so it adds nothing.
    assert alpha_from_coincidences(item_coincidences(codes, k).sum(axis=0)) == pytest.approx(
        0.743, abs=5e-4
    )


def test_hand_worked_two_raters() -> None:
    data = [["a", "a", "b"], ["a", "b", "b"]]
    # Coincidences: item 1 o_aa += 2; item 2 o_ab += 1, o_ba += 1; item 3 o_bb += 2.
    # n_a = 3, n_b = 3, n = 6; observed off-diagonal 2; expected n_a*n_b*2 = 18.
    # alpha = 1 - (n - 1) * 2 / 18 = 1 - 10/18 = 0.4444
    assert krippendorff_alpha(data) == pytest.approx(4 / 9)
    codes, k = _codes(data)
    per_item = item_coincidences(codes, k)
    assert per_item[1].tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert alpha_from_coincidences(per_item.sum(axis=0)) == pytest.approx(4 / 9)


def test_missing_ratings_and_undefined() -> None:
    # A missing rating leaves the item with one rating: it drops out (same as without it).
    with_missing = [["a", "a", "b", "a"], ["a", "b", "b", None]]
    assert krippendorff_alpha(with_missing) == pytest.approx(4 / 9)
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None
    assert krippendorff_alpha([["a", None], [None, "b"]]) is None
