"""CLI: ``misstep link`` (findings, then tables) and ``misstep report`` (the HTML report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._analysis import DEFAULT_ESTIMATOR, EstimatorOpt, SimultaneousOpt, analysis_config
from misstep.cli._errors import (
    data,
    err_console,
    handles_errors,
    out_console,
    quote,
    stage_progress,
    writing,
)
from misstep.cli._link_tables import print_link
from misstep.cli._load import load_input
from misstep.cli._options import (
    READING,
    GroupBy,
    HumanOpt,
    JudgeIdOpt,
    KOpt,
    LabelsOpt,
    LabelSource,
    LabelSubsetOpt,
    Reading,
    RunTaxonomyOpt,
    SeedOpt,
    TextFormat,
    TracesArg,
    check_input,
    check_output_file,
    parse_ks,
    reads_traces,
)
from misstep.defaults import DEFAULT_SEED

if TYPE_CHECKING:
    from misstep.agreement import AnalysisConfig
    from misstep.pipelines import RunAnalysis

TrainOpt = Annotated[
    Path | None,
    typer.Option(
        "--train-metrics", metavar="FILE", help="CSV or JSONL with `step` and training metrics."
    ),
]


def _analyse(
    traces: Path,
    reading: Reading,
    source: LabelSource,
    *,
    train_metrics: Path | None,
    k: str | None,
    by: GroupBy | None,
    analysis: AnalysisConfig,
) -> RunAnalysis:
    ks = parse_ks(k)  # None: what the samples allow (metrics.default_ks)
    if train_metrics is not None:
        check_input(train_metrics, "--train-metrics")
    run, labelled = load_input(traces, reading, source, analysis=analysis, full=True)
    from misstep.link import LINK_STAGES, read_train_metrics
    from misstep.pipelines import analyse_run

    steps = None if train_metrics is None else read_train_metrics(train_metrics)
    analyses = 1 + (run.table["dataset"].nunique() if by is GroupBy.dataset else 0)
    with stage_progress("linking") as progress:
        task = progress.add_task("", total=LINK_STAGES * analyses)

        def on_stage(name: str) -> None:
            progress.update(task, advance=1, description=name)

        return analyse_run(
            labelled,
            ks=ks,
            train_metrics=steps,
            by_dataset=by is GroupBy.dataset,
            on_stage=on_stage,
        )


def register(app: typer.Typer) -> None:
    """Add ``link`` and ``report`` to the app."""

    @app.command("link")
    @handles_errors
    @reads_traces
    def link_cmd(
        traces: TracesArg,
        labels: LabelsOpt,
        human: HumanOpt = None,
        train_metrics: TrainOpt = None,
        fmt: Annotated[
            TextFormat, typer.Option("--format", help="text, or json (data alone on stdout).")
        ] = TextFormat.text,
        k: KOpt = None,
        reading: Reading = READING,
        labels_from_other_input: LabelSubsetOpt = False,
        judge_id: JudgeIdOpt = None,
        taxonomy: RunTaxonomyOpt = None,
        seed: SeedOpt = DEFAULT_SEED,
        estimator: EstimatorOpt = DEFAULT_ESTIMATOR,
        simultaneous: SimultaneousOpt = False,
        by: Annotated[
            GroupBy | None,
            typer.Option(
                "--by",
                help="checkpoint: the datasets of each checkpoint pooled (the default); dataset: "
                "also the whole analysis on each dataset alone.",
            ),
        ] = None,
    ) -> None:
        """Which error types moved where majority voting stopped paying off."""
        analysis = _analyse(
            traces,
            reading,
            LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input),
            train_metrics=train_metrics,
            k=k,
            by=by,
            analysis=analysis_config(seed=seed, estimator=estimator, simultaneous=simultaneous),
        )
        result = analysis.result
        if fmt is TextFormat.json:
            data_out = result.to_json()
            if analysis.by_dataset:
                data_out["by_dataset"] = {d: r.to_json() for d, r in analysis.by_dataset.items()}
            typer.echo(json.dumps(data_out, allow_nan=False))
            return
        print_link(result)
        for name, sub in analysis.by_dataset.items():
            out_console.rule(data(f"dataset {name}"))
            print_link(sub)

    @app.command("report")
    @handles_errors
    @reads_traces
    def report_cmd(
        traces: TracesArg,
        labels: LabelsOpt,
        out: Annotated[Path, typer.Option("--out", metavar="PATH", help="The HTML file to write.")],
        human: HumanOpt = None,
        train_metrics: TrainOpt = None,
        k: KOpt = None,
        reading: Reading = READING,
        labels_from_other_input: LabelSubsetOpt = False,
        judge_id: JudgeIdOpt = None,
        taxonomy: RunTaxonomyOpt = None,
        seed: SeedOpt = DEFAULT_SEED,
        estimator: EstimatorOpt = DEFAULT_ESTIMATOR,
        simultaneous: SimultaneousOpt = False,
        by: Annotated[
            GroupBy | None,
            typer.Option(
                "--by",
                help="checkpoint: one report, datasets pooled (the default); dataset: also one "
                "report per dataset beside it, OUT's name with the dataset's inserted.",
            ),
        ] = None,
    ) -> None:
        """Write a self-contained HTML report of the link analysis."""
        check_output_file(out, "--out")
        analysis = _analyse(
            traces,
            reading,
            LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input),
            train_metrics=train_metrics,
            k=k,
            by=by,
            analysis=analysis_config(seed=seed, estimator=estimator, simultaneous=simultaneous),
        )
        from misstep.pipelines import write_run_report

        with writing(out):
            paths = write_run_report(out, analysis, traces, input_format=reading.format_name)
        for path in paths:
            err_console.print(f"wrote {quote(path)}")
