"""`misstep link` and `misstep report` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.cli import app
from misstep.labels import StoredLabel
from tests.link.link_synth import synth_run

runner = CliRunner()


@pytest.fixture(scope="module")
def run_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("link")
    graded, labels = synth_run(plant_at=3, n_checkpoints=6, n_problems=40, n_samples=8, seed=4)
    with (tmp / "traces.jsonl").open("w") as fh:
        for row in graded.to_dict("records"):
            ans = row["answer"]
            # W* (the planted answer) -> 99, Wi -> 100+i, 42 stays, no answer -> truncated
            final = None
            if isinstance(ans, str):
                final = "99" if ans == "W*" else ans if ans == "42" else str(100 + int(ans[1:]))
            rec = {
                "checkpoint": row["checkpoint"],
                "step": int(row["step"]),
                "dataset": "d",
                "problem_id": row["problem_id"],
                "sample_idx": int(row["sample_idx"]),
                "gold_answer": "42",
                "response": f"Let me think.\n\nSo the answer is \\boxed{{{final}}}."
                if final
                else "Let me think and think",
                "finish_reason": "length" if final is None else "stop",
                "correct": row["outcome"] == "correct",
            }
            fh.write(json.dumps(rec) + "\n")
    run = tmp / "run"
    run.mkdir()
    with (run / "labels.jsonl").open("w") as fh:
        for row in labels.to_dict("records"):
            lab = StoredLabel(
                trace_id=row["trace_id"],
                judge="test",
                status="ok",
                error_type=row["error_type"],
                first_error_step=1,
                evidence="So the answer",
            )
            fh.write(lab.model_dump_json() + "\n")
    return tmp / "traces.jsonl", run


def test_link_json(run_files: tuple[Path, Path]) -> None:
    traces, run = run_files
    res = runner.invoke(app, ["link", str(traces), "--labels", str(run), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["findings"][0]["checkpoint"] == "global_step_400"
    assert data["findings"][0]["error_type"] == "misread"
    assert len(data["checkpoints"]) == 6


def test_link_text(run_files: tuple[Path, Path]) -> None:
    traces, run = run_files
    res = runner.invoke(app, ["link", str(traces), "--labels", str(run), "--k", "1,4"])
    assert res.exit_code == 0, res.output
    assert "At global_step_400 sc_gain@4 fell" in res.stdout


def test_report_writes_html(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    traces, run = run_files
    out = tmp_path / "report.html"
    res = runner.invoke(app, ["report", str(traces), "--labels", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    assert '<section id="failures">' in html and "global_step_400" in html
    # the other aggregators and the pass@k / maj@k curves (issue: the report shows them)
    assert '<section id="voting">' in html and "early-stop-2of4" in html
    assert '<section id="curves">' in html and '<section id="causes">' in html


def test_bad_options(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    traces, run = run_files
    res = runner.invoke(app, ["link", str(traces), "--labels", str(run), "--format", "xml"])
    assert res.exit_code == 2
    assert "Invalid value for '--format'" in res.output
    res = runner.invoke(app, ["link", str(traces), "--labels", str(run), "--k", "a"])
    assert res.exit_code == 2
    bad = tmp_path / "m.csv"
    bad.write_text("kl\n1\n")
    res = runner.invoke(
        app, ["link", str(traces), "--labels", str(run), "--train-metrics", str(bad)]
    )
    assert res.exit_code == 2
    assert "no 'step' column" in res.output
