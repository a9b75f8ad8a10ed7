"""Real data: the rules judge against ProcessBench's experts and MR-GSM8K's annotator tags.

These figures describe the data and the rules judge; nothing is tuned to them. The Mr-Ben
person-vs-person figure is in ``test_agreement.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.labels import LabelStatus, read_labels

runner = CliRunner()


def _has_rules_judge() -> bool:
    try:
        from misstep.judge import create_judge  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _has_rules_judge(), reason="misstep.judge.create_judge absent")


def _label(traces: Path, run: Path, *extra: str) -> None:
    result = runner.invoke(
        app, ["label", str(traces), "--out", str(run), "--judge", "rules", *extra]
    )
    assert result.exit_code == 0, result.output


def test_processbench_experts_vs_rules_judge(shared_data: Path, tmp_path: Path) -> None:
    # Every 10th trace: 340 across GSM8K, MATH, OlympiadBench and Omni-MATH.
    lines = (shared_data / "processbench" / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    subset = tmp_path / "pb.jsonl"
    subset.write_text("\n".join(lines[::10]) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    _label(subset, run, "--include-correct")
    result = runner.invoke(
        app,
        [
            "agree",
            "--human",
            str(shared_data / "processbench" / "human_labels.jsonl"),
            "--labels",
            str(run),
            "--format",
            "json",
            "--n-boot",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    (step,) = json.loads(result.stdout)["steps"]
    assert step["a"] == "human_expert_consensus"
    # The rules judge types only a wrong explicit calculation and abstains on every other
    # trace (it cannot tell, with or without --include-correct): the step comparison is over
    # the traces it answered, counted here from the run itself, and the rest are said to be
    # left out. Traces with no answer are skipped, not judged.
    labels = read_labels(run)
    answered = {t for t, lab in labels.items() if lab.status is LabelStatus.OK}
    abstained = sum(lab.status is LabelStatus.ABSTAINED for lab in labels.values())
    assert step["n"] == len(answered) > 0
    assert f"abstained {abstained}" in result.stderr and abstained > 10 * len(answered)
    assert step["n_erroneous"] > 0
    assert step["processbench_f1"] is not None
    print("processbench", {k: step[k] for k in step if not k.endswith("_ci")})


def test_mr_gsm8k_tags_vs_rules_judge(shared_data: Path, tmp_path: Path) -> None:
    traces = tmp_path / "gsm.jsonl"
    with open(shared_data / "mrben" / "traces.jsonl", encoding="utf-8") as src:
        traces.write_text(
            "".join(line for line in src if '"source": "mr_gsm8k_partial"' in line),
            encoding="utf-8",
        )
    tags = tmp_path / "tags.jsonl"
    with open(shared_data / "mrben" / "human_labels.jsonl", encoding="utf-8") as src:
        rows = [json.loads(line) for line in src]
    tagged = [
        r
        for r in rows
        if r["mapping_method"] == "annotator_prefix_tag" and r["annotator"] == "mr_gsm8k_annotator"
    ]
    tags.write_text("".join(json.dumps(r) + "\n" for r in tagged), encoding="utf-8")
    run = tmp_path / "run"
    _label(traces, run)
    result = runner.invoke(
        app,
        [
            "agree",
            "--human",
            str(tags),
            "--labels",
            str(run),
            "--format",
            "json",
            "--n-boot",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (pair,) = data["pairs"]
    # the traces both typed: the rules judge types only what it can check (counted from the
    # run), and abstains on the rest
    labels = read_labels(run)
    typed = {t for t, lab in labels.items() if lab.status is LabelStatus.OK}
    assert pair["n"] == len(typed & {r["trace_id"] for r in tagged}) > 50
    per = {r["category"]: r for r in data["per_category"]}
    # The rules judge only says arithmetic or other: it never claims misread.
    assert per["misread"]["prevalence_rater"] == 0.0
    # When it says arithmetic, the annotator's own tag mostly agrees ("calculation").
    assert per["arithmetic"]["precision"] is not None and per["arithmetic"]["precision"] > 0.5
    print("mr_gsm8k", pair, {k: (v["precision"], v["recall"]) for k, v in per.items()})


def test_mrben_figures_through_the_command(shared_data: Path) -> None:
    # The Mr-Ben figures of docs/validation.md, reproduced by its command: 769 traces typed by both
    # annotators; Cohen's kappa, Krippendorff's alpha and Fleiss' kappa all 0.413.
    result = runner.invoke(
        app,
        [
            *("agree", "--human", str(shared_data / "mrben" / "human_labels.jsonl")),
            *("--format", "json", "--n-boot", "200"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (pair,) = data["pairs"]  # raters with no shared trace are not listed as a pair
    assert pair["n"] == 769 and pair["cohen_kappa"] == pytest.approx(0.413, abs=5e-4)
    overall = data["overall"]
    assert overall["krippendorff_alpha"] == pytest.approx(0.413, abs=5e-4)
    assert (overall["fleiss_items"], overall["fleiss_ratings"]) == (769, 2)
    assert overall["fleiss_kappa"] == pytest.approx(0.413, abs=5e-4)
