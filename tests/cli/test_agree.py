"""``misstep agree``, ``misstep sample`` and ``misstep import-labels`` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.cli.app import app

runner = CliRunner()


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _humans(tmp_path: Path) -> Path:
    rows = []
    for tid, a, b in [
        ("t1", "arithmetic", "arithmetic"),
        ("t2", "misread", "other"),
        ("t3", "other", "other"),
        ("t4", "arithmetic", "arithmetic"),
    ]:
        rows.append({"trace_id": tid, "annotator": "ann1", "error_type": a, "first_error_step": 1})
        rows.append({"trace_id": tid, "annotator": "ann2", "error_type": b, "first_error_step": 1})
    return _jsonl(tmp_path / "human.jsonl", rows)


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {
            "trace_id": t,
            "judge": "rules:x",
            "status": "ok",
            "error_type": e,
            "first_error_step": 1,
            "checkpoint": ck,
            "dataset": "d",
        }
        for t, e, ck in [
            ("t1", "arithmetic", "s1"),
            ("t2", "other", "s1"),
            ("t3", "other", "s2"),
            ("t4", "misread", "s2"),
        ]
    ]
    rows.append({"trace_id": "t5", "judge": "rules:x", "status": "skipped", "checkpoint": "s2"})
    _jsonl(run / "labels.jsonl", rows)
    return run


def test_agree_json_shape(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "agree",
            "--human",
            str(_humans(tmp_path)),
            "--labels",
            str(_run_dir(tmp_path)),
            "--format",
            "json",
            "--by",
            "checkpoint",
            "--n-boot",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"pairs", "overall", "per_category", "confusion", "disagreements", "groups"}
    assert data["overall"]["raters"] == ["ann1", "ann2", "rules:x"]
    pairs = {(p["a"], p["b"]): p for p in data["pairs"]}
    assert pairs[("ann1", "ann2")]["agreement"] == 0.75  # t2 differs
    # judge vs ann1: t1 same, t2 differs, t3 same, t4 differs -> 0.5
    assert pairs[("ann1", "rules:x")]["agreement"] == 0.5
    assert pairs[("ann1", "rules:x")]["n"] == 4  # the skipped t5 does not count
    assert set(data["groups"]) == {"s1", "s2"}
    assert data["confusion"][0]["rater"] == "rules:x"
    assert "skipped 1" in result.stderr


def test_agree_takes_label_runs_as_labels(tmp_path: Path) -> None:
    # One name means one thing: --judge is a judge backend (label, discover); agree's label
    # runs are --labels, as summary, link and report take them.
    run = str(_run_dir(tmp_path))
    human = str(_humans(tmp_path))
    old = runner.invoke(app, ["agree", "--human", human, "--judge", run])
    assert old.exit_code == 2 and "No such option: --judge" in old.output
    both = runner.invoke(
        app, ["agree", "--human", human, "--labels", run, "--labels", run, "--n-boot", "0"]
    )
    assert both.exit_code == 0, both.output
    # The same run twice: its judge again, named after the run the second time.
    assert f"rules:x@{run}" in both.stdout


def test_agree_table(tmp_path: Path) -> None:
    result = runner.invoke(app, ["agree", "--human", str(_humans(tmp_path)), "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    assert "Krippendorff" in result.stdout and "Cohen" in result.stdout


def test_agree_errors(tmp_path: Path) -> None:
    bad = _jsonl(
        tmp_path / "bad.jsonl",
        [
            {"trace_id": "t1", "annotator": "a", "error_type": "arithmetic"},
            {"trace_id": "t2", "annotator": "a", "error_type": "nonsense"},
        ],
    )
    result = runner.invoke(app, ["agree", "--human", str(bad)])
    assert result.exit_code == 2
    assert "bad.jsonl, line 2" in result.stderr and "error_type" in result.stderr
    one = _jsonl(
        tmp_path / "one.jsonl", [{"trace_id": "t1", "annotator": "a", "error_type": "other"}]
    )
    result = runner.invoke(app, ["agree", "--human", str(one)])
    assert result.exit_code == 1
    assert "at least two raters" in result.stderr
    result = runner.invoke(app, ["agree", "--human", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "no such file" in result.stderr
    result = runner.invoke(app, ["agree", "--human", str(_humans(tmp_path)), "--by", "dataset"])
    assert result.exit_code == 2 and "--traces" in result.stderr


def test_sample_and_import_round_trip(tmp_path: Path) -> None:
    traces = _jsonl(
        tmp_path / "traces.jsonl",
        [
            {
                "trace_id": f"t{i}",
                "problem_id": f"p{i}",
                "response": f"1+1=3\n\nanswer {i}",
                "checkpoint": "s1" if i < 6 else "s2",
                "correct": False,
            }
            for i in range(10)
        ],
    )
    run = tmp_path / "run"
    run.mkdir()
    _jsonl(
        run / "labels.jsonl",
        [
            {
                "trace_id": f"t{i}",
                "judge": "j",
                "status": "ok",
                "error_type": "arithmetic" if i % 2 else "other",
                "first_error_step": 0,
            }
            for i in range(10)
        ],
    )
    out = tmp_path / "task.csv"
    result = runner.invoke(
        app,
        ["sample", str(traces), "--labels", str(run), "--n", "4", "--out", str(out), "--seed", "1"],
    )
    assert result.exit_code == 0, result.output
    assert "proportional allocation" in result.stderr
    assert out.exists() and (tmp_path / "task.csv.judge.jsonl").exists()
    ls = tmp_path / "ls.json"
    result = runner.invoke(
        app,
        [
            "sample",
            str(traces),
            "--labels",
            str(run),
            "--n",
            "4",
            "--out",
            str(ls),
            "--allocation",
            "equal",
            "--stratify",
            "checkpoint",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ls.json.labelstudio.xml").exists()
    tasks = json.loads(ls.read_text())
    export = [
        {
            "data": t["data"],
            "annotations": [
                {
                    "completed_by": 1,
                    "result": [
                        {
                            "from_name": "error_type",
                            "type": "choices",
                            "value": {"choices": ["misread"]},
                        }
                    ],
                }
            ],
        }
        for t in tasks
    ]
    exp_path = tmp_path / "export.json"
    exp_path.write_text(json.dumps(export))
    labels = tmp_path / "human.jsonl"
    # Label Studio's export has no weight (the task had none): without the sidecar, weight 1,
    # and import-labels says so
    result = runner.invoke(app, ["import-labels", str(exp_path), "--out", str(labels)])
    assert result.exit_code == 0, result.output
    assert "every weight 1" in result.stderr and "--sidecar" in result.stderr
    assert {json.loads(x)["weight"] for x in labels.read_text().splitlines()} == {1.0}
    side = tmp_path / "ls.json.judge.jsonl"
    result = runner.invoke(
        app, ["import-labels", str(exp_path), "--out", str(labels), "--sidecar", str(side)]
    )
    assert result.exit_code == 0, result.output
    assert f"weights from {side}" in result.stderr.replace("\n", "")
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert len(rows) == 4 and {r["annotator"] for r in rows} == {"labelstudio:1"}
    # equal allocation over 2 checkpoints (6 and 4 traces): 2 each, weights 3 and 2
    assert sorted(r["weight"] for r in rows) == [2.0, 2.0, 3.0, 3.0]
    result = runner.invoke(
        app,
        ["sample", str(traces), "--labels", str(run), "--out", str(out), "--stratify", "model"],
    )
    assert result.exit_code == 2 and "--stratify" in result.stderr


def test_summary_gains_error_distributions(tmp_path: Path) -> None:
    traces = _jsonl(
        tmp_path / "traces.jsonl",
        [
            {
                "trace_id": f"t{i}",
                "problem_id": f"p{i % 2}",
                "response": "x",
                "pred_answer": "1",
                "checkpoint": "s1",
                "correct": i == 0,
            }
            for i in range(5)
        ],
    )
    run = tmp_path / "run"
    run.mkdir()
    _jsonl(
        run / "labels.jsonl",
        [
            {
                "trace_id": f"t{i}",
                "judge": "j",
                "status": "ok",
                "error_type": "arithmetic" if i < 3 else "other",
            }
            for i in range(1, 5)
        ],
    )
    result = runner.invoke(app, ["summary", str(traces), "--labels", str(run), "--format", "json"])
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    # wrong t1..t4: t1, t2 arithmetic; t3, t4 other -> 0.5 / 0.5
    assert record["error_dist"]["arithmetic"] == 0.5
    assert "error_dist_corrected" not in record
    human = _jsonl(
        tmp_path / "h.jsonl",
        [
            {"trace_id": "t1", "annotator": "a", "error_type": "arithmetic"},
            {"trace_id": "t3", "annotator": "a", "error_type": "other"},
        ],
    )
    png = tmp_path / "c.png"
    result = runner.invoke(
        app,
        [
            "summary",
            str(traces),
            "--labels",
            str(run),
            "--human",
            str(human),
            "--format",
            "json",
            "--plot",
            str(png),
            "--estimator",
            "pooled",
        ],
    )
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    assert record["error_dist_corrected"]["arithmetic"] == pytest.approx(0.5, abs=0.02)
    assert set(record["error_dist_ci"]) >= {"arithmetic", "other"}
    assert record["error_dist_estimator"] == "pooled" and record["n_human"] == 2
    # ppi (the default) corrects from the checkpoint's own labels: 2 are too few, so no
    # corrected share, and the table and stderr say why
    result = runner.invoke(
        app,
        ["summary", str(traces), "--labels", str(run), "--human", str(human), "--format", "json"],
    )
    (record,) = json.loads(result.stdout)
    assert record["error_dist_corrected"] is None and record["error_dist_estimator"] == "ppi"
    assert "ppi needs 10" in result.stderr
    result = runner.invoke(
        app, ["summary", str(traces), "--labels", str(run), "--human", str(human)]
    )
    assert result.exit_code == 0 and "corrected by" in result.stdout
    result = runner.invoke(app, ["summary", str(traces), "--labels", str(run), "--estimator", "x"])
    assert result.exit_code == 2 and "--estimator" in result.stderr
    assert png.exists()
    result = runner.invoke(app, ["summary", str(traces), "--labels", str(run)])
    assert result.exit_code == 0 and "uncorrected" in result.stdout
    result = runner.invoke(app, ["summary", str(traces), "--human", str(human)])
    assert result.exit_code == 2 and "--labels" in result.stderr
