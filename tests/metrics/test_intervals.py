"""Intervals on vote metrics: hand-worked properties, and a simulation with a known population
whose 95% intervals must cover the truth 93-97% of the time."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from misstep.metrics import mean_ci, resample_counts, verdict, vote_metrics


def test_mean_ci_basics() -> None:
    rng = np.random.default_rng(0)
    assert mean_ci(np.array([1.0]), 100, rng) is None  # one problem: no interval
    ci = mean_ci(np.array([0.0, 1.0, 0.0, 1.0]), 2000, rng)
    assert ci is not None and ci[0] <= 0.5 <= ci[1]
    # constant values: the interval is the point
    assert mean_ci(np.full(10, 0.3), 100, rng) == pytest.approx((0.3, 0.3))
    assert verdict((0.01, 0.2)) == "up" and verdict((-0.3, -0.1)) == "down"
    assert verdict((-0.1, 0.2)) == "within noise" and verdict(None) == "within noise"


def _graded(p_correct: np.ndarray, wrong: np.ndarray, n: int, rng: np.random.Generator, ck: str):
    """A graded table: per problem, n samples; the answer is class 0 (correct) with
    probability p, else a wrong class 1..3 drawn from ``wrong``."""
    rows = []
    for i, p in enumerate(p_correct):
        classes = np.where(rng.random(n) < p, 0, 1 + rng.choice(3, size=n, p=wrong))
        for j, cls in enumerate(classes):
            rows.append((f"{ck}/{i}/{j}", ck, f"q{i}", j, f"a{cls}", cls == 0))
    df = pd.DataFrame(
        rows, columns=["trace_id", "checkpoint", "problem_id", "sample_idx", "answer", "correct"]
    )
    df["answer_class"] = df["answer"]
    df["outcome"] = np.where(df["correct"], "correct", "wrong")
    df["dataset"] = "d"
    df["step"] = 1
    return df


def _maj_truth(p: float, wrong: np.ndarray, k: int) -> float:
    """Exact expected score of a k-sample majority vote (ties share the credit)."""
    probs = np.concatenate(([p], (1 - p) * wrong))
    total = 0.0
    for counts in itertools.product(range(k + 1), repeat=4):
        if sum(counts) != k:
            continue
        weight = math.factorial(k)
        for c, q in zip(counts, probs, strict=True):
            weight *= q**c / math.factorial(c)
        top = max(counts)
        winners = [i for i, c in enumerate(counts) if c == top]
        total += weight * (1.0 / len(winners) if 0 in winners else 0.0)
    return total


def test_intervals_cover_the_population_value() -> None:
    # Population: 3,000 problems with p ~ Beta(0.8, 1.6); wrong answers split 0.5/0.3/0.2.
    # Each repetition draws a 60-problem benchmark and 8 samples per problem, and asks whether
    # the 95% intervals of pass@1, maj@4 and sc_gain@4 cover the population values.
    pop = np.random.default_rng(123).beta(0.8, 1.6, size=3000)
    wrong = np.array([0.5, 0.3, 0.2])
    grid = np.linspace(0, 1, 201)
    maj_grid = np.array([_maj_truth(float(q), wrong, 4) for q in grid])
    truth_pass = float(pop.mean())
    truth_maj = float(np.interp(pop, grid, maj_grid).mean())
    truth_gain = truth_maj - truth_pass
    rng = np.random.default_rng(7)
    reps, hits = 400, {"pass": 0, "maj": 0, "gain": 0}
    for _ in range(reps):
        sample = rng.choice(pop, size=60, replace=False)
        (row,) = vote_metrics(_graded(sample, wrong, 8, rng, "c"), [1, 4], n_boot=1000)
        for key, ci, truth in (
            ("pass", row.pass_at_k_ci[1], truth_pass),
            ("maj", row.maj_at_k_ci[4], truth_maj),
            ("gain", row.sc_gain_at_k_ci[4], truth_gain),
        ):
            assert ci is not None
            hits[key] += ci[0] <= truth <= ci[1]
    coverage = {key: value / reps for key, value in hits.items()}
    print(coverage)  # shown with -s; quoted in docs/metrics.md
    assert all(0.93 <= value <= 0.97 for value in coverage.values()), coverage


def test_resample_counts_has_the_multinomial_moments() -> None:
    """Each row counts n draws with replacement: every row sums to n, and each count has the
    multinomial(n, 1/n) mean 1, variance n * (1/n) * (1 - 1/n) and covariance -n / n^2.
    With n = 5: variance 0.8, covariance -0.2 (hand arithmetic); 100,000 rows put the sample
    moments within about 0.01 of them (standard error of a variance of 0.8: about 0.004)."""
    counts = resample_counts(5, 100_000, np.random.default_rng(3))
    assert counts.shape == (100_000, 5)
    assert counts.dtype == np.int64
    assert (counts.sum(axis=1) == 5).all()
    assert counts.min() >= 0
    np.testing.assert_allclose(counts.mean(axis=0), 1.0, atol=0.02)
    np.testing.assert_allclose(counts.var(axis=0), 0.8, atol=0.02)
    assert abs(np.cov(counts[:, 0], counts[:, 1])[0, 1] + 0.2) < 0.02
    assert resample_counts(0, 4, np.random.default_rng(0)).shape == (4, 0)
