"""``misstep plan`` and ``misstep sample --halfwidth/--plan`` through the CLI, and the
corrected shares with their estimator in ``summary`` and ``link`` on a run with enough human
labels per checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app

runner = CliRunner()
TYPES = ["arithmetic", "misread", "other"]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(tmp_path: Path, *, n_human: int) -> tuple[Path, Path, Path]:
    """Two checkpoints of 300 wrong traces (60 problems of 5); the judge right 80% of the
    time; people label the first ``n_human`` traces of each checkpoint with the true type."""
    rng = np.random.default_rng(0)
    traces, labels, human = [], [], []
    for ck in ("step_1", "step_2"):
        for i in range(300):
            tid = f"{ck}/{i}"
            truth = TYPES[int(rng.choice(3, p=[0.5, 0.3, 0.2]))]
            said = truth if rng.random() < 0.8 else TYPES[int(rng.integers(3))]
            traces.append(
                {
                    "trace_id": tid,
                    "problem_id": f"p{i // 5}",
                    "response": "x",
                    "pred_answer": "1",
                    "gold_answer": "2",
                    "checkpoint": ck,
                }
            )
            labels.append({"trace_id": tid, "judge": "j", "status": "ok", "error_type": said})
            if i < n_human:
                human.append({"trace_id": tid, "annotator": "a", "error_type": truth})
    run = tmp_path / "run"
    run.mkdir()
    _jsonl(run / "labels.jsonl", labels)
    return (
        _jsonl(tmp_path / "traces.jsonl", traces),
        run,
        _jsonl(tmp_path / "human.jsonl", human),
    )


def test_plan_without_pilot_is_the_human_only_worst_case(tmp_path: Path) -> None:
    traces, run, _ = _run(tmp_path, n_human=0)
    args = ["plan", str(traces), "--labels", str(run), "--halfwidth", "0.1"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    # z^2 / (4 H^2) = 1.95996^2 / 0.04 = 96.04 -> 97 labels; half-width 1.96 * 0.5 / sqrt(97)
    for row in plan["checkpoints"]:
        assert row["human_labels_needed"] == 97 and row["human_labels_held"] == 0
        assert row["expected_halfwidth"] == pytest.approx(1.959964 * 0.5 / math.sqrt(97))
        assert row["pilot"] == "none"
    assert "worst case" in plan["note"]
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "needed" in table.stdout and "worst case" in table.stderr
    bad = runner.invoke(app, [*args[:-1], "0.7"])
    assert bad.exit_code == 2 and "--halfwidth" in bad.stderr


def test_plan_with_a_pilot_and_the_sample_that_draws_it(tmp_path: Path) -> None:
    traces, run, human = _run(tmp_path, n_human=40)
    args = ["plan", str(traces), "--labels", str(run), "--human", str(human)]
    result = runner.invoke(app, [*args, "--halfwidth", "0.08", "--format", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    rows = {r["checkpoint"]: r for r in plan["checkpoints"]}
    assert set(rows) == {"step_1", "step_2"}
    for row in rows.values():
        assert row["human_labels_held"] == 40 and row["pilot"] == "checkpoint"
        # a judge right 80% of the time needs fewer labels than the worst case (151)
        assert 40 <= row["human_labels_needed"] < 151
        assert row["expected_halfwidth"] <= 0.08 + 1e-9
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(result.stdout, encoding="utf-8")
    task = tmp_path / "task.jsonl"
    base = ["sample", str(traces), "--labels", str(run), "--human", str(human), "--out"]
    drawn = runner.invoke(app, [*base, str(task), "--plan", str(plan_file)])
    assert drawn.exit_code == 0, drawn.output
    got = [json.loads(line) for line in task.read_text().splitlines()]
    by_ck = {ck: sum(r["checkpoint"] == ck for r in got) for ck in rows}
    assert by_ck == {ck: r["human_labels_needed"] - 40 for ck, r in rows.items()}
    held = {json.loads(x)["trace_id"] for x in human.read_text().splitlines()}
    assert not held & {r["trace_id"] for r in got}
    side = [json.loads(x) for x in (tmp_path / "task.jsonl.judge.jsonl").read_text().splitlines()]
    assert all(r["stratum"].startswith("checkpoint=") for r in side)
    assert {r["allocation"] for r in side} == {"plan"}
    again = tmp_path / "again.jsonl"
    same = runner.invoke(app, [*base, str(again), "--halfwidth", "0.08"])
    assert same.exit_code == 0, same.output
    # the same traces (in another random order) and the same sidecar
    assert sorted(again.read_text().splitlines()) == sorted(task.read_text().splitlines())
    assert (tmp_path / "again.jsonl.judge.jsonl").read_text() == (
        tmp_path / "task.jsonl.judge.jsonl"
    ).read_text()
    both = runner.invoke(app, [*base, str(again), "--halfwidth", "0.08", "--plan", str(plan_file)])
    assert both.exit_code == 2


def test_summary_and_link_say_which_estimator_and_how_many_labels(tmp_path: Path) -> None:
    traces, run, human = _run(tmp_path, n_human=60)
    common = [str(traces), "--labels", str(run), "--human", str(human)]
    summary = runner.invoke(app, ["summary", *common, "--format", "json", "--simultaneous"])
    assert summary.exit_code == 0, summary.output
    rows = json.loads(summary.stdout)
    for row in rows:
        assert row["error_dist_estimator"] == "ppi" and row["n_human"] == 60
        for t in TYPES:
            lo, hi = row["error_dist_ci"][t]
            slo, shi = row["error_dist_sim_ci"][t]
            assert lo <= row["error_dist_corrected"][t] <= hi
            assert slo <= lo and hi <= shi  # simultaneous intervals are wider
    table = runner.invoke(app, ["summary", *common])
    assert "ppi (60)" in table.stdout  # the estimator and its human labels
    link = runner.invoke(app, ["link", *common, "--format", "json"])
    assert link.exit_code == 0, link.output
    data = json.loads(link.stdout)
    for c, row in zip(data["checkpoints"], rows, strict=True):
        assert c["error_dist_estimator"] == "ppi" and c["n_human"] == 60
        assert c["error_dist"] == row["error_dist_corrected"]
    (shift,) = data["shifts"]
    # the shift test compares the corrected shares: its change is their difference
    by = {ch["error_type"]: ch for ch in shift["changes"]}
    d = rows[1]["error_dist_corrected"]["misread"] - rows[0]["error_dist_corrected"]["misread"]
    assert by["misread"]["delta"] == pytest.approx(d, abs=1e-9)
    text = runner.invoke(app, ["link", *common])
    assert "ppi (60)" in text.stdout
    pooled = runner.invoke(app, ["summary", *common, "--estimator", "pooled"])
    assert pooled.exit_code == 0 and "test of that assumption" in pooled.stderr
    linked = runner.invoke(app, ["link", *common, "--estimator", "pooled", "--format", "json"])
    test = json.loads(linked.stdout)["confusion_homogeneity"]
    assert test["n"] == 120 and test["n_checkpoints"] == 2 and 0 < test["p_value"] <= 1


def test_agree_counts_human_labels_and_tests_one_confusion(tmp_path: Path) -> None:
    traces, run, human = _run(tmp_path, n_human=40)
    args = ["agree", "--human", str(human), "--labels", str(run), "--traces", str(traces)]
    result = runner.invoke(app, [*args, "--by", "checkpoint", "--format", "json", "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n_human"] == 80
    (test,) = report["confusion_homogeneity"].values()
    # the same judge at both checkpoints: 80 labels over 2 checkpoints, a permutation p-value
    assert test["n"] == 80 and test["n_checkpoints"] == 2
    assert 0 < test["p_value"] <= 1
    table = runner.invoke(app, [*args, "--by", "checkpoint", "--n-boot", "20"])
    assert "human labels: 80" in table.stderr and "one confusion" in table.stderr


def test_plan_with_more_held_than_needed_expects_what_they_give(tmp_path: Path) -> None:
    """Issue 34, item 7: with every trace labelled (300 per checkpoint, more than H = 0.1 or
    0.08 needs), the expected half-width echoed the target (0.0997 at H = 0.1, 0.050 at
    H = 0.05 for the same labels). Now it is what the held labels give, the same whatever H,
    and close to the interval summary computes from them."""
    traces, run, human = _run(tmp_path, n_human=300)
    args = ["plan", str(traces), "--labels", str(run), "--human", str(human), "--format", "json"]
    plans = {}
    for h in ("0.1", "0.08"):
        result = runner.invoke(app, [*args, "--halfwidth", h])
        assert result.exit_code == 0, result.output
        plans[h] = {r["checkpoint"]: r for r in json.loads(result.stdout)["checkpoints"]}
    summary = runner.invoke(
        app,
        ["summary", str(traces), "--labels", str(run), "--human", str(human), "--format", "json"],
    )
    # the widest of summary's 95% intervals (none clipped here: the shares are 0.2 to 0.5)
    achieved = {
        r["checkpoint"]: max((hi - lo) / 2 for lo, hi in r["error_dist_ci"].values())
        for r in json.loads(summary.stdout)
    }
    for ck, row in plans["0.1"].items():
        other = plans["0.08"][ck]
        assert row["human_labels_needed"] == row["human_labels_held"] == 300
        assert other["human_labels_needed"] == 300
        assert row["expected_halfwidth"] == other["expected_halfwidth"] < 0.08
        assert row["expected_halfwidth"] == pytest.approx(achieved[ck], rel=0.1)
