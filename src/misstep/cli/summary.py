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
from misstep.cli._summary_tables import fmt as _fmt
from misstep.cli._summary_tables import summary_tables
from misstep.defaults import DEFAULT_SEED
from misstep.errors import OptionError

if TYPE_CHECKING:
    from rich.table import Table

    from misstep.agreement import LabelledRun
    from misstep.metrics import Coverage

__all__ = ["register"]


class SummaryFormat(StrEnum):
    """Output of ``misstep summary``."""

    table = "table"
    json = "json"
    csv = "csv"


def summary(
    traces: TracesArg,
    k: KOpt = None,
    by: ByOpt = None,
    output: Annotated[
        SummaryFormat, typer.Option("--format", help="table, json or csv (data alone on stdout).")
    ] = SummaryFormat.table,
    reading: Reading = READING,
    seed: SeedOpt = DEFAULT_SEED,
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
        one_sample_checkpoints,
        order_checkpoints,
        problem_counts,
        story_note,
        story_of,
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
    one = one_sample_checkpoints(counts)
    checkpoints = order_checkpoints(counts.problems)
    story = story_of(one, checkpoints)
    said = story_note(story, one, checkpoints)
    # A one-sample checkpoint's own notes (no pass@k for k > 1, no answer entropy) are what
    # the story's one note says.
    notes = [said] if said else []
    notes += [note for row in rows if row.checkpoint not in one for note in row.notes]
    for note in dict.fromkeys(notes):
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
        tables: list[Any] = summary_tables(rows, ks, one_sample=one, story=story)
        if error_table is not None:
            # A one-sample run leads with accuracy and error types; a vote run ends with them.
            tables.insert(2 if story == "one-sample" else len(tables), error_table)
        for table in tables:
            out_console.print(table)


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
