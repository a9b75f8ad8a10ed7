"""The judge's uncorrected shares: their interval resamples problems, because the samples of
one problem err alike. Simulations with a known truth check the coverage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from misstep.agreement import AnalysisConfig, correct_distribution, error_distributions
from misstep.labels import LabelStatus, StoredLabel

CATS = ["arithmetic", "other"]
TRUTH = 0.3  # expected share of arithmetic among wrong traces


def _draw(rng: np.random.Generator, a: float | None, problems: int = 40, per: int = 8) -> list[str]:
    """``per`` wrong traces of each problem; a problem's arithmetic rate is 0.3 (a None:
    independent traces) or Beta(0.3 a, 0.7 a), mean 0.3, intra-problem correlation
    1 / (a + 1)."""
    types: list[str] = []
    for _ in range(problems):
        p = TRUTH if a is None else rng.beta(a * TRUTH, a * (1 - TRUTH))
        types += ["arithmetic" if u < p else "other" for u in rng.random(per)]
    return types


def _coverage(a: float | None, *, clustered: bool, reps: int = 200) -> float:
    rng = np.random.default_rng(11)
    hits = 0
    for r in range(reps):
        types = _draw(rng, a)
        clusters = [str(i // 8) for i in range(len(types))] if clustered else None
        result = correct_distribution(types, [], CATS, n_boot=400, seed=r, clusters=clusters)
        lo, hi = result.raw_ci["arithmetic"] or (0.0, 0.0)
        hits += lo <= TRUTH <= hi
    return hits / reps


@pytest.mark.parametrize("a", [None, 2.0, 0.5])
def test_the_problem_bootstrap_covers_a_clustered_truth(a: float | None) -> None:
    # 95% intervals over 200 simulated runs of 40 problems: the binomial sd of the coverage
    # is sqrt(.95 * .05 / 200) = 0.015; a percentile bootstrap of 40 clusters runs a little
    # short, hence 0.88.
    assert 0.88 <= _coverage(a, clustered=True) <= 0.99


def test_labels_resampled_one_by_one_miss_it() -> None:
    # what the interval was before: intra-problem correlation 2/3 (a = 0.5) -> far below 95%
    assert _coverage(0.5, clustered=False) < 0.8


def test_error_distributions_resample_the_problems() -> None:
    # 10 problems x 4 wrong traces, every trace of a problem judged alike: 3 arithmetic, 7 other
    rows, labels = [], {}
    for p in range(10):
        for s in range(4):
            tid = f"p{p}/{s}"
            rows.append({"trace_id": tid, "checkpoint": "c", "dataset": "d", "problem_id": f"p{p}"})
            kind = "arithmetic" if p < 3 else "other"
            labels[tid] = StoredLabel(
                trace_id=tid, judge="j", status=LabelStatus.OK, error_type=kind
            )
    graded = pd.DataFrame(rows).assign(outcome="wrong")
    [d] = error_distributions(graded, labels, CATS, config=AnalysisConfig(n_boot=500, seed=3))
    assert d.error_dist == {"arithmetic": 0.3, "other": pytest.approx(0.7)}
    types = [str(labels[r["trace_id"]].error_type) for r in rows]
    by_problem = correct_distribution(
        types, [], CATS, n_boot=500, seed=3, clusters=["d\x1f" + r["problem_id"] for r in rows]
    )
    assert d.error_dist_raw_ci == by_problem.raw_ci
    lo, hi = d.error_dist_raw_ci["arithmetic"] or (0.0, 0.0)
    one_by_one = correct_distribution(types, [], CATS, n_boot=500, seed=3)
    lo1, hi1 = one_by_one.raw_ci["arithmetic"] or (0.0, 0.0)
    # 10 clusters, not 40 labels: about twice as wide (sqrt(4) for perfectly alike problems)
    assert hi - lo > 1.6 * (hi1 - lo1)
