from __future__ import annotations

import math

import pytest

from misstep.metrics import problem_stats
from tests.metrics._vote_tables import graded_table, samples


def _stats() -> dict[str, dict[str, object]]:
    table = graded_table(
        {
            # A (correct) x1, B x2, C x1
            ("ck", "d", "p1"): samples(A=1, B=2, C=1),
            # A x2, B x2: a tie between the correct and a wrong class
            ("ck", "d", "p2"): samples(A=2, B=2),
            # all truncated, nothing correct
            ("ck", "d", "p3"): samples(none=3),
            # A x3, B x1, one truncated: the majority is right
            ("ck", "d", "p4"): samples(A=3, B=1, none=1),
            # only wrong answers B x2, C x2 (tie among wrong classes), no correct sample
            ("ck", "d", "p5"): samples(B=2, C=2),
        }
    )
    stats = problem_stats(table)
    return {str(row["problem_id"]): row for row in stats.to_dict("records")}


def test_entropy_top1_and_consistency_by_hand() -> None:
    p1 = _stats()["p1"]
    # shares 1/4, 1/2, 1/4: H = 1/4*2 + 1/2*1 + 1/4*2 = 1.5 bits
    assert p1["entropy"] == pytest.approx(1.5)
    assert p1["top1_share"] == pytest.approx(0.5)  # B: 2 of 4 answered
    # wrong answered samples: B, B, C -> the most common wrong class B holds 2 of 3
    assert p1["wrong_consistency"] == pytest.approx(2 / 3)
    assert p1["top_wrong_class"] == "B" and p1["top_wrong_count"] == 2
    assert p1["majority_class"] == "B"
    assert not p1["majority_correct"] and p1["majority_failure"]
    assert p1["pass@1"] == pytest.approx(0.25)
    assert (p1["n"], p1["c"], p1["n_answered"]) == (4, 1, 4)


def test_tie_between_correct_and_wrong_is_a_failure() -> None:
    p2 = _stats()["p2"]
    assert p2["majority_tied"] and p2["majority_failure"] and not p2["majority_correct"]
    # Under a tie the wrong class is shown as the winner.
    assert p2["majority_class"] == "B"
    assert p2["entropy"] == pytest.approx(1.0)  # two classes of 2: 1 bit
    assert p2["wrong_consistency"] == pytest.approx(1.0)


def test_no_answer_and_no_wrong_are_undefined_not_zero() -> None:
    stats = _stats()
    p3 = stats["p3"]
    assert math.isnan(p3["entropy"]) and math.isnan(p3["top1_share"])
    assert math.isnan(p3["wrong_consistency"])
    assert p3["majority_class"] is None and p3["top_wrong_class"] is None
    assert not p3["majority_failure"]  # no correct sample: not a failure
    assert p3["n_truncated"] == 3 and p3["n_answered"] == 0


def test_right_majority_and_all_wrong_problem() -> None:
    stats = _stats()
    p4 = stats["p4"]
    assert p4["majority_class"] == "A" and p4["majority_correct"] and not p4["majority_failure"]
    assert p4["top1_share"] == pytest.approx(3 / 4)  # of answered samples, not of n=5
    assert p4["wrong_consistency"] == pytest.approx(1.0)
    p5 = stats["p5"]
    # Wrong classes tie: smallest key wins; no correct sample, so never a failure.
    assert p5["majority_class"] == "B" and not p5["majority_failure"]
    assert p5["wrong_consistency"] == pytest.approx(0.5)


def test_one_row_per_checkpoint_dataset_problem_with_stable_columns() -> None:
    table = graded_table(
        {
            ("c1", "d1", "p"): samples(A=1),
            ("c1", "d2", "p"): samples(B=1),
            ("c2", "d1", "p"): samples(A=2),
        }
    )
    stats = problem_stats(table)
    assert len(stats) == 3
    for column in (
        "n",
        "c",
        "n_answered",
        "pass@1",
        "entropy",
        "top1_share",
        "wrong_consistency",
        "majority_class",
        "majority_correct",
        "majority_failure",
        "top_wrong_class",
        "top_wrong_count",
        "n_truncated",
        "n_no_answer",
    ):
        assert column in stats.columns
