"""``compare``: hand-worked, and calibrated on runs drawn from one model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from misstep.metrics import compare_runs, vote_metrics


def _run(answers: dict[str, list[str | None]], right: dict[str, str], ck: str) -> pd.DataFrame:
    rows = []
    for pid, given in answers.items():
        for i, a in enumerate(given):
            rows.append(
                {
                    "trace_id": f"{ck}/{pid}/{i}",
                    "checkpoint": ck,
                    "step": 1,
                    "dataset": "d",
                    "problem_id": pid,
                    "sample_idx": i,
                    "answer": a,
                    "answer_class": a,
                    "outcome": "no_answer"
                    if a is None
                    else "correct"
                    if a == right[pid]
                    else "wrong",
                    "correct": a == right[pid],
                    "response_chars": 10,
                }
            )
    return pd.DataFrame(rows)


RIGHT = {"p1": "1", "p2": "2", "p3": "3"}


def _outcome(answer: str | None, right: str) -> str:
    return "no_answer" if answer is None else "correct" if answer == right else "wrong"


def test_hand_worked_comparison() -> None:
    # Note "2" is wrong for p1 and right for p2: classes are right per problem.
    a = _run({"p1": ["1", "1", "2"], "p2": ["2", "5", "5"], "p3": ["3", "3", None]}, RIGHT, "a")
    b = _run({"p1": ["2", "2", "1"], "p2": ["2", "2", "5"], "p3": ["3", None, None]}, RIGHT, "b")
    result = compare_runs(a, b, n_perm=500)
    # full votes: a: p1 right, p2 wrong, p3 right -> 2/3; b: p1 wrong, p2 right, p3 right -> 2/3
    assert (result.a, result.b, result.delta) == pytest.approx((2 / 3, 2 / 3, 0.0))
    assert {f["problem"]: f["change"] for f in result.flipped} == {
        "d/p1": "right -> wrong",
        "d/p2": "wrong -> right",
    }
    assert result.p_value > 0.5 and result.verdict == "within noise"
    p1 = next(p for p in result.problems if p["problem"] == "d/p1")
    assert p1["a"] == {"samples": 3, "pass@1": 2 / 3, "majority": "1", "margin": 1, "score": 1.0}
    pass1 = compare_runs(a, b, metric="pass@1", n_perm=200)
    # a: (2/3 + 1/3 + 2/3) / 3 = 5/9; b: (1/3 + 2/3 + 1/3) / 3 = 4/9
    assert pass1.delta == pytest.approx(4 / 9 - 5 / 9)
    assert result.differences["a"]["unanswered_rate"] == pytest.approx(1 / 9)
    assert result.differences["b"]["unanswered_rate"] == pytest.approx(2 / 9)


def test_the_compared_score_is_summarys_full_vote() -> None:
    a = _run({"p1": ["1", "2", "2", "1"], "p2": ["2", "5", "5", "2"]}, RIGHT, "a")
    b = _run({"p1": ["1", "1", "2", "1"], "p2": ["5", "5", "5", "2"]}, RIGHT, "b")
    result = compare_runs(a, b, n_perm=200)
    (row_a,) = vote_metrics(a, [4])
    (row_b,) = vote_metrics(b, [4])
    assert result.a == pytest.approx(row_a.maj_at_k[4])  # ties share the credit: 0.5 + 0.5
    assert result.b == pytest.approx(row_b.maj_at_k[4])


def _draw(p: np.ndarray, n: int, rng: np.random.Generator, ck: str) -> pd.DataFrame:
    answers = {}
    for i, q in enumerate(p):
        given = np.where(
            rng.random(n) < q, "r", rng.choice(["x", "y", "z"], size=n, p=[0.5, 0.3, 0.2])
        )
        answers[f"q{i}"] = [str(g) for g in given]
    return _run(answers, {f"q{i}": "r" for i in range(len(p))}, ck)


def test_same_model_rejects_about_5_percent_and_a_planted_gap_is_found() -> None:
    rng = np.random.default_rng(11)
    p = rng.beta(1.0, 1.5, size=40)
    rejections = 0
    reps = 200
    for _ in range(reps):
        result = compare_runs(_draw(p, 8, rng, "a"), _draw(p, 8, rng, "b"), n_perm=400)
        rejections += result.p_value < 0.05
    assert 0.015 <= rejections / reps <= 0.09, rejections
    better = np.clip(p + 0.25, 0, 1)
    found = sum(
        compare_runs(_draw(p, 8, rng, "a"), _draw(better, 8, rng, "b"), n_perm=400).p_value < 0.05
        for _ in range(20)
    )
    assert found >= 18, found


def test_a_problem_without_any_answer_compares() -> None:
    """A shared problem where no sample of either run has an answer scores 0 for both (the
    permutation test resamples each problem over its own classes: here none)."""

    def run(answers: list[str | None]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "checkpoint": "c",
                "dataset": "d",
                "problem_id": ["p", "p", "q", "q"],
                "answer": answers,
                "answer_class": answers,
                "outcome": ["correct" if a == "1" else "no_answer" for a in answers],
                "correct": [a == "1" for a in answers],
            }
        )

    result = compare_runs(run(["1", "1", None, None]), run(["1", "2", None, None]), n_perm=200)
    q = next(p for p in result.problems if p["problem"] == "d/q")
    assert q["a"]["score"] == 0.0 and q["b"]["score"] == 0.0
    # p: a's vote is "1" (score 1); b ties "1" and "2" (score 1/2); q scores 0 in both.
    assert result.a == pytest.approx(0.5) and result.b == pytest.approx(0.25)
