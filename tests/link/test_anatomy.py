"""Majority-vote failure anatomy on hand-built problems."""

from __future__ import annotations

import pandas as pd
import pytest

from misstep.link._anatomy import failure_mix, problem_votes, winner_types


def _problem(pid: str, answers: list[str | None], right: str = "R") -> list[dict[str, object]]:
    rows = []
    for i, a in enumerate(answers):
        outcome = "truncated" if a is None else ("correct" if a == right else "wrong")
        rows.append(
            {
                "trace_id": f"{pid}/{i}",
                "checkpoint": "c1",
                "dataset": "d",
                "problem_id": pid,
                "answer": a,
                "answer_class": a,
                "outcome": outcome,
                "correct": outcome == "correct",
            }
        )
    return rows


@pytest.fixture
def votes() -> pd.DataFrame:
    rows = (
        # consistent: 5 of 8 answered say W (5 > 8/2), 2 right, 1 X
        _problem("cons", ["W"] * 5 + ["R"] * 2 + ["X"])
        # scattered: W 3, X 2, Y 2, R 2 (3 > 2 wins, 3 <= 9/2)
        + _problem("scat", ["W"] * 3 + ["X"] * 2 + ["Y"] * 2 + ["R"] * 2)
        # truncation: 5 truncated > 1 right, 5 >= top wrong 2
        + _problem("trunc", [None] * 5 + ["R", "W", "W"])
        # tie: W 2 vs R 2 is a failure (scattered: 2 <= 4/2)
        + _problem("tie", ["W", "W", "R", "R"])
        # right wins: R 3 vs W 2, no failure
        + _problem("ok", ["R"] * 3 + ["W"] * 2)
        # never right: no failure possible
        + _problem("none", ["W"] * 4)
    )
    return problem_votes(pd.DataFrame(rows)).set_index("problem_id")


def test_kinds(votes: pd.DataFrame) -> None:
    assert votes.loc["cons", "kind"] == "consistent-wrong"
    assert votes.loc["scat", "kind"] == "scattered"
    assert votes.loc["trunc", "kind"] == "truncation-driven"
    assert votes.loc["tie", "kind"] == "scattered"
    assert not votes.loc["ok", "majority_failure"]
    assert not votes.loc["none", "majority_failure"]
    assert pd.isna(votes.loc["ok", "kind"])


def test_counts_entropy_consistency(votes: pd.DataFrame) -> None:
    row = votes.loc["cons"]
    assert (row["n"], row["correct_votes"], row["top_wrong_count"], row["n_answered"]) == (
        8,
        2,
        5,
        8,
    )
    # wrong answered: W 5 + X 1 = 6 -> consistency 5/6
    assert row["wrong_consistency"] == pytest.approx(5 / 6)
    # entropy of (5, 2, 1)/8 in bits
    import math

    h = -sum(p * math.log2(p) for p in (5 / 8, 2 / 8, 1 / 8))
    assert row["entropy"] == pytest.approx(h)
    t = votes.loc["trunc"]
    assert (t["n_unanswered"], t["n_answered"], t["correct_votes"]) == (5, 3, 1)


def test_winner_mix(votes: pd.DataFrame) -> None:
    wl = pd.DataFrame(
        {
            "checkpoint": "c1",
            "dataset": "d",
            "problem_id": ["cons"] * 4,
            "trace_id": ["cons/0", "cons/1", "cons/2", "cons/7"],
            "answer_class": ["W", "W", "W", "X"],
            "error_type": ["misread", "misread", "logic", "logic"],
        }
    )
    mix = failure_mix(votes.reset_index(), wl)
    assert mix["in_winner"].tolist() == [True, True, True, False]
    win = winner_types(mix).set_index("problem_id")
    # 2 of the 3 labelled winning traces are misread
    assert win.loc["cons", "winner_type"] == "misread"
    assert win.loc["cons", "winner_type_share"] == pytest.approx(2 / 3)
