"""Error-type distributions corrected for the judge's confusion."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from misstep.agreement import (
    correct_distribution,
    estimate_confusion,
    simplex_lstsq,
)
from misstep.errors import AnalysisError

CATS = ["a", "b", "c", "d", "e"]
P_TRUE = np.array([0.40, 0.25, 0.15, 0.12, 0.08])
M_TRUE = np.array(
    [
        [0.75, 0.05, 0.05, 0.10, 0.05],
        [0.10, 0.60, 0.10, 0.10, 0.10],
        [0.05, 0.10, 0.60, 0.20, 0.05],
        [0.10, 0.05, 0.10, 0.65, 0.10],
        [0.20, 0.10, 0.05, 0.15, 0.50],
    ]
)


def test_confusion_estimate_by_hand() -> None:
    m = estimate_confusion(["a", "a", "b"], ["a", "b", "b"], ["a", "b"], smoothing=0.0)
    # human a: judge a once, b once -> [.5, .5]; human b: judge b -> [0, 1]
    assert m.tolist() == [[0.5, 0.5], [0.0, 1.0]]
    w = estimate_confusion(["a", "a"], ["a", "b"], ["a", "b"], weights=[3.0, 1.0], smoothing=0.0)
    assert w[0].tolist() == [0.75, 0.25]  # weights 3 and 1
    # An unseen human type gets a uniform row from the smoothing alone.
    s = estimate_confusion(["a"], ["a"], ["a", "b"], smoothing=0.5)
    assert s[1].tolist() == [0.5, 0.5]
    assert s[0].tolist() == pytest.approx([1.5 / 2, 0.5 / 2])


def test_exact_recovery_when_q_is_consistent() -> None:
    q = M_TRUE.T @ P_TRUE
    assert simplex_lstsq(q, M_TRUE) == pytest.approx(P_TRUE, abs=1e-9)


def _brute_force(q: np.ndarray, m: np.ndarray, steps: int = 200) -> tuple[np.ndarray, float]:
    best, best_obj = np.zeros(3), np.inf
    for i, j in itertools.product(range(steps + 1), repeat=2):
        if i + j > steps:
            continue
        p = np.array([i, j, steps - i - j]) / steps
        obj = float(((m.T @ p - q) ** 2).sum())
        if obj < best_obj:
            best, best_obj = p, obj
    return best, best_obj


def test_simplex_least_squares_matches_a_grid_search() -> None:
    rng = np.random.default_rng(7)
    for _ in range(5):
        m = rng.dirichlet(np.ones(3), size=3) * 0.5 + np.eye(3) * 0.5
        q = rng.dirichlet(np.ones(3))
        p = simplex_lstsq(q, m)
        assert p.sum() == pytest.approx(1.0) and (p >= 0).all()
        grid, grid_obj = _brute_force(q, m)
        obj = float(((m.T @ p - q) ** 2).sum())
        assert obj <= grid_obj + 1e-12
        assert p == pytest.approx(grid, abs=0.01)
    # A stack gives the same as one at a time.
    qs = rng.dirichlet(np.ones(3), size=4)
    ms = rng.dirichlet(np.ones(3), size=(4, 3)) * 0.5 + np.eye(3) * 0.5
    stacked = simplex_lstsq(qs, ms)
    for i in range(4):
        assert stacked[i] == pytest.approx(simplex_lstsq(qs[i], ms[i]))


def _simulate(
    rng: np.random.Generator, n: int, n_human: int
) -> tuple[list[str], list[tuple[str, str]]]:
    truth = rng.choice(5, size=n, p=P_TRUE)
    u = rng.random(n)
    judged = (np.cumsum(M_TRUE[truth], axis=1) < u[:, None]).sum(axis=1)
    sub = rng.choice(n, size=n_human, replace=False)
    return [CATS[j] for j in judged], [(CATS[truth[i]], CATS[judged[i]]) for i in sub]


def test_raw_only_without_human_labels_and_errors() -> None:
    result = correct_distribution(["a", "a", "b", "a"], [], CATS, n_boot=100)
    assert result.raw["a"] == pytest.approx(0.75)
    assert result.corrected == {}
    assert result.raw_ci["a"] is not None
    with pytest.raises(AnalysisError, match="no judge labels"):
        correct_distribution([], [], CATS)


@pytest.mark.slow
def test_simulation_closer_to_truth_and_intervals_cover() -> None:
    # 100 simulated runs: 1,500 judged wrong traces, 300 of them labelled by people.
    rng = np.random.default_rng(2024)
    raw_err, corr_err, covered = [], [], []
    for seed in range(100):
        judged, pairs = _simulate(rng, 1500, 300)
        r = correct_distribution(judged, pairs, CATS, n_boot=500, seed=seed)
        raw = np.array([r.raw[c] for c in CATS])
        corr = np.array([r.corrected[c] for c in CATS])
        raw_err.append(np.abs(raw - P_TRUE).sum())
        corr_err.append(np.abs(corr - P_TRUE).sum())
        for i, c in enumerate(CATS):
            ci = r.corrected_ci[c]
            assert ci is not None
            covered.append(ci[0] <= P_TRUE[i] <= ci[1])
    # The raw distribution is biased by M (L1 error ~0.19); the corrected one is not.
    assert np.mean(corr_err) < np.mean(raw_err)
    assert np.mean(covered) >= 0.85


def test_simulation_small_is_closer_than_raw() -> None:
    # A faster version: a large human subset makes the advantage clear in each of 5 runs.
    rng = np.random.default_rng(11)
    for seed in range(5):
        judged, pairs = _simulate(rng, 3000, 1500)
        r = correct_distribution(judged, pairs, CATS, n_boot=100, seed=seed)
        raw = np.array([r.raw[c] for c in CATS])
        corr = np.array([r.corrected[c] for c in CATS])
        assert np.abs(corr - P_TRUE).sum() < np.abs(raw - P_TRUE).sum()
