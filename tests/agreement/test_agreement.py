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


def test_processbench_f1_against_the_consensus_whatever_the_annotator_ids() -> None:
    """Issue 34, item 12: erroneous items labelled by A and B, error-free ones by C (as in
    Mr-Ben); no pair has both kinds, so every pair's F1 was "-". The judge against the
    people's consensus step has both."""
    err = Rating(error_type="arithmetic", has_error=True)
    raters = {
        "A": {"t1": _step(err, 2), "t2": _step(err, 1), "t5": _step(err, 0)},
        "B": {"t1": _step(err, 2), "t2": _step(err, 3)},
        "C": {"t3": Rating(has_error=False), "t4": Rating(has_error=False)},
        "judge": {
            "t1": _step(err, 2),
            "t2": _step(err, 1),
            "t3": Rating(has_error=False),
            "t4": Rating(has_error=False),
            "t5": _step(err, 3),
        },
    }
    report = agreement_report(raters, judges=["judge"], n_boot=50)
    pairwise = [s for s in report.steps if not s.a.startswith("consensus")]
    assert all(s.processbench_f1 is None for s in pairwise)
    (row,) = [s for s in report.steps if s.a.startswith("consensus")]
    assert (row.a, row.b) == ("consensus(A,B,C)", "judge")
    # consensus: t1 step 2 (A, B), t2 tied (1 vs 3: left out), t3 and t4 no error (C), t5 step
    # 0 (A alone). The judge: t1 right, t5 wrong (3), t3 and t4 no error: right.
    # acc erroneous 1/2, acc error-free 2/2, F1 = 2 * 0.5 * 1 / 1.5 = 2/3; exact 3/4
    assert (row.n, row.n_erroneous, row.n_error_free) == (4, 2, 2)
    assert (row.acc_erroneous, row.acc_error_free) == (0.5, 1.0)
    assert row.processbench_f1 == pytest.approx(2 / 3)
    assert row.exact_agreement == pytest.approx(0.75)
    assert row.processbench_f1_ci is not None
    assert any("1 item(s) whose people give different first error steps" in n for n in report.notes)


def _step(rating: Rating, step: int) -> Rating:
    return Rating(error_type=rating.error_type, first_error_step=step, has_error=True)


def test_a_note_says_why_kappa_and_alpha_differ() -> None:
    """10 items: A says arithmetic on 2 and other on 8, B arithmetic on 8 and other on 2;
    they agree on 4 (2 arithmetic, 2 other)."""
    a = ["arithmetic"] * 2 + ["other"] * 8
    b = ["arithmetic"] * 8 + ["other"] * 2
    items = [f"t{i}" for i in range(10)]
    report = agreement_report(
        {"A": dict(zip(items, a, strict=True)), "B": dict(zip(items, b, strict=True))}, n_boot=20
    )
    (pair,) = report.pairs
    # kappa: p_o = 0.4, p_e = 0.2 * 0.8 + 0.8 * 0.2 = 0.32, (0.4 - 0.32) / 0.68 = 0.1176
    assert pair.cohen_kappa == pytest.approx(0.08 / 0.68)
    # alpha: pooled shares 10/20 each; 6 disagreeing items give 12 off-diagonal coincidences;
    # 1 - (20 - 1) * 12 / (2 * 10 * 10) = -0.14
    assert pair.krippendorff_alpha == pytest.approx(-0.14)
    assert report.overall.krippendorff_alpha == pytest.approx(-0.14)
    note, why = [n for n in report.notes if "Krippendorff" in n]
    assert "0.118" in note and "-0.140" in note
    assert "arithmetic: 20% for A, 80% for B" in note
    assert "pooled" in why and "own type shares" in why
    # Alike shares: no note.
    same = agreement_report(
        {"A": dict(zip(items, a, strict=True)), "B": dict(zip(items, a[::-1], strict=True))},
        n_boot=20,
    )
    assert not [n for n in same.notes if "Krippendorff" in n]
    # On 3 items with alike shares alpha's small-sample correction alone sets them apart: no
    # word on shares. kappa: p_o 1/3, p_e 4/9 + 1/9 = 5/9, (1/3 - 5/9) / (4/9) = -0.5; alpha:
    # 6 values (4 arithmetic, 2 other), 2 disagreeing items, 1 - 5 * 4 / (2 * 4 * 2) = -0.25.
    few = agreement_report(
        {
            "A": {"t1": "arithmetic", "t2": "arithmetic", "t3": "other"},
            "B": {"t1": "other", "t2": "arithmetic", "t3": "arithmetic"},
        },
        n_boot=20,
    )
    (tiny,) = few.pairs
    assert tiny.cohen_kappa == pytest.approx(-0.5)
    assert tiny.krippendorff_alpha == pytest.approx(-0.25)
    assert not [n for n in few.notes if "Krippendorff" in n]
