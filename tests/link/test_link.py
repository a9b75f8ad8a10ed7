"""The link analysis: planted causes come out on top; null runs claim nothing."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from misstep.agreement import AnalysisConfig, Estimator, labelled_run_of
from misstep.errors import InvalidRecordError
from misstep.link import link_analysis, read_train_metrics
from tests.link.link_synth import synth_run


@pytest.mark.parametrize(
    ("plant_at", "plant_type", "seed"), [(5, "misread", 1), (3, "theorem_misuse", 2)]
)
def test_planted_cause_is_top_finding(plant_at: int, plant_type: str, seed: int) -> None:
    graded, labels = synth_run(plant_at=plant_at, plant_type=plant_type, seed=seed)
    r = link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=200)))
    top = r.findings[0]
    assert top.kind == "type_shift"
    assert top.checkpoint == f"global_step_{(plant_at + 1) * 100}"
    assert top.error_type == plant_type
    assert top.significant and top.p_value is not None and top.p_value < 0.05
    assert "consistent-wrong answers carried by" in top.sentence


@pytest.mark.slow
@pytest.mark.parametrize("seed", [100, 101, 102, 103, 104])
def test_no_planted_cause_claims_nothing(seed: int) -> None:
    graded, labels = synth_run(seed=seed, n_problems=100)
    r = link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=200)))
    assert not [f.sentence for f in r.findings if f.significant]
    assert "no finding reaches significance (adjusted p < 0.05)" in r.notes


def test_json_keys_and_train_metrics(tmp_path: object) -> None:
    graded, labels = synth_run(plant_at=4, seed=3, n_checkpoints=6, n_problems=60)
    tm = pd.DataFrame({"step": [100, 200, 300, 400, 500, 600], "kl": [1, 2, 3, 4, 5, 6.0]})
    r = link_analysis(
        labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=100)),
        train_metrics=tm.set_index("step"),
    )
    data = r.to_json()
    json.dumps(data, allow_nan=False)
    for key in ("checkpoints", "shifts", "failures", "correlations", "regression", "findings"):
        assert key in data
    assert data["checkpoints"][2]["train_metrics"] == {"kl": 3.0}
    kinds = {c["kind"] for c in data["correlations"]}
    assert {"type_vs_sc_gain", "train_vs_sc_gain", "train_vs_type"} <= kinds
    for f in data["findings"]:
        assert set(f) >= {"checkpoint", "error_type", "effect", "p_value", "sentence"}


def test_too_few_data_said_plainly() -> None:
    graded, labels = synth_run(n_checkpoints=2, n_problems=6, n_samples=4, seed=5)
    r = link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=50)))
    text = " ".join(r.notes)
    assert "correlations across checkpoints need 5" in text
    assert "too few data to fit" in text
    assert not any(f.significant for f in r.findings)


def test_read_train_metrics(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    p = Path(str(tmp_path)) / "m.csv"
    p.write_text("step,kl,note\n100,0.5,a\n200,0.7,b\n")
    df = read_train_metrics(p)
    assert df.loc[200, "kl"] == pytest.approx(0.7)
    assert "note" not in df.columns
    bad = Path(str(tmp_path)) / "bad.csv"
    bad.write_text("step,kl\n100,0.5\nx,0.7\n")
    with pytest.raises(InvalidRecordError) as exc:
        read_train_metrics(bad)
    assert exc.value.line == 3


def test_human_labels_give_agreement_and_corrected_shares() -> None:
    from misstep.labels import HumanLabel

    graded, labels = synth_run(plant_at=3, n_checkpoints=5, n_problems=40, n_samples=8, seed=9)
    # 40 human labels: the first 30 agree with the judge, the last 10 say "broken_derivation".
    some = labels.head(40)
    human = [
        HumanLabel(trace_id=t, annotator="ann", error_type=e if i < 30 else "broken_derivation")
        for i, (t, e) in enumerate(zip(some["trace_id"], some["error_type"], strict=True))
    ]
    # The 40 labels are of the first checkpoints: the pooled inversion corrects every one.
    run = labelled_run_of(
        graded, labels, human=human, config=AnalysisConfig(n_boot=50, estimator=Estimator.POOLED)
    )
    r = link_analysis(run)
    assert r.agreement is not None and r.agreement["n"] == 40
    judge_logic = int((some["error_type"].tail(10) == "broken_derivation").sum())
    # agreement = (30 + the ones the judge also called logic) / 40
    assert r.agreement["agreement"] == pytest.approx((30 + judge_logic) / 40)
    assert all(c.error_dist_corrected for c in r.checkpoints)
    assert any("corrected distributions" in n for n in r.notes)


def test_stages_are_reported_for_a_progress_bar() -> None:
    from misstep.link import LINK_STAGES

    graded, labels = synth_run(seed=1, n_problems=20)
    seen: list[str] = []
    link_analysis(
        labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=20)),
        on_stage=seen.append,
    )
    assert len(seen) == LINK_STAGES == len(set(seen))


def test_a_type_shift_against_an_sc_gain_change_within_noise_is_not_significant() -> None:
    from misstep.link._findings import build_findings
    from misstep.link._shifts import Shift, TypeChange
    from misstep.metrics import Change

    change = TypeChange(
        error_type="other",
        share_before=0.82,
        share_after=0.89,
        delta=0.07,
        ci=(0.02, 0.12),
        cohen_h=0.2,
        p_value=0.005,
        p_raw=0.005,
    )
    shift = Shift(
        before="a",
        after="b",
        chi2=9.0,
        dof=1,
        design_effect=1.0,
        p_value=0.005,
        p_raw=0.005,
        jsd=0.01,
        changes=[change],
    )
    args = {
        "shifts": [shift],
        "shares": [],
        "sc": {"a": 0.057, "b": 0.052},
        "k": 16,
        "failures": pd.DataFrame(),
        "correlations": [],
        "transitions": [],
    }
    noisy = Change(delta=-0.005, ci=(-0.035, 0.025), verdict="within noise")
    (finding,) = build_findings(**args, sc_change={"b": noisy})
    assert not finding.significant and "within noise" in finding.sentence
    assert "[-3.5, +2.5] pp" in finding.sentence
    real = Change(delta=-0.2, ci=(-0.3, -0.1), verdict="down")
    (finding,) = build_findings(**args, sc_change={"b": real})
    assert finding.significant and "within noise" not in finding.sentence


def test_train_metrics_from_verl_console_and_wandb(tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    log = folder / "train.log"
    log.write_text(
        "INFO starting\n"
        "step:25 - actor/entropy:8.63 - critic/score/mean:0.0044 - timing/gen:1.5e1\n"
        "(WorkerDict) noise line\n"
        "step:50 - actor/entropy:7.5 - critic/score/mean:-0.01 - response_length/mean:812\n",
        encoding="utf-8",
    )
    tm = read_train_metrics(log)
    assert list(tm.index) == [25, 50]
    assert tm.loc[25, "actor/entropy"] == pytest.approx(8.63)
    assert tm.loc[50, "critic/score/mean"] == pytest.approx(-0.01)
    assert tm.loc[25, "timing/gen"] == pytest.approx(15.0)
    assert pd.isna(tm.loc[25, "response_length/mean"])
    wandb = folder / "wandb.csv"
    wandb.write_text(
        "Step,run7 - actor/entropy,run7 - actor/entropy__MIN,run7 - actor/entropy__MAX,"
        "run7 - critic/score/mean\n"
        "25,8.6,8.1,9.0,0.1\n50,7.5,7.0,8.0,0.2\n",
        encoding="utf-8",
    )
    tm = read_train_metrics(wandb)
    assert list(tm.columns) == ["actor/entropy", "critic/score/mean"]
    assert tm.loc[50, "critic/score/mean"] == pytest.approx(0.2)
