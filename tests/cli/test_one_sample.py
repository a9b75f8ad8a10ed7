"""One sample per problem through the CLI: summary, link and report tell accuracy and error
types, leave the vote metrics out and say once why (issue 33)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from misstep.cli import app
from misstep.labels import StoredLabel
from misstep.metrics import ONE_SAMPLE_REASON
from tests.link.link_synth import synth_run

runner = CliRunner()
VOTE_WORDS = ("maj@", "sc_gain", "MV failures", "entropy", "majority-vote failure", "could fail")


def _write(tmp: Path, graded: pd.DataFrame, labels: pd.DataFrame) -> tuple[Path, Path]:
    """The synthetic run as rollouts (W* -> 99, Wi -> 100+i, 42 right) and its labels."""
    with (tmp / "traces.jsonl").open("w") as fh:
        for row in graded.to_dict("records"):
            ans = row["answer"]
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


@pytest.fixture(scope="module")
def one_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    graded, labels = synth_run(
        plant_at=3, n_checkpoints=5, n_problems=120, n_samples=1, label_share=1.0, seed=4
    )
    return _write(tmp_path_factory.mktemp("one"), graded, labels)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    graded, labels = synth_run(n_checkpoints=4, n_problems=40, n_samples=4, seed=6)
    single = graded["checkpoint"].isin(["global_step_100", "global_step_200"])
    graded = graded[~single | (graded["sample_idx"] == 0)].reset_index(drop=True)
    labels = labels[labels["trace_id"].isin(graded["trace_id"])]
    return _write(tmp_path_factory.mktemp("mixed"), graded, labels)


def test_summary_table_leads_with_accuracy(one_sample: tuple[Path, Path]) -> None:
    traces, run = one_sample
    res = runner.invoke(app, ["summary", str(traces), "--labels", str(run)])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert out.index("Accuracy per checkpoint") < out.index("error types of wrong traces")
    assert out.index("error types of wrong traces") < out.index("Answers and outcomes")
    for word in VOTE_WORDS:
        assert word not in out, word
    # pass@1 with its interval: 0.xxx [0.xxx, 0.xxx]
    assert re.search(r"0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]", out)
    assert res.stderr.count(ONE_SAMPLE_REASON) == 1
    assert "one sample always agrees with itself" not in res.stderr


def test_link_text_leads_with_accuracy(one_sample: tuple[Path, Path]) -> None:
    traces, run = one_sample
    res = runner.invoke(app, ["link", str(traces), "--labels", str(run)])
    assert res.exit_code == 0, res.output
    out = res.stdout
    # headers fold in a narrow terminal: look for their words
    assert "accuracy" in out and "(pass@1)" in out and "change from" in out
    assert re.search(r"0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]", out)
    assert out.count(ONE_SAMPLE_REASON) == 1
    # apart from the note that names what is left out, no vote metric is spoken of
    rest = "\n".join(line for line in out.splitlines() if ONE_SAMPLE_REASON not in line)
    assert "sc_gain" not in rest and "MV failures" not in rest and "could fail" not in rest
    # the planted shift into misread at global_step_400 leads, told against accuracy
    first = out.split("1. ", 1)[1].split("\n")[0]
    assert "At global_step_400 misread rose" in first and "accuracy (pass@1) went from" in first


def _figures(html: str) -> list[int]:
    return [int(p) for p in re.findall(r'<img class="fig"[^>]*data-points="(\d+)"', html)]


def test_report_has_no_empty_chart_and_no_vote_headline(
    one_sample: tuple[Path, Path], tmp_path: Path
) -> None:
    traces, run = one_sample
    out = tmp_path / "report.html"
    res = runner.invoke(app, ["report", str(traces), "--labels", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    title = re.search(r"<title>(.*)</title>", html)
    assert title is not None and "majority" not in title.group(1).lower()
    assert "accuracy and error types" in title.group(1)
    assert "headline metric" not in html and "sc_gain@1" not in html
    # every image is a figure that reports its points, and each has some
    assert html.count("<img ") == len(_figures(html)) >= 3
    assert all(p > 0 for p in _figures(html))
    for section in ("failures", "voting", "curves"):
        assert f'<section id="{section}">' not in html
    assert html.count(ONE_SAMPLE_REASON) == 1


def test_mixed_run_votes_over_the_checkpoints_with_samples(
    mixed: tuple[Path, Path], tmp_path: Path
) -> None:
    traces, run = mixed
    res = runner.invoke(app, ["link", str(traces), "--labels", str(run), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["story"] == "mixed" and data["k"] == 4
    assert data["one_sample"] == ["global_step_100", "global_step_200"]
    out = tmp_path / "report.html"
    res = runner.invoke(app, ["report", str(traces), "--labels", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    assert "why majority voting failed" in html and "headline metric sc_gain@4" in html
    assert all(p > 0 for p in _figures(html))
    assert '<section id="curves">' in html and '<section id="failures">' in html
    res = runner.invoke(app, ["summary", str(traces)])
    assert res.exit_code == 0, res.output
    assert res.stderr.count(ONE_SAMPLE_REASON) == 1
    assert "Vote metrics per checkpoint" in res.stdout
