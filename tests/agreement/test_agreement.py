"""The agreement report: shape, hand-worked numbers, groups, real annotators."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from misstep.agreement import Rating, agreement_report, cohen_kappa
from misstep.labels import read_human_labels

CATS = ["arithmetic", "misread", "other"]


def _small() -> dict[str, dict[str, Rating | str]]:
    return {
        "ann1": {"t1": "arithmetic", "t2": "arithmetic", "t3": "misread", "t4": "other"},
        "ann2": {"t1": "arithmetic", "t2": "misread", "t3": "misread", "t4": "other"},
        "judge": {"t1": "arithmetic", "t2": "arithmetic", "t3": "other", "t4": "other"},
    }


def test_json_shape_and_pairs() -> None:
    report = agreement_report(_small(), judges=["judge"], categories=CATS, n_boot=50)
    data = json.loads(report.to_json())
    assert set(data) >= {"pairs", "overall", "per_category", "confusion", "disagreements", "groups"}
    assert set(data["pairs"][0]) >= {"a", "b", "n", "agreement", "cohen_kappa", "cohen_kappa_ci"}
    assert set(data["overall"]) == {
        "raters",
        "n_items",
        "krippendorff_alpha",
        "krippendorff_alpha_ci",
        "fleiss_kappa",
        "fleiss_items",
        "fleiss_ratings",
    }
    pairs = {(p["a"], p["b"]): p for p in data["pairs"]}
    # ann1 vs ann2: t2 differs -> 3/4
    assert pairs[("ann1", "ann2")]["agreement"] == pytest.approx(0.75)
    assert pairs[("ann1", "ann2")]["cohen_kappa"] == pytest.approx(
        cohen_kappa(
            ["arithmetic", "arithmetic", "misread", "other"],
            ["arithmetic", "misread", "misread", "other"],
        )
    )
    # Every item has three ratings: Fleiss applies.
    assert data["overall"]["fleiss_kappa"] is not None
    assert data["overall"]["n_items"] == 4
    assert len(data["disagreements"]) == 1 + 1 + 2  # ann1/ann2 t2; ann1/judge t3; ann2/judge t2,t3


def test_judge_against_consensus_with_tie() -> None:
    report = agreement_report(_small(), judges=["judge"], categories=CATS, n_boot=50)
    (entry,) = report.confusion
    # Consensus of ann1, ann2: t1 arithmetic, t2 tie (dropped), t3 misread, t4 other.
    assert entry.ties_dropped == 1
    assert entry.n == 3
    # judge: t1 arithmetic (right), t3 other (wrong, misread), t4 other (right)
    assert entry.counts == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
    assert entry.accuracy == pytest.approx(2 / 3)
    assert entry.row_normalised[1] == [0.0, 0.0, 1.0]
    other = next(r for r in report.per_category if r.category == "other")
    # other: tp 1, predicted 2, actual 1 -> precision .5, recall 1
    assert (other.precision, other.recall) == pytest.approx((0.5, 1.0))
    assert report.notes and "without a majority" in report.notes[0]


def test_groups_repeat_the_report() -> None:
    groups = {"t1": "step_1", "t2": "step_1", "t3": "step_2", "t4": "step_2"}
    report = agreement_report(
        _small(), judges=["judge"], categories=CATS, by="checkpoint", groups=groups, n_boot=20
    )
    assert report.by == "checkpoint"
    assert set(report.groups) == {"step_1", "step_2"}
    g1 = {(p.a, p.b): p for p in report.groups["step_1"].pairs}
    assert g1[("ann1", "ann2")].agreement == pytest.approx(0.5)  # t1 same, t2 differs
    assert report.groups["step_1"].disagreements == []


def test_steps_and_seeded_intervals() -> None:
    raters = {
        "expert": {
            "t1": Rating(first_error_step=1, has_error=True),
            "t2": Rating(has_error=False),
            "t3": Rating(first_error_step=0, has_error=True),
        },
        "judge": {
            "t1": Rating(error_type="arithmetic", first_error_step=1, has_error=True),
            "t2": Rating(error_type="other", first_error_step=None, has_error=False),
            "t3": Rating(error_type="other", first_error_step=2, has_error=True),
        },
    }
    report = agreement_report(raters, judges=["judge"], n_boot=100, seed=3)
    (step,) = report.steps
    assert (step.a, step.b) == ("expert", "judge")
    # erroneous: t1 right, t3 wrong -> .5; error-free: t2 right -> 1; F1 = 2*.5*1/1.5 = 2/3
    assert step.acc_erroneous == pytest.approx(0.5)
    assert step.acc_error_free == pytest.approx(1.0)
    assert step.processbench_f1 == pytest.approx(2 / 3)
    assert step.exact_agreement == pytest.approx(2 / 3)
    again = agreement_report(raters, judges=["judge"], n_boot=100, seed=3)
    assert again.steps[0].exact_agreement_ci == step.exact_agreement_ci
    # No types from the expert: no type pair to compare, so no pair is listed.
    assert report.pairs == []


def _mrben(shared_data: Path) -> dict[str, dict[str, str | None]]:
    out: dict[str, dict[str, str | None]] = {}
    with open(shared_data / "mrben" / "human_labels.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["annotator"] in ("mrben_annotator_A", "mrben_annotator_B"):
                out.setdefault(row["annotator"], {})[row["trace_id"]] = row["error_type"]
    return out


def test_real_mrben_annotators_against_each_other(shared_data: Path) -> None:
    labels = read_human_labels(shared_data / "mrben" / "human_labels.jsonl")
    raters: dict[str, dict[str, Rating | str]] = {}
    for label in labels:
        if label.annotator in ("mrben_annotator_A", "mrben_annotator_B"):
            raters.setdefault(label.annotator, {})[label.trace_id] = Rating(
                label.error_type, label.first_error_step, label.has_error
            )
    report = agreement_report(raters, n_boot=200)
    (pair,) = report.pairs
    # Independently, by plain counting on the raw JSON.
    plain = _mrben(shared_data)
    a, b = plain["mrben_annotator_A"], plain["mrben_annotator_B"]
    both = [t for t in a if t in b and a[t] is not None and b[t] is not None]
    same = sum(a[t] == b[t] for t in both)
    assert pair.n == len(both)
    assert pair.agreement == pytest.approx(same / len(both))
    assert pair.agreement == pytest.approx(0.58, abs=0.01)  # the data README's figure
    assert pair.cohen_kappa is not None and 0.3 < pair.cohen_kappa < 0.5
    # Cross-check kappa by hand from the plain counts: p_e from the two marginals.
    ca = Counter(a[t] for t in both)
    cb = Counter(b[t] for t in both)
    p_e = sum(ca[k] * cb[k] for k in ca) / len(both) ** 2
    assert pair.cohen_kappa == pytest.approx((same / len(both) - p_e) / (1 - p_e))
    assert report.overall.krippendorff_alpha == pytest.approx(pair.cohen_kappa, abs=0.01)
