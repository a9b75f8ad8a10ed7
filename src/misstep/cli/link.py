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

if TYPE_CHECKING:
    from misstep.agreement import AnalysisConfig
    from misstep.link import LinkResult
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


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _pct_ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"


def _print_text(r: LinkResult) -> None:
    from rich.table import Table

    out = out_console
    out.print("[bold]Findings[/]")
    if not r.findings:
        out.print("  no error type moved against sc_gain between consecutive checkpoints")
    for f in r.findings[:5]:
        tag = "[green]significant[/]" if f.significant else "[dim]not significant[/]"
        if f.p_value is None:
            tag = "[dim]descriptive[/]"
        out.print(f"  {f.rank}. ({tag}) ", end="")
        out.print(f.sentence, markup=False)
    for n in r.notes:
        out.print(f"  note: {n}", markup=False)
    source = {c.error_dist_source for c in r.checkpoints if c.error_dist is not None}
    which = "corrected for the judge's confusion" if source == {"corrected"} else "the judge's"
    t = Table(
        title=f"per checkpoint (error types: share of labelled wrong traces, {which}; "
        "95% interval in brackets)"
    )
    keys = ["pass@1"] + [f"{p}@{k}" for k in r.ks if k > 1 for p in ("maj", "sc_gain")]
    columns = ["checkpoint", *keys, "MV failures (count)", "labelled (share)"]
    columns += ["shares by (human labels)", *r.types]
    for col in columns:
        t.add_column(col, justify="left" if col == "checkpoint" else "right", overflow="fold")
    for c in r.checkpoints:
        vals = [c.metrics.get(m) for m in keys]
        dist = c.error_dist
        t.add_row(
            data(c.checkpoint),
            *[
                "-" if v is None else f"{v:+.3f}" if "sc_gain" in m else f"{v:.3f}"
                for m, v in zip(keys, vals, strict=True)
            ],
            str(c.majority_failures),
            "-" if c.labelled_share is None else f"{c.labelled_share:.2f} ({c.n_labelled})",
            (
                f"{c.error_dist_estimator} ({c.n_human})"
                if c.error_dist_source == "corrected"
                else "judge (uncorrected)"
            ),
            *[
                "no labels"
                if dist is None
                else "n/i"
                if dist.get(ty, 0.0) is None
                else _pct(dist.get(ty)) + _pct_ci(c.error_dist_ci.get(ty))
                for ty in r.types
            ],
        )
    out.print(t)
    s = Table(title="shifts between consecutive checkpoints (change in percentage points, pp)")
    for col in ("from", "to", "JSD (bits)", "adj. p", "largest change"):
        s.add_column(col, overflow="fold")
    for sh in r.shifts:
        big = max(sh.changes, key=lambda c: abs(c.delta), default=None)
        s.add_row(
            data(sh.before),
            data(sh.after),
            "-" if sh.jsd is None else f"{sh.jsd:.3f}",
            "-" if sh.p_value is None else f"{sh.p_value:.3g}",
            "-" if big is None else f"{big.error_type} {100 * big.delta:+.1f} pp",
        )
    out.print(s)
    if r.cause_shifts:
        causes = Table(
            title="other causes between consecutive checkpoints (paired over shared problems)"
        )
        for col in ("from", "to", "cause", "before", "after", "change [95% interval]", "adj. p"):
            causes.add_column(
                col,
                justify="left" if col in ("from", "to", "cause") else "right",
                overflow="fold",
            )
        for cs in r.cause_shifts:
            rate = cs.cause.endswith("_rate")
            scale = 100.0 if rate else 1.0
            unit = " pp" if rate else ""
            fmt = ".1f" if rate or cs.cause == "response_chars" else ".3f"
            ci = (
                ""
                if cs.ci is None
                else (f" [{scale * cs.ci[0]:+{fmt}}, {scale * cs.ci[1]:+{fmt}}]")
            )
            causes.add_row(
                data(cs.before),
                data(cs.after),
                cs.cause,
                f"{scale * cs.value_before:{fmt}}",
                f"{scale * cs.value_after:{fmt}}",
                f"{scale * cs.delta:+{fmt}}{unit}{ci}",
                "-" if cs.p_value is None else f"{cs.p_value:.3g}",
            )
        out.print(causes)
    if r.vote_transitions:
        v = Table(
            title="full-n vote of the shared problems between consecutive checkpoints (count)"
        )
        for col in ("from", "to", "right→right", "right→wrong", "wrong→right", "wrong→wrong"):
            v.add_column(col, justify="left" if col in ("from", "to") else "right", overflow="fold")
        for vt in r.vote_transitions:
            v.add_row(
                data(vt.before),
                data(vt.after),
                str(vt.right_right),
                str(vt.right_wrong),
                str(vt.wrong_right),
                str(vt.wrong_wrong),
            )
        out.print(v)


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
        seed: SeedOpt = 0,
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
        _print_text(result)
        for name, sub in analysis.by_dataset.items():
            out_console.rule(data(f"dataset {name}"))
            _print_text(sub)

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
        seed: SeedOpt = 0,
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
