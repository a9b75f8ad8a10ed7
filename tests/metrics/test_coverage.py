from __future__ import annotations

import pytest

from misstep.metrics import coverage
from tests.metrics._vote_tables import graded_table, samples

STEPS = {"c1": 1, "c2": 2, "c3": 3}
SOLVED = samples(A=1, B=1)
BOTH = samples(A=2)
MISSED = samples(B=2)


def _run() -> dict[str, object]:
    # Four problems a=(d,p1) b=(d,p2) c=(d,p3) d=(e,p1), two samples each per checkpoint.
    # S1 = {a, b}, S2 = {b, c}, S3 = {b, d}
    table = graded_table(
        {
            ("c3", "d", "p1"): MISSED,
            ("c3", "d", "p2"): SOLVED,
            ("c3", "d", "p3"): MISSED,
            ("c3", "e", "p1"): SOLVED,
            ("c1", "d", "p1"): SOLVED,
            ("c1", "d", "p2"): SOLVED,
            ("c1", "d", "p3"): MISSED,
            ("c1", "e", "p1"): MISSED,
            ("c2", "d", "p1"): MISSED,
            ("c2", "d", "p2"): BOTH,
            ("c2", "d", "p3"): SOLVED,
            ("c2", "e", "p1"): MISSED,
        },
        STEPS,
    )
    return coverage(table).to_json()


def test_sets_and_transitions_by_hand() -> None:
    got = _run()
    assert got["checkpoints"] == ["c1", "c2", "c3"]
    assert got["n_problems"] == 4
    assert got["solved"] == [2, 2, 2]
    third = pytest.approx(1 / 3)
    assert got["jaccard"] == [[1.0, third, third], [third, 1.0, third], [third, third, 1.0]]
    assert got["retention"] == [None, 0.5, 0.5]  # |{b}| / |S_t-1| = 1/2
    assert got["acquisition"] == [None, 0.25, 0.25]  # one new problem of 4
    assert got["forgetting"] == [None, 0.25, 0.25]  # one lost problem of 4
    assert got["union_coverage"] == 1.0


def test_union_at_one_checkpoint_budget_by_hand() -> None:
    # Budget 2 samples per problem split over 3 checkpoints: 1, 1, 0.
    # a: c1 draws 1 of (A,B): 1/2; c2 misses -> 1/2.  b: c2 draws a correct one surely -> 1.
    # c: c2 draws 1 of (A,B) -> 1/2.  d: only c3 solves it, and c3 draws nothing -> 0.
    # mean = (1/2 + 1 + 1/2 + 0) / 4 = 0.5
    assert _run()["union_coverage_at_budget"] == pytest.approx(0.5)


def test_empty_solved_set_gives_nulls() -> None:
    table = graded_table(
        {("c1", "d", "p"): MISSED, ("c2", "d", "p"): MISSED, ("c3", "d", "p"): SOLVED}, STEPS
    )
    got = coverage(table)
    assert got.jaccard[0][0] is None and got.jaccard[0][2] == 0.0
    assert got.retention == [None, None, None]
    assert got.acquisition == [None, 0.0, 1.0]
    assert got.forgetting == [None, 0.0, 0.0]
    # budget 2 over 3 checkpoints: c3 gets 0 samples, so nothing can be solved
    assert got.union_coverage == 1.0 and got.union_coverage_at_budget == 0.0
