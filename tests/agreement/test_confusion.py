"""Consensus, confusion matrices, per-category scores and first-error-step agreement."""

from __future__ import annotations

import numpy as np
import pytest

from misstep.agreement import (
    confusion_counts,
    consensus,
    per_category_scores,
    step_scores,
)


def test_consensus_majority_and_ties() -> None:
    labels = {
        "p1": {"t1": "a", "t2": "a", "t3": "a"},
        "p2": {"t1": "a", "t2": "b", "t3": "b"},
        "p3": {"t1": "b", "t2": "b"},
    }
    agreed, tied = consensus(labels)
    # t1: a,a,b -> a; t2: a,b,b -> b; t3: a,b -> tie, left out.
    assert agreed == {"t1": "a", "t2": "b"}
    assert tied == ["t3"]


def test_confusion_and_scores_by_hand() -> None:
    cats = ["a", "b", "c"]
    ref = ["a", "a", "a", "b", "b", "c"]
    got = ["a", "a", "b", "b", "c", "c"]
    conf = confusion_counts(ref, got, cats)
    assert conf.tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    s = per_category_scores(conf)
    # a: tp 2, predicted 2, actual 3 -> P 1, R 2/3, F1 2*2/(2+3) = .8
    # b: tp 1, predicted 2, actual 2 -> P .5, R .5, F1 .5
    # c: tp 1, predicted 2, actual 1 -> P .5, R 1, F1 2/3
    assert s.precision.tolist() == pytest.approx([1.0, 0.5, 0.5])
    assert s.recall.tolist() == pytest.approx([2 / 3, 0.5, 1.0])
    assert s.f1.tolist() == pytest.approx([0.8, 0.5, 2 / 3])
    assert s.prevalence_reference.tolist() == pytest.approx([3 / 6, 2 / 6, 1 / 6])
    assert s.prevalence_rater.tolist() == pytest.approx([2 / 6, 2 / 6, 2 / 6])
    assert float(s.accuracy) == pytest.approx(4 / 6)


def test_weighted_confusion_and_empty_category() -> None:
    conf = confusion_counts(["a", "b"], ["a", "a"], ["a", "b", "c"], weights=[2.0, 0.5])
    assert conf.tolist() == [[2.0, 0, 0], [0.5, 0, 0], [0, 0, 0]]
    s = per_category_scores(conf)
    # c never occurs: 0/0 -> NaN, reported as None by the report.
    assert np.isnan(s.precision[2]) and np.isnan(s.recall[2])


def test_step_agreement_and_processbench_f1() -> None:
    # reference: errors at 1, 2, 0; error-free twice. rater: 1 (same), 3 (wrong), None
    # (missed), None (right), 4 (false alarm).
    ref = [1, 2, 0, None, None]
    got = [1, 3, None, None, 4]
    s = step_scores(ref, got)
    # exact: items 1 and 4 agree -> 2/5; acc erroneous 1/3; acc error-free 1/2
    # F1 = 2 * (1/3) * (1/2) / (1/3 + 1/2) = (1/3) / (5/6) = 0.4
    assert float(s.exact[0]) == pytest.approx(0.4)
    assert float(s.acc_erroneous[0]) == pytest.approx(1 / 3)
    assert float(s.acc_correct[0]) == pytest.approx(0.5)
    assert float(s.f1[0]) == pytest.approx(0.4)
    assert (s.n_erroneous, s.n_correct) == (3, 2)


def test_step_f1_both_zero_is_zero() -> None:
    s = step_scores([1, None], [2, 0])
    assert float(s.f1[0]) == 0.0
