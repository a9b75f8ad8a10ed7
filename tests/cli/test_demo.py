"""`misstep demo`: the whole chain on the synthetic run, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from misstep.cli import app
from misstep.labels import read_labels
from misstep.pipelines import SYNTHETIC_PLANTED_ERROR_TYPE, SYNTHETIC_PLANTED_STEP
from tests.conftest import DemoRun


def test_demo_runs_the_whole_chain_and_finds_the_planted_cause(demo_run: DemoRun) -> None:
    out = demo_run.out  # `misstep demo --out DIR`, run once for the suite (tests/conftest.py)
    for name in ("traces.jsonl", "summary.json", "coverage.json", "link.json", "report.html"):
        assert (out / name).stat().st_size > 0, name
    # Every input trace ends with exactly one current label record (ok or skipped).
    n_traces = (out / "traces.jsonl").read_text(encoding="utf-8").count("\n")
    labels = read_labels(out / "labels")
    assert len(labels) == n_traces
    # The synthetic run plants consistent arithmetic slips from SYNTHETIC_PLANTED_STEP on:
    # the top finding must name that checkpoint and type.
    link = json.loads((out / "link.json").read_text(encoding="utf-8"))
    top = link["findings"][0]
    assert top["checkpoint"] == f"global_step_{SYNTHETIC_PLANTED_STEP}"
    assert top["error_type"] == SYNTHETIC_PLANTED_ERROR_TYPE
    assert top["p_value"] < 0.05
    assert "Findings" in demo_run.output
    assert "report" in demo_run.output


def test_demo_rerun_resumes_labelling(demo_run: DemoRun, tmp_path: Path) -> None:
    out = demo_run.copy_to(tmp_path / "demo")  # a finished demo run, as the first run left it
    runner = CliRunner()
    lines_before = (out / "labels" / "labels.jsonl").read_text(encoding="utf-8").count("\n")
    assert runner.invoke(app, ["demo", "--out", str(out)]).exit_code == 0
    lines_after = (out / "labels" / "labels.jsonl").read_text(encoding="utf-8").count("\n")
    # ok records under the same judge are not redone; skipped ones may be rewritten
    n_ok = sum(1 for lab in read_labels(out / "labels").values() if lab.status == "ok")
    assert lines_after - lines_before <= lines_before - n_ok
