"""The label budget: which traces are judged, with what inclusion probability, and the
stratified shares that weigh each dataset by its size."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from misstep.agreement import correct_distribution
from misstep.judge import JudgeConfig
from misstep.labels import LabelStatus, read_labels
from misstep.labels._budget import _allocate, label_sample
from misstep.pipelines import run_labeling
from misstep.taxonomy import load_taxonomy
from tests.judge.fake_openai import FakeOpenAIServer
from tests.pipelines.test_label import _row, _write

TAXONOMY = load_taxonomy(None)


def _table(sizes: dict[tuple[str, str], int]) -> pd.DataFrame:
    rows = [
        {"trace_id": f"{ck}-{ds}-{i}", "checkpoint": ck, "dataset": ds, "outcome": "wrong"}
        for (ck, ds), n in sizes.items()
        for i in range(n)
    ]
    rows.append({"trace_id": "c", "checkpoint": "a", "dataset": "x", "outcome": "correct"})
    return pd.DataFrame(rows)


def test_per_stratum_draws_n_of_each_with_its_probability() -> None:
    table = _table({("a", "x"): 10, ("a", "y"): 3, ("b", "x"): 6})
    sample = label_sample(table, per_stratum=4, seed=1)
    assert sample is not None
    per = Counter(t.rsplit("-", 1)[0] for t in sample)
    assert per == {"a-x": 4, "a-y": 3, "b-x": 4}
    assert {sample[t] for t in sample if t.startswith("a-x")} == {0.4}
    assert {sample[t] for t in sample if t.startswith("a-y")} == {1.0}
    assert "c" not in sample  # correct traces are not judged
    assert label_sample(table, per_stratum=4, seed=1) == sample  # resumable: same draw
    assert label_sample(table, per_stratum=4, seed=2) != sample
    assert label_sample(table) is None


def test_pilot_spreads_the_total_evenly() -> None:
    rng = np.random.default_rng(0)
    assert sorted(_allocate([10, 2, 7], 9, rng)) in ([2, 3, 4],)  # 3 each, 2 capped, +1 left
    assert _allocate([10, 2, 7], 100, rng) == [10, 2, 7]
    assert sum(_allocate([5, 5, 5, 5], 6, rng)) == 6
    table = _table({("a", "x"): 50, ("b", "x"): 50, ("c", "x"): 1})
    sample = label_sample(table, total=9, seed=0)
    assert sample is not None and len(sample) == 9
    per = Counter(t.split("-")[0] for t in sample)
    assert per["c"] == 1 and {per["a"], per["b"]} == {4}


def test_stratified_shares_recover_the_truth_and_their_intervals_cover_it() -> None:
    # one checkpoint, two datasets labelled at very different rates: 50 of 900 and 50 of 100
    rng = np.random.default_rng(7)
    cats = ["arithmetic", "misread"]
    truth = (900 * 0.8 + 100 * 0.1) / 1000  # 0.73 arithmetic
    covered = 0
    reps = 200
    estimates = []
    for r in range(reps):
        a = rng.choice(cats, size=50, p=[0.8, 0.2]).tolist()
        b = rng.choice(cats, size=50, p=[0.1, 0.9]).tolist()
        result = correct_distribution(
            a + b,
            [],
            cats,
            strata=["x"] * 50 + ["y"] * 50,
            stratum_sizes={"x": 900, "y": 100},
            n_boot=400,
            seed=r,
        )
        estimates.append(result.raw["arithmetic"])
        lo, hi = result.raw_ci["arithmetic"] or (0, 0)
        covered += lo <= truth <= hi
    assert abs(float(np.mean(estimates)) - truth) < 0.01  # unbiased; plain shares give 0.45
    assert 0.90 <= covered / reps <= 0.99


@pytest.fixture
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


def test_label_budget_in_the_pipeline(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    rows = [_row(i, checkpoint=f"step_{i % 2}") for i in range(12)]
    traces, run = _write(tmp_path / "t.jsonl", rows), tmp_path / "run"
    config = JudgeConfig(backend="openai", base_url=fake.base_url, concurrency=4)
    summary = run_labeling(traces, run, config, taxonomy=TAXONOMY, per_checkpoint=2)
    labels = read_labels(run)
    ok = [lab for lab in labels.values() if lab.status is LabelStatus.OK]
    assert len(ok) == 4 and fake.count == 4
    assert Counter(lab.checkpoint for lab in ok) == {"step_0": 2, "step_1": 2}
    assert [lab.inclusion_prob for lab in ok] == [pytest.approx(2 / 6)] * 4
    skipped = [lab for lab in labels.values() if lab.status is LabelStatus.SKIPPED]
    assert len(skipped) == 8 and {lab.reason for lab in skipped} == {"not sampled"}
    assert summary.status_counts == {"ok": 4, "skipped": 8}
    # resumed: the same draw, nothing asked again
    again = run_labeling(traces, run, config, taxonomy=TAXONOMY, per_checkpoint=2)
    assert fake.count == 4 and again.resumed == 4
    # a larger budget adds labels and keeps the ones already there
    run_labeling(traces, run, config, taxonomy=TAXONOMY, per_checkpoint=4)
    assert fake.count == 8
    assert sum(lab.status is LabelStatus.OK for lab in read_labels(run).values()) == 8


def test_a_pooled_checkpoint_weighs_each_dataset_by_its_wrong_traces() -> None:
    from misstep.agreement import error_distributions
    from misstep.labels import LabelRow

    # checkpoint c: dataset x has 4 wrong traces, 2 labelled (arithmetic); dataset y has 2,
    # both labelled (misread). By hand: arithmetic = 4/6 of the wrong traces, not 2/4.
    graded = pd.DataFrame(
        {
            "trace_id": ["x0", "x1", "x2", "x3", "y0", "y1"],
            "checkpoint": ["c"] * 6,
            "dataset": ["x"] * 4 + ["y"] * 2,
            "outcome": ["wrong"] * 6,
        }
    )
    labels = {
        "x0": LabelRow("ok", "arithmetic"),
        "x1": LabelRow("ok", "arithmetic"),
        "y0": LabelRow("ok", "misread"),
        "y1": LabelRow("ok", "misread"),
    }
    (pooled,) = error_distributions(graded, labels, TAXONOMY.keys, pool_datasets=True)
    assert pooled.error_dist is not None
    assert pooled.error_dist["arithmetic"] == pytest.approx(4 / 6)
    assert pooled.error_dist["misread"] == pytest.approx(2 / 6)
    by_dataset = error_distributions(graded, labels, TAXONOMY.keys)
    assert [d.error_dist["arithmetic"] for d in by_dataset if d.error_dist] == [1.0, 0.0]


def test_link_shares_are_the_estimators_with_the_same_design_weights() -> None:
    from misstep.agreement import error_distributions
    from misstep.labels import LabelRow
    from misstep.link._shifts import checkpoint_shares

    # the checkpoint of the test above: x has 4 wrong (2 labelled, problems p0 and p1), y has
    # 2 (both labelled, q0 and q1)
    graded = pd.DataFrame(
        {
            "trace_id": ["x0", "x1", "x2", "x3", "y0", "y1"],
            "checkpoint": ["c"] * 6,
            "dataset": ["x"] * 4 + ["y"] * 2,
            "problem_id": ["p0", "p1", "p2", "p3", "q0", "q1"],
            "outcome": ["wrong"] * 6,
        }
    )
    labels = {
        "x0": LabelRow("ok", "arithmetic"),
        "x1": LabelRow("ok", "arithmetic"),
        "y0": LabelRow("ok", "misread"),
        "y1": LabelRow("ok", "misread"),
    }
    types = ["arithmetic", "misread"]
    (d,) = error_distributions(graded, labels, TAXONOMY.keys, pool_datasets=True)
    (shares,) = checkpoint_shares({"c": d}, ["c"], types)
    assert shares.shares["arithmetic"] == pytest.approx(4 / 6)  # as error_distributions says
    assert shares.n_labelled == 4 and shares.n_problems == 4
    # weights N_h / n_h: x 2, y 1; problems' weighted arithmetic counts 2, 2, 0, 0 of
    # m = 2, 2, 1, 1 (total 6): residuals +-2/3, squares 16/9; var = 4/3 * 16/9 / 36
    assert shares.variance["arithmetic"] == pytest.approx(64 / 972)
    # equal rates (x with 2 wrong traces, both labelled): the plain share of the labels, 1/2
    (same,) = error_distributions(
        graded.iloc[[0, 1, 4, 5]], labels, TAXONOMY.keys, pool_datasets=True
    )
    assert same.error_dist is not None and same.error_dist["arithmetic"] == pytest.approx(0.5)
