"""The estimators of error-type shares as objects: ``JudgeOnly``, ``PPI`` and ``Pooled`` behind
one protocol, each returning a group's shares, their covariance and (where it bootstraps) its
replicates; ``error_distributions`` shows exactly what they return."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from misstep.agreement import (
    CORRECTIONS,
    MIN_PPI_HUMAN,
    AnalysisConfig,
    Estimator,
    Group,
    JudgeOnly,
    NoEstimate,
    ShareEstimate,
    ShareEstimator,
    ShareInputs,
    error_distributions,
)
from misstep.labels import HumanLabel, LabelStatus, StoredLabel

CATS = ["a", "b"]


def _group(per_problem: list[list[str]], dataset: str = "d") -> Group:
    types = [t for ts in per_problem for t in ts]
    return Group(
        checkpoint="c",
        dataset=dataset,
        trace_ids=[f"t{i}" for i in range(len(types))],
        types=types,
        strata=[dataset] * len(types),
        sizes={dataset: len(types)},
        clusters=[f"p{i}" for i, ts in enumerate(per_problem) for _ in ts],
    )


def test_judge_only_shares_and_their_covariance_by_hand() -> None:
    # problem 0: a a b (m = 3, x_a = 2); problem 1: a (m = 1, x_a = 1): r_a = 3/4.
    # residuals x_a - r_a m: 2 - 2.25 = -0.25 and 1 - 0.75 = 0.25, sum of squares 0.125;
    # var_a = P/(P-1) * 0.125 / 4^2 = 2 * 0.125 / 16; b's residuals are a's negated, so
    # var_b = var_a and cov_ab = -var_a.
    est = JudgeOnly(CATS, AnalysisConfig(n_boot=200)).estimate(_group([["a", "a", "b"], ["a"]]))
    assert est.estimator is Estimator.JUDGE
    assert est.shares.tolist() == pytest.approx([0.75, 0.25])
    var = 2 * 0.125 / 16
    assert est.cov == pytest.approx(np.array([[var, -var], [-var, var]]))
    assert est.n == 4 and est.n_units == 2
    assert est.draws is not None and est.draws.shape == (200, 2)
    assert np.allclose(est.draws.sum(axis=1), 1.0)  # every replicate is a distribution
    low, high = est.ci[0] or (1.0, 0.0)
    assert low <= 0.75 <= high


def test_judge_only_covariance_weighs_a_label_budget() -> None:
    # Dataset x holds 4 wrong traces, 2 labelled (a, on problems p0, p1); y holds 2, both
    # labelled (b, on q0, q1). Weights N_h / n_h: x 2, y 1. Problems' weighted counts:
    # p0 (2, 0), p1 (2, 0), q0 (0, 1), q1 (0, 1); m = 2, 2, 1, 1, total 6, r_a = 4/6.
    # Residuals of a: 2 - 2 * 4/6 = 2/3 (twice), 0 - 4/6 = -2/3 (twice): squares 16/9;
    # var_a = 4/3 * (16/9) / 36 = 64/972.
    group = Group(
        checkpoint="c",
        dataset="all",
        trace_ids=["x0", "x1", "y0", "y1"],
        types=["a", "a", "b", "b"],
        strata=["x", "x", "y", "y"],
        sizes={"x": 4, "y": 2},
        clusters=["x/p0", "x/p1", "y/q0", "y/q1"],
    )
    est = JudgeOnly(CATS, AnalysisConfig(n_boot=50)).estimate(group)
    assert est.shares.tolist() == pytest.approx([4 / 6, 2 / 6])  # stratified: 4 of 6 wrong
    assert est.cov[0, 0] == pytest.approx(64 / 972)
    assert est.cov[0, 1] == pytest.approx(-64 / 972)


def test_one_problem_has_no_covariance() -> None:
    est = JudgeOnly(CATS, AnalysisConfig(n_boot=20)).estimate(_group([["a", "b"]]))
    assert np.isnan(est.cov).all()
    # and a share seen in every label gets the exact interval over its one problem
    alone = JudgeOnly(CATS, AnalysisConfig(n_boot=20)).estimate(_group([["a", "a"]]))
    assert alone.ci[0] == pytest.approx((0.025, 1.0))  # (alpha/2)^(1/1) = 0.025


def _labels(n_per: int, ck: str, types: list[str]) -> dict[str, StoredLabel]:
    return {
        f"{ck}/{i}": StoredLabel(
            trace_id=f"{ck}/{i}", judge="j", status=LabelStatus.OK, error_type=types[i % 2]
        )
        for i in range(n_per)
    }


def _run(n_per: int = 40) -> tuple[pd.DataFrame, dict[str, StoredLabel], list[HumanLabel]]:
    """Two checkpoints of ``n_per`` wrong traces on ``n_per / 2`` problems; the judge alternates
    a, b; people label every other trace, agreeing except on every fourth."""
    rows = [
        {
            "trace_id": f"{ck}/{i}",
            "checkpoint": ck,
            "dataset": "d",
            "problem_id": f"p{i // 2}",
            "outcome": "wrong",
        }
        for ck in ("c1", "c2")
        for i in range(n_per)
    ]
    labels = _labels(n_per, "c1", CATS) | _labels(n_per, "c2", ["a", "a"])
    human = [
        HumanLabel(
            trace_id=t,
            annotator="p",
            error_type=(lab.error_type or "a") if i % 4 else "b",
        )
        for i, (t, lab) in enumerate(sorted(labels.items()))
        if i % 2 == 0
    ]
    return pd.DataFrame(rows), labels, human


def test_every_estimator_is_one_protocol() -> None:
    graded, labels, human = _run()
    config = AnalysisConfig(n_boot=100)
    (d, _) = error_distributions(graded, labels, CATS, human=human, config=config)
    inputs = ShareInputs(
        categories=CATS,
        judged={t: str(lab.error_type) for t, lab in labels.items()},
        people={h.trace_id: (h.error_type or "a", 1.0) for h in human},
        has_human=True,
    )
    ids = sorted(t for t in labels if t.startswith("c1/"))
    group = Group(
        checkpoint="c1",
        dataset="d",
        trace_ids=ids,
        types=[str(labels[t].error_type) for t in ids],
        strata=["d"] * len(ids),
        sizes={"d": len(ids)},
        clusters=[f"d\x1fp{int(t.split('/')[1]) // 2}" for t in ids],
    )
    judge = JudgeOnly(CATS, config)
    estimators: list[ShareEstimator] = [judge]
    estimators += [make(inputs, config, judge) for make in CORRECTIONS.values()]
    assert [e.name for e in estimators] == [Estimator.JUDGE, Estimator.PPI, Estimator.POOLED]
    for estimator in estimators:
        est = estimator.estimate(group)
        assert isinstance(est, ShareEstimate) and est.estimator is estimator.name
        assert est.shares.shape == (2,) and est.cov.shape == (2, 2) and len(est.ci) == 2
        assert (est.draws is None) == (estimator.name is Estimator.PPI)  # PPI is analytic
    # error_distributions shows what the estimators return, and keeps them
    assert d.judge_estimate is not None and d.corrected_estimate is not None
    assert d.error_dist == pytest.approx(dict(zip(CATS, d.judge_estimate.shares, strict=True)))
    assert d.error_dist_corrected == d.corrected_estimate.as_dict()
    assert d.error_dist_ci == d.corrected_estimate.ci_dict()
    assert d.estimate is d.corrected_estimate and d.estimator is Estimator.PPI


def test_ppi_refuses_a_group_with_too_few_human_labels_and_judge_corrects_nothing() -> None:
    graded, labels, human = _run(n_per=2 * (MIN_PPI_HUMAN - 1))
    (d, _) = error_distributions(graded, labels, CATS, human=human[: MIN_PPI_HUMAN - 1])
    assert d.error_dist_corrected is None and d.note and "ppi needs" in d.note
    assert d.estimate is d.judge_estimate  # the analysis falls back to the judge's shares
    inputs = ShareInputs(categories=CATS, judged={}, people={}, has_human=True)
    config = AnalysisConfig()
    ppi = CORRECTIONS[Estimator.PPI](inputs, config, JudgeOnly(CATS, config))
    assert isinstance(ppi.estimate(_group([["a"]])), NoEstimate)
    graded, labels, human = _run()
    judge_only = AnalysisConfig(estimator=Estimator.JUDGE)
    for d in error_distributions(graded, labels, CATS, human=human, config=judge_only):
        assert d.estimator is Estimator.JUDGE and d.error_dist_corrected is None
