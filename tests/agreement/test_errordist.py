"""Per-checkpoint error-type distributions for ``misstep summary``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from misstep.agreement import AnalysisConfig, Estimator, error_distributions, plot_confusion
from misstep.labels import HumanLabel, LabelStatus, StoredLabel, human_consensus

CATS = ["arithmetic", "other"]


def _graded() -> pd.DataFrame:
    rows = [
        ("t1", "s1", "wrong"),
        ("t2", "s1", "wrong"),
        ("t3", "s1", "wrong"),
        ("t4", "s1", "correct"),
        ("t5", "s2", "wrong"),
        ("t6", "s2", "truncated"),
    ]
    return pd.DataFrame(
        [{"trace_id": t, "checkpoint": c, "dataset": "d", "outcome": o} for t, c, o in rows]
    )


def _labels() -> dict[str, StoredLabel]:
    ok = {"t1": "arithmetic", "t2": "arithmetic", "t5": "other", "t4": "other"}
    labels = {
        t: StoredLabel(trace_id=t, judge="j", status=LabelStatus.OK, error_type=e)
        for t, e in ok.items()
    }
    labels["t3"] = StoredLabel(trace_id="t3", judge="j", status=LabelStatus.FAILED)
    return labels


def test_raw_distribution_counts_ok_labels_of_wrong_traces_only() -> None:
    out = error_distributions(_graded(), _labels(), CATS, config=AnalysisConfig(n_boot=50))
    by = {d.checkpoint: d for d in out}
    # s1: wrong t1, t2 (ok, arithmetic), t3 (failed); t4 is correct and does not count.
    assert by["s1"].n_wrong == 3
    assert by["s1"].error_dist == {"arithmetic": 1.0, "other": 0.0}
    assert by["s1"].status_counts == {"ok": 2, "failed": 1}
    assert by["s1"].error_dist_corrected is None
    assert by["s2"].error_dist == {"arithmetic": 0.0, "other": 1.0}


def test_corrected_with_human_labels_and_plot(tmp_path: Path) -> None:
    human = [
        HumanLabel(trace_id="t1", annotator="a", error_type="arithmetic"),
        HumanLabel(trace_id="t1", annotator="b", error_type="arithmetic"),
        HumanLabel(trace_id="t2", annotator="a", error_type="other"),
        HumanLabel(trace_id="t5", annotator="a", error_type="other", weight=2.0),
    ]
    assert dict(human_consensus(human).items()) == {
        "t1": ("arithmetic", 1.0),
        "t2": ("other", 1.0),
        "t5": ("other", 2.0),
    }
    config = AnalysisConfig(n_boot=50, estimator=Estimator.POOLED)
    out = error_distributions(_graded(), _labels(), CATS, human=human, config=config)
    s1 = next(d for d in out if d.checkpoint == "s1")
    assert s1.n_human == 3
    assert s1.error_dist_corrected is not None and s1.error_dist_ci is not None
    # M (smoothed slightly): people arithmetic -> judge arithmetic; people other -> judge
    # arithmetic 1/3 of the weight (t2, w 1) and other 2/3 (t5, w 2). The judge's s1 says
    # arithmetic 100%: q = (1, 0) is best matched by p = (1, 0) on the simplex.
    assert s1.error_dist_corrected["arithmetic"] == pytest.approx(1.0, abs=0.02)
    png = plot_confusion(_labels(), human, CATS, tmp_path / "conf.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
