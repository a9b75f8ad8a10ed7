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
    # The synthetic run plants consistent arithmetic slips from SYNTHETIC_PLANTED_STEP on. The
    # rules judge types only those (the rest it cannot tell: abstained, no type), so they show
    # as more of the wrong traces typed from that checkpoint on, never as a type of a shift.
    link = json.loads((out / "link.json").read_text(encoding="utf-8"))
    by_ck = {c["checkpoint"]: c for c in link["checkpoints"]}
    planted = by_ck[f"global_step_{SYNTHETIC_PLANTED_STEP}"]
    before = by_ck[f"global_step_{SYNTHETIC_PLANTED_STEP - 100}"]
    assert planted["labelled_share"] > 2 * before["labelled_share"]
    assert planted["n_abstained"] < before["n_abstained"]
    assert all(c["error_dist"][SYNTHETIC_PLANTED_ERROR_TYPE] == 1.0 for c in by_ck.values())
    # no rules-judge record says `other`, no error_dist counts what the judge could not type
    assert not any(lab.error_type == "other" for lab in labels.values())
    assert sum(c["n_abstained"] for c in by_ck.values()) == 1825
    assert all("other" not in (f.get("error_type") or "") for f in link["findings"])
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
