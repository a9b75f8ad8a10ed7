"""Overlap for agreement: who labels which trace (``assign_annotators``), and the intervals of
people's agreement on the overlap against a known truth."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from misstep.agreement import agreement_report, assign_annotators
from misstep.errors import OptionError


def test_assignment_by_hand() -> None:
    ids = [f"t{i}" for i in range(10)]
    got = assign_annotators(ids, ["a", "b", "c"], overlap=0.3, rng=random.Random(1))
    assert list(got) == ids  # in the order given
    # round(0.3 * 10) = 3 traces to two people, 7 to one: 13 assignments, loads 5, 4, 4
    assert Counter(len(p) for p in got.values()) == {1: 7, 2: 3}
    assert all(len(set(p)) == len(p) for p in got.values())
    load = Counter(a for p in got.values() for a in p)
    assert sorted(load.values()) == [4, 4, 5]
    # no overlap: 10 traces over 3 people, loads 4, 3, 3
    single = assign_annotators(ids, ["a", "b", "c"], rng=random.Random(2))
    assert sorted(Counter(p[0] for p in single.values()).values()) == [3, 3, 4]
    # overlap 1 with two people: each trace to both
    both = assign_annotators(ids, ["a", "b"], overlap=1.0, rng=random.Random(3))
    assert all(sorted(p) == ["a", "b"] for p in both.values())
    # 0.25 of 10 = 2.5 rounds half up: 3 doubled
    half = assign_annotators(ids, ["a", "b"], overlap=0.25, rng=random.Random(4))
    assert sum(len(p) == 2 for p in half.values()) == 3


def test_every_pair_shares_traces_and_fresh_keys_differ() -> None:
    ids = [f"t{i}" for i in range(300)]
    got = assign_annotators(ids, ["a", "b", "c", "d"], overlap=0.5)
    pairs = Counter(tuple(sorted(p)) for p in got.values() if len(p) == 2)
    # 150 doubled traces over the 6 pairs: every pair gets some (each about 25)
    assert len(pairs) == 6 and min(pairs.values()) >= 10
    again = assign_annotators(ids, ["a", "b", "c", "d"], overlap=0.5)
    assert again != got  # a fresh key each time, not --seed


@pytest.mark.parametrize(
    ("names", "overlap"), [([], 0.0), (["a", "a"], 0.0), (["a"], 0.2), (["a", "b"], 1.5)]
)
def test_assignment_errors(names: list[str], overlap: float) -> None:
    with pytest.raises(OptionError):
        assign_annotators(["t1"], names, overlap=overlap)


def _true_kappa(prior: np.ndarray, q: float) -> float:
    """Population kappa of two independent raters who each give the true type with
    probability q, else a type uniformly at random (the true one included)."""
    k = len(prior)
    say = q * np.eye(k) + (1 - q) / k  # P(says j | truth t), rows t
    p_o = float(prior @ (say**2).sum(axis=1))
    marginal = prior @ say
    p_e = float(marginal @ marginal)
    return (p_o - p_e) / (1 - p_e)


@pytest.mark.slow
def test_overlap_agreement_intervals_cover_the_true_kappa() -> None:
    """200 simulated overlaps of 120 traces between two people (shares 0.5/0.3/0.2, each
    person right 70% of the time, else uniform): the bootstrap 95% intervals of Cohen's kappa
    and Krippendorff's alpha cover the true value (0.4719 for both: both raters have the same
    marginals) about 95% of the time."""
    prior = np.array([0.5, 0.3, 0.2])
    truth_kappa = _true_kappa(prior, 0.7)
    # by hand: P(j|t) = 0.7 [j = t] + 0.1; p_o = 0.8^2 + 2 * 0.1^2 = 0.66 for every t;
    # marginal = 0.7 prior + 0.1 = (0.45, 0.31, 0.24); p_e = 0.2025 + 0.0961 + 0.0576 = 0.3562;
    # kappa = (0.66 - 0.3562) / 0.6438 = 0.47189
    assert truth_kappa == pytest.approx(0.47189, abs=1e-5)
    rng = np.random.default_rng(7)
    cats = ["arithmetic", "misread", "other"]
    covered = Counter[str]()
    runs = 200
    for run in range(runs):
        truth = rng.choice(3, size=120, p=prior)

        def rater(truth: np.ndarray = truth) -> list[str]:
            right = rng.random(truth.size) < 0.7
            noise = rng.integers(0, 3, truth.size)
            return [cats[int(x)] for x in np.where(right, truth, noise)]

        a, b = rater(), rater()
        report = agreement_report(
            {
                "alice": {f"t{i}": x for i, x in enumerate(a)},
                "bob": {f"t{i}": x for i, x in enumerate(b)},
            },
            categories=cats,
            n_boot=400,
            seed=run,
        )
        (pair,) = report.pairs
        lo, hi = pair.cohen_kappa_ci or (np.nan, np.nan)
        covered["kappa"] += lo <= truth_kappa <= hi
        lo, hi = report.overall.krippendorff_alpha_ci or (np.nan, np.nan)
        covered["alpha"] += lo <= truth_kappa <= hi
    for name in ("kappa", "alpha"):
        # 95% of 200 has a binomial sd of 1.5 points
        print(name, covered[name] / runs)
        assert 0.90 <= covered[name] / runs <= 0.99, (name, covered[name])
