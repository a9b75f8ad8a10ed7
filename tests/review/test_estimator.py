"""The review app's error shares are summary's: the same function (``LabelledRun.distributions``)
with the same default estimator (ppi), so a page and the table agree on the same labels."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from misstep.agreement import load_labelled_run
from misstep.cli.app import app
from misstep.judge import JudgeConfig
from misstep.labels import HumanLabel, read_labels
from misstep.pipelines import make_synthetic_run, run_labeling
from misstep.review import ReviewData, open_trace_texts
from misstep.rollouts import load_graded
from misstep.taxonomy import load_taxonomy
from tests.review.review_fixture import serving
from tests.review.test_api import Client


@pytest.mark.slow
def test_review_shows_summarys_corrected_shares(tmp_path: Path) -> None:
    traces = make_synthetic_run(
        tmp_path / "traces.jsonl", n_checkpoints=2, problems_per_dataset=16, samples_per_problem=8
    )
    run_dir = tmp_path / "run"
    run_labeling(traces, run_dir, JudgeConfig(backend="rules"), taxonomy=load_taxonomy())
    run = load_graded(traces)
    labels = read_labels(run_dir)
    # the judge's answers: typed, and not typed (abstained: people type them all the same)
    ok = [
        t
        for t in run.table["trace_id"].astype(str)
        if labels.get(t) and str(labels[t].status) in ("ok", "abstained")
    ]
    by_ck = run.table.set_index("trace_id")["checkpoint"].astype(str)
    human: list[HumanLabel] = []
    for ck in sorted(set(by_ck[ok])):
        mine = [t for t in ok if by_ck[t] == ck][:14]
        assert len(mine) == 14  # enough for ppi (10 per checkpoint)
        for i, t in enumerate(mine):
            judged = str(labels[t].error_type or "other")
            # people disagree with the judge on every third trace: a correction to make
            other = "misread" if judged != "misread" else "arithmetic"
            human.append(
                HumanLabel(trace_id=t, annotator="alice", error_type=other if i % 3 else judged)
            )
    (run_dir / "human").mkdir()
    (run_dir / "human" / "alice.jsonl").write_bytes(
        b"".join(orjson.dumps(h.model_dump(exclude_none=True)) + b"\n" for h in human)
    )
    result = CliRunner().invoke(
        app,
        [
            "summary",
            str(traces),
            "--labels",
            str(run_dir),
            "--by",
            "checkpoint",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {r["checkpoint"]: r for r in json.loads(result.stdout)}
    texts = open_trace_texts(
        traces, run.table["trace_id"].astype(str).tolist(), input_sha256=run.input_sha256
    )
    with serving(ReviewData(load_labelled_run(run_dir, run), texts)) as server:
        dists = Client(server).get("/api/distributions")[2]["distributions"]
    assert len(dists) == len(rows) == 2
    for d in dists:
        row = rows[d["checkpoint"]]
        assert d["estimator"] == "ppi" and d["made_by"] == "ppi (14)"
        assert d["error_dist_corrected"] is not None
        assert d["error_dist_corrected"] == pytest.approx(row["error_dist_corrected"])
        for key, ci in row["error_dist_ci"].items():
            assert d["error_dist_ci"][key] == pytest.approx(ci)
