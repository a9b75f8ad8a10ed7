from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from misstep.metrics import MajMethod, _majk, maj_at_k_one


def _brute(counts: list[int], correct: list[bool], n_none: int, k: int) -> Fraction:
    """Enumerate every k-subset of the samples and average the vote score exactly."""
    labels = [i for i, a in enumerate(counts) for _ in range(a)] + [-1] * n_none
    total, seen = Fraction(0), 0
    for subset in itertools.combinations(range(len(labels)), k):
        seen += 1
        votes: dict[int, int] = {}
        for s in subset:
            if labels[s] >= 0:
                votes[labels[s]] = votes.get(labels[s], 0) + 1
        if not votes:
            continue
        top = max(votes.values())
        winners = [cls for cls, v in votes.items() if v == top]
        total += Fraction(sum(correct[w] for w in winners), len(winners))
    return total / seen


def test_hand_worked_tie() -> None:
    # Samples A A B (A correct), k=2: {A,A} scores 1, each of the two {A,B} ties -> 1/2.
    # maj@2 = (1 + 1/2 + 1/2) / 3 = 2/3
    got = maj_at_k_one([2, 1], [True, False], 0, 2)
    assert got.value == pytest.approx(2 / 3)
    assert got.method is MajMethod.DP and got.se == 0.0


def test_hand_worked_no_answer() -> None:
    # Samples A, B, -, - (A correct; two truncated), k=2. C(4,2)=6 subsets:
    # {A,B} tie 1/2; {A,-} x2 -> 1 each; {B,-} x2 -> 0; {-,-} -> 0 (no answer).
    # maj@2 = (1/2 + 2) / 6 = 5/12
    assert maj_at_k_one([1, 1], [True, False], 2, 2).value == pytest.approx(5 / 12)


def test_closed_forms() -> None:
    # Counts A=3 (correct), B=2, none=2 (n=7). k=1: share in a correct class, 3/7;
    # k=n=7: the full vote, A wins 3 to 2 -> 1.
    assert maj_at_k_one([3, 2], [True, False], 2, 1).value == pytest.approx(3 / 7)
    assert maj_at_k_one([3, 2], [True, False], 2, 7).value == 1.0
    # k=n with a tie between the correct class and a wrong one: 1/2.
    assert maj_at_k_one([2, 2], [True, False], 0, 4).value == 0.5
    # No correct class at all: 0 whatever k.
    assert maj_at_k_one([2, 2], [False, False], 1, 3).value == 0.0


def test_two_correct_classes_count_together() -> None:
    # A (correct) x1, A' (also correct) x1, B x1, k=3: three-way tie, 2 of 3 correct -> 2/3.
    assert maj_at_k_one([1, 1, 1], [True, True, False], 0, 3).value == pytest.approx(2 / 3)


@settings(max_examples=150, deadline=None)
@given(
    counts=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    flags=st.lists(st.booleans(), min_size=4, max_size=4),
    n_none=st.integers(0, 3),
    data=st.data(),
)
def test_dp_matches_brute_force(
    counts: list[int], flags: list[bool], n_none: int, data: st.DataObject
) -> None:
    correct = flags[: len(counts)]
    n = sum(counts) + n_none
    k = data.draw(st.integers(1, n))
    want = float(_brute(counts, correct, n_none, k))
    assert maj_at_k_one(counts, correct, n_none, k).value == pytest.approx(want, abs=1e-12)


def test_enumeration_fallback_matches_brute_force() -> None:
    rng = random.Random(3)
    for _ in range(40):
        counts = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
        correct = [rng.random() < 0.5 for _ in counts]
        n_none = rng.randint(0, 2)
        k = rng.randint(2, sum(counts) + n_none - 1) if sum(counts) + n_none > 2 else 1
        got = maj_at_k_one(counts, correct, n_none, k, max_dp_steps=0)
        want = float(_brute(counts, correct, n_none, k))
        assert got.value == pytest.approx(want, abs=1e-12)
        if 1 < k < sum(counts) + n_none and any(correct):
            assert got.method is MajMethod.ENUMERATION


def test_monte_carlo_fallback_is_seeded_and_near_exact() -> None:
    counts, correct, n_none, k = [10, 8, 6, 3], [False, True, False, False], 5, 12
    # C(32, 12) = 225,792,840 > 100,000 subsets: with the DP disabled this must be Monte Carlo.
    exact = maj_at_k_one(counts, correct, n_none, k).value
    first = maj_at_k_one(counts, correct, n_none, k, max_dp_steps=0, seed=1)
    again = maj_at_k_one(counts, correct, n_none, k, max_dp_steps=0, seed=1)
    other = maj_at_k_one(counts, correct, n_none, k, max_dp_steps=0, seed=2)
    assert first.method is MajMethod.MONTE_CARLO
    assert first == again
    assert first.value != other.value
    assert 0 < first.se < 0.02
    assert abs(first.value - exact) < 4 * first.se


def test_monte_carlo_needs_2000_subsets_and_valid_k() -> None:
    with pytest.raises(ValueError):
        maj_at_k_one([3], [True], 0, 2, mc_subsets=100)
    with pytest.raises(ValueError):
        maj_at_k_one([3], [True], 0, 4)


def test_large_exact_case_runs_with_dp(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 samples, k=32: C(64,32) ~ 1.8e18 subsets, far past enumeration, still exact by DP.
    got = maj_at_k_one([20, 18, 10, 6, 4], [False, True, False, False, False], 6, 32)
    assert got.method is MajMethod.DP
    # Forcing the fallback through the module default gives a Monte Carlo estimate that agrees.
    monkeypatch.setattr(_majk, "MAX_DP_STEPS", 0)
    mc = maj_at_k_one([20, 18, 10, 6, 4], [False, True, False, False, False], 6, 32)
    assert mc.method is MajMethod.MONTE_CARLO
    assert abs(mc.value - got.value) < 4 * mc.se + 1e-9
