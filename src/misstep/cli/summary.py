"""CLI: ``misstep summary`` (per-checkpoint vote metrics) and ``misstep coverage``.

Both read rollouts, grade them (progress on stderr) and print a rich table, or data alone on
stdout with ``--format json`` / ``csv``. Definitions live in ``misstep.metrics`` (``_passk``,
``_majk``, ``_answer_stats``, ``_votes``, ``_coverage``).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.cli._analysis import DEFAULT_ESTIMATOR, EstimatorOpt, SimultaneousOpt, analysis_config
from misstep.cli._error_table import ci_text as _ci
from misstep.cli._error_table import error_type_table
from misstep.cli._errors import data, err_console, handles_errors, out_console, quote, writing
from misstep.cli._load import load_input, load_run
from misstep.cli._options import (
    READING,
    ByOpt,
    GroupBy,
    HumanOpt,
    JudgeIdOpt,
    KOpt,
    LabelSource,
    LabelSubsetOpt,
    Reading,
    RunTaxonomyOpt,
    SeedOpt,
    TableFormat,
    TracesArg,
    check_output_file,
    parse_ks,
    reads_traces,
)
from misstep.errors import OptionError

if TYPE_CHECKING:
    from rich.table import Table

    from misstep.agreement import LabelledRun
    from misstep.metrics import Change, CheckpointMetrics, Coverage

__all__ = ["register"]


class SummaryFormat(StrEnum):
    """Output of ``misstep summary``."""

    table = "table"
    json = "json"
    csv = "csv"


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"  # undefined in the metrics layer (null in JSON); a note says why
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if signed and value < 0:
        return f"[red]{text}[/]"
    return text


def _new_table(title: str, rows: list[CheckpointMetrics]) -> tuple[Table, bool]:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("checkpoint", overflow="fold")
    with_dataset = len({row.dataset for row in rows}) > 1
    if with_dataset:
        table.add_column("dataset", overflow="fold")
    return table, with_dataset


def _summary_tables(rows: list[CheckpointMetrics], ks: list[int]) -> list[Table]:
    votes, with_dataset = _new_table("Vote metrics per checkpoint (shares of problems)", rows)
    for k in ks:
        for prefix in ("pass", "maj", "sc_gain"):
            votes.add_column(f"{prefix}@{k}", justify="right", overflow="fold")
    answers, _ = _new_table("Answers and outcomes per checkpoint", rows)
    columns = (
        "problems (count)",
        "samples (count)",
        "entropy (bits)",
        "top1 (share)",
        "wrong cons. (share)",
        "MV failures (count, share)",
        "correct (count)",
        "wrong (count)",
        "truncated (count)",
        "no answer (count)",
    )
    for name in columns:
        answers.add_column(name, justify="right", overflow="fold")
    for row in rows:
        head = [data(row.checkpoint)] + ([data(row.dataset)] if with_dataset else [])
        cells: list[Any] = list(head)
        for k in ks:
            se = f" ±{row.maj_at_k_se[k]:.3f}" if k in row.maj_at_k_se else ""
            cells += [
                _fmt(row.pass_at_k[k]) + _ci(row.pass_at_k_ci.get(k)),
                _fmt(row.maj_at_k[k]) + se + _ci(row.maj_at_k_ci.get(k)),
                _fmt(row.sc_gain_at_k[k], signed=True) + _ci(row.sc_gain_at_k_ci.get(k), True),
            ]
        votes.add_row(*cells)
        answers.add_row(
            *head,
            str(row.n_problems),
            str(row.n_samples),
            _fmt(row.answer_entropy),
            _fmt(row.top1_share),
            _fmt(row.wrong_consistency),
            f"{row.majority_failures} ({row.majority_failure_rate:.3f})",
            str(row.n_correct),
            str(row.n_wrong),
            str(row.n_truncated),
            str(row.n_no_answer),
        )
    tables = [votes, answers]
    changes = [row for row in rows if row.change is not None]
    if changes:
        table, _ = _new_table(
            "Change from the previous checkpoint, paired over the problems both have "
            "(percentage points, 95% interval, verdict)",
            rows,
        )
        table.add_column("from", overflow="fold")
        table.add_column("shared problems", justify="right")
        table.add_column("pass@1", justify="right")
        for k in ks:
            table.add_column(f"sc_gain@{k}", justify="right")
        for row in changes:
            change = row.change
            assert change is not None  # filtered above
            head = [data(row.checkpoint)] + ([data(row.dataset)] if with_dataset else [])
            table.add_row(
                *head,
                data(change.previous),
                str(change.n_shared),
                _change_cell(change.pass_at_1),
                *(_change_cell(change.sc_gain_at_k.get(k)) for k in ks),
            )
        tables.append(table)
    return tables


def _change_cell(change: Change | None) -> str:
    if change is None:
        return "-"
    ci = "" if change.ci is None else f" [{100 * change.ci[0]:+.1f}, {100 * change.ci[1]:+.1f}]"
    text = f"{100 * change.delta:+.1f} pp{ci} {change.verdict}"
    return text if change.verdict == "within noise" else f"[bold]{text}[/]"


def summary(
    traces: TracesArg,
    k: KOpt = None,
    by: ByOpt = None,
    output: Annotated[
        SummaryFormat, typer.Option("--format", help="table, json or csv (data alone on stdout).")
    ] = SummaryFormat.table,
    reading: Reading = READING,
    seed: SeedOpt = 0,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            metavar="RUN_DIR",
            help="Label run directory: add error-type shares of wrong traces.",
        ),
    ] = None,
    labels_from_other_input: LabelSubsetOpt = False,
    judge_id: JudgeIdOpt = None,
    human: HumanOpt = None,
    taxonomy: RunTaxonomyOpt = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="PNG",
            help="PNG of the judge-vs-people confusion matrix (with --human).",
        ),
    ] = None,
    estimator: EstimatorOpt = DEFAULT_ESTIMATOR,
    simultaneous: SimultaneousOpt = False,
) -> None:
    """Per-checkpoint pass@k, maj@k, sc_gain@k, answer statistics and outcome counts."""
    wanted = parse_ks(k)
    config = analysis_config(seed=seed, estimator=estimator, simultaneous=simultaneous)
    if labels is None and (human or plot is not None):
        raise OptionError(option="--human/--plot", value="given", allowed="only with --labels")
    if plot is not None:
        check_output_file(plot, "--plot")
    if labels is None:
        run, labelled = load_run(traces, reading), None
    else:
        source = LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input)
        run, labelled = load_input(traces, reading, source, analysis=config)
    from misstep.agreement import labelled_summary
    from misstep.metrics import (
        check_ks,
        default_ks,
        fitting_samples,
        max_samples,
        problem_counts,
        vote_metrics,
    )

    counts = problem_counts(run.table)
    ks = (
        check_ks(wanted, max_samples(counts))
        if wanted is not None
        else default_ks(fitting_samples(counts))
    )
    by_dataset = None if by is None else by is GroupBy.dataset
    if labelled is None:
        rows = vote_metrics(counts, ks, by_dataset=by_dataset, seed=config.seed)
        records: list[dict[str, Any]] = [row.to_json() for row in rows]
    else:
        result = labelled_summary(labelled, ks, by_dataset=by_dataset, counts=counts)
        rows, records = result.rows, result.records(flat=output is SummaryFormat.csv)
    for note in dict.fromkeys(note for row in rows for note in row.notes):
        err_console.print(f"note: {note}", markup=False, soft_wrap=True)
    error_table = None
    if labelled is not None:
        if plot is not None:
            _plot(labelled, plot)
        error_table = error_type_table(
            labelled.categories, result.distributions, corrected=result.corrected
        )
    if output is SummaryFormat.json:
        typer.echo(json.dumps(records, indent=2))
    elif output is SummaryFormat.csv:
        import pandas as pd

        flat = [_flatten(record) for record in records]
        typer.echo(pd.DataFrame.from_records(flat).to_csv(index=False), nl=False)
    else:
        for table in _summary_tables(rows, ks):
            out_console.print(table)
        if error_table is not None:
            out_console.print(error_table)


def _plot(labelled: LabelledRun, plot: Path) -> None:
    """The PNG of the judge-vs-people confusion matrix (``--plot``)."""
    from misstep.agreement import plot_confusion

    if not labelled.human:
        raise OptionError(
            option="--plot",
            value=str(plot),
            allowed="only with people's labels (--human FILE or RUN_DIR/human/)",
            hint="the confusion matrix needs people's labels of some judged traces",
        )
    with writing(plot):
        written = plot_confusion(labelled.labels, labelled.human, labelled.categories, plot)
    err_console.print(f"wrote the confusion matrix to {quote(written)}", soft_wrap=True)


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One CSV row: nested objects as dotted columns, an interval as ``_low`` / ``_high``."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        elif isinstance(value, list | tuple) and len(value) == 2:
            out[f"{name}_low"], out[f"{name}_high"] = value
        else:
            out[name] = value
    return out


def _coverage_tables(result: Coverage) -> tuple[Table, Table]:
    from rich.table import Table

    moves = Table(title="Solved problems per checkpoint", title_justify="left")
    for name in (
        "checkpoint",
        "solved (count)",
        "retention (share)",
        "acquisition (share)",
        "forgetting (share)",
    ):
        moves.add_column(name, justify="left" if name == "checkpoint" else "right")
    for i, name in enumerate(result.checkpoints):
        moves.add_row(
            data(name),
            f"{result.solved[i]} / {result.n_problems}",
            _fmt(result.retention[i]),
            _fmt(result.acquisition[i]),
            _fmt(result.forgetting[i]),
        )
    jaccard = Table(title="Jaccard similarity of solved sets", title_justify="left")
    jaccard.add_column("", overflow="fold")
    for name in result.checkpoints:
        jaccard.add_column(data(name), justify="right", overflow="fold")
    for name, values in zip(result.checkpoints, result.jaccard, strict=True):
        jaccard.add_row(data(name), *(_fmt(v) for v in values))
    return moves, jaccard


def coverage_command(
    traces: TracesArg,
    output: Annotated[
        TableFormat, typer.Option("--format", help="table or json (data alone on stdout).")
    ] = TableFormat.table,
    reading: Reading = READING,
) -> None:
    """Which problems each checkpoint solves: Jaccard overlap, retention, acquisition,
    forgetting, and union coverage (also at one checkpoint's sample budget)."""
    run = load_run(traces, reading)
    from misstep.metrics import coverage

    result = coverage(run.table)
    if output is TableFormat.json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    moves, jaccard = _coverage_tables(result)
    out_console.print(moves)
    out_console.print(jaccard)
    out_console.print(
        f"union coverage: {_fmt(result.union_coverage)} of {result.n_problems} problems "
        f"(share); at one checkpoint's sample budget split across checkpoints: "
        f"{_fmt(result.union_coverage_at_budget)} (share)"
    )


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.command("summary")(handles_errors(reads_traces(summary)))
    app.command("coverage")(handles_errors(reads_traces(coverage_command)))
