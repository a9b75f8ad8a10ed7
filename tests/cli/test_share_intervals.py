"""The judge's uncorrected error-type shares carry their 95% interval in the tables people
read (summary --labels, link), the one interval the JSON gives (``error_dist_raw_ci``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.cli import app
from misstep.judge import JudgeConfig
from misstep.pipelines import make_synthetic_run, run_labeling
from misstep.taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("shares")
    traces = make_synthetic_run(
        tmp / "traces.jsonl", n_checkpoints=2, problems_per_dataset=10, samples_per_problem=8
    )
    run_labeling(traces, tmp / "run", JudgeConfig(backend="rules"), taxonomy=load_taxonomy())
    return traces, tmp / "run"


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_summary_table_shows_the_judges_shares_with_their_interval(run: tuple[Path, Path]) -> None:
    traces, labels = (str(p) for p in run)
    base = ["summary", traces, "--labels", labels, "--by", "checkpoint"]
    rows = json.loads(_invoke(*base, "--format", "json"))
    table = _invoke(*base)
    assert "as the judge gives them [95% CI]" in table
    shown = 0
    for row in rows:
        line = next(x for x in table.splitlines() if f" {row['checkpoint']} " in x and " all " in x)
        for key, share in row["error_dist"].items():
            lo, hi = row["error_dist_raw_ci"][key]
            assert lo <= share <= hi
            assert f"{share:.2f} [{lo:.3f}, {hi:.3f}]" in line, (key, line)
            shown += 1
    assert shown >= 2 * 5  # every type of both checkpoints


def test_link_table_shows_the_judges_shares_with_their_interval(run: tuple[Path, Path]) -> None:
    traces, labels = (str(p) for p in run)
    result = json.loads(_invoke("link", traces, "--labels", labels, "--format", "json"))
    text = _invoke("link", traces, "--labels", labels)
    assert "95% interval in brackets" in text
    for ck in result["checkpoints"]:
        assert ck["error_dist_source"] == "judge"
        line = next(x for x in text.splitlines() if x.startswith(f"│ {ck['checkpoint']} "))
        for key, share in ck["error_dist"].items():
            lo, hi = ck["error_dist_ci"][key]
            cell = f"{100 * share:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"
            assert cell in line, (key, line)
