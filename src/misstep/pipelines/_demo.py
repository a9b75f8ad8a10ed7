"""The demo: the whole chain on the bundled synthetic example run, with the rules judge.

make the synthetic run -> grade -> vote metrics and coverage -> label wrong traces (rules judge)
-> link analysis -> HTML report. Every file lands in one output directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from misstep.agreement import AnalysisConfig, load_labelled_run
from misstep.judge import JudgeConfig
from misstep.metrics import CheckpointMetrics, coverage, vote_metrics
from misstep.pipelines._analyse import analyse_run, write_run_report
from misstep.pipelines._label import LabelProgress, LabelRunSummary, run_labeling
from misstep.pipelines._synthetic import make_synthetic_run
from misstep.rollouts import load_graded
from misstep.taxonomy import load_taxonomy

__all__ = ["DEMO_KS", "DemoResult", "run_demo"]

DEMO_KS = (1, 4, 16)


class DemoResult(BaseModel):
    """What the demo wrote and found."""

    out_dir: str
    """The output directory."""
    traces: str
    """The synthetic rollouts (JSONL)."""
    summary: str
    """Per-checkpoint vote metrics (JSON)."""
    coverage: str
    """Coverage across checkpoints (JSON)."""
    run_dir: str
    """The labelling run directory (labels.jsonl, manifest.json)."""
    link: str
    """The link analysis (JSON)."""
    report: str
    """The HTML report."""
    metrics: list[CheckpointMetrics] = Field(default_factory=list)
    """The vote metrics, one per checkpoint x dataset."""
    label_summary: LabelRunSummary
    """What the labelling run did."""
    findings: list[str] = Field(default_factory=list)
    """The link analysis's findings, as sentences, most important first."""


def _write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


def run_demo(
    out_dir: str | Path,
    *,
    seed: int = 0,
    label_progress: Callable[[LabelProgress], None] | None = None,
) -> DemoResult:
    """Run the whole chain on the synthetic example run into ``out_dir``. Re-running resumes
    the labelling (nothing is labelled twice) and rewrites the other files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces = make_synthetic_run(out / "traces.jsonl", seed=seed)

    run_dir = out / "labels"
    label_summary = run_labeling(
        traces,
        run_dir,
        JudgeConfig(backend="rules", seed=seed),
        taxonomy=load_taxonomy(),
        progress=label_progress,
    )
    config = AnalysisConfig(seed=seed)
    labelled = load_labelled_run(run_dir, load_graded(traces), full=True, config=config)
    analysis = analyse_run(labelled, ks=DEMO_KS)
    metrics = vote_metrics(analysis.graded, DEMO_KS, seed=seed)
    summary = _write_json(out / "summary.json", [m.to_json() for m in metrics])
    cover = _write_json(out / "coverage.json", coverage(analysis.graded).to_json())
    link = _write_json(out / "link.json", analysis.result.to_json())
    report = write_run_report(out / "report.html", analysis, traces)[0]
    return DemoResult(
        out_dir=str(out),
        traces=str(traces),
        summary=str(summary),
        coverage=str(cover),
        run_dir=str(run_dir),
        link=str(link),
        report=str(report),
        metrics=metrics,
        label_summary=label_summary,
        findings=[f.sentence for f in analysis.result.findings],
    )
