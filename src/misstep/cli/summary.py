"""CLI: ``misstep summary`` (per-checkpoint vote metrics) and ``misstep coverage``.

Both read rollouts, grade them (progress on stderr) and print a rich table, or data alone on
stdout with ``--format json`` / ``csv``. Definitions live in ``misstep.metrics`` (``_passk``,
``_majk``, ``_answer_stats``, ``_votes``, ``_coverage``).
"""

from __future__ import annotations

import json
import shutil
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from misstep.cli._errors import err_console, handles_errors
from misstep.cli.agree import summary_error_section
from misstep.errors import OptionError
from misstep.metrics import CheckpointMetrics, Coverage, coverage, problem_counts, vote_metrics
from misstep.rollouts import RejectSink, default_rejects_path, grade_traces, read_traces

__all__ = ["load_graded", "register"]

# Tables are wide: never narrower than 200 columns, so piped output keeps every figure whole.
_out = Console(highlight=False, width=max(shutil.get_terminal_size((200, 24)).columns, 200))
DEFAULT_KS = (1, 4, 16)


class SummaryFormat(StrEnum):
    """Output of ``misstep summary``."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


class CoverageFormat(StrEnum):
    """Output of ``misstep coverage``."""

    TABLE = "table"
    JSON = "json"


class GroupBy(StrEnum):
    """``--by``: split rows per dataset, or pool the datasets of a checkpoint."""

    DATASET = "dataset"
    CHECKPOINT = "checkpoint"


TracesArg = Annotated[Path, typer.Argument(help="Rollouts file or directory.")]
InFmtOpt = Annotated[
    str | None,
    typer.Option("--input-format", help="jsonl, parquet, csv, hf or verl; inferred when left out."),
]
RegradeOpt = Annotated[
    bool,
    typer.Option("--regrade", help="Grade against gold_answer even where rows carry `correct`."),
]
SkipOpt = Annotated[
    bool,
    typer.Option(
        "--skip-invalid",
        help="Skip invalid rows, writing them to ./<input>.rejects.jsonl, instead of stopping.",
    ),
]


def load_graded(
    traces: Path, *, input_format: str | None, regrade: bool, skip_invalid: bool
) -> pd.DataFrame:
    """Read and grade ``traces`` with a progress line on stderr; report rejects when skipping."""
    sink = RejectSink(default_rejects_path(traces), source=traces) if skip_invalid else None
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("reading and grading", total=None)

        def on_progress(done: int) -> None:
            progress.update(task, description=f"reading and grading: {done:,} traces")

        try:
            graded = grade_traces(
                read_traces(traces, input_format=input_format, rejects=sink),
                regrade=regrade,
                on_progress=on_progress,
            )
        finally:
            if sink is not None:
                sink.close()
    if sink is not None:
        if sink.count:
            err_console.print(
                f"[yellow]{sink.count} invalid row(s) rejected[/], written to "
                f"{escape(str(sink.path))}",
                soft_wrap=True,
            )
        else:
            err_console.print("no invalid rows")
    err_console.print(f"graded {len(graded):,} traces")
    return graded


def _parse_ks(text: str | None, max_n: int) -> list[int]:
    if text is None:
        # The default asks only for what the data can answer.
        return [k for k in DEFAULT_KS if k <= max_n] or [1]
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OptionError(
            option="--k", value=text, allowed="comma-separated integers, e.g. 1,4,16"
        ) from None
    if not ks:
        raise OptionError(option="--k", value=text, allowed="at least one integer >= 1")
    return ks


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if signed and value < 0:
        return f"[red]{text}[/]"
    return text


def _new_table(title: str, rows: list[CheckpointMetrics]) -> tuple[Table, bool]:
    table = Table(title=title, title_justify="left")
    table.add_column("checkpoint", no_wrap=True)
    with_dataset = len({row.dataset for row in rows}) > 1
    if with_dataset:
        table.add_column("dataset", no_wrap=True)
    return table, with_dataset


def _summary_tables(rows: list[CheckpointMetrics], ks: list[int]) -> list[Table]:
    votes, with_dataset = _new_table("Vote metrics per checkpoint", rows)
    for k in ks:
        for prefix in ("pass", "maj", "sc_gain"):
            votes.add_column(f"{prefix}@{k}", justify="right", no_wrap=True)
    answers, _ = _new_table("Answers and outcomes per checkpoint", rows)
    for name in ("problems", "samples", "entropy", "top1", "wrong cons.", "maj. fail"):
        answers.add_column(name, justify="right", no_wrap=True)
    for name in ("correct", "wrong", "trunc.", "no ans."):
        answers.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        head = [row.checkpoint] + ([row.dataset] if with_dataset else [])
        cells = list(head)
        for k in ks:
            se = f" ±{row.maj_at_k_se[k]:.3f}" if k in row.maj_at_k_se else ""
            cells += [
                _fmt(row.pass_at_k[k]),
                _fmt(row.maj_at_k[k]) + se,
                _fmt(row.sc_gain_at_k[k], signed=True),
            ]
        votes.add_row(*cells)
        answers.add_row(
            *head,
            str(row.n_problems),
            str(row.n_samples),
            _fmt(row.answer_entropy),
            _fmt(row.top1_share),
            _fmt(row.wrong_consistency),
            _fmt(row.majority_failures),
            str(row.n_correct),
            str(row.n_wrong),
            str(row.n_truncated),
            str(row.n_no_answer),
        )
    return [votes, answers]


def summary(
    traces: TracesArg,
    k: Annotated[
        str | None,
        typer.Option("--k", help="Comma-separated k for pass@k and maj@k [default: 1,4,16]."),
    ] = None,
    by: Annotated[
        GroupBy | None,
        typer.Option(
            "--by",
            help="dataset: one row per checkpoint x dataset (the default with several "
            "datasets); checkpoint: pool the datasets of each checkpoint.",
        ),
    ] = None,
    output: Annotated[
        SummaryFormat, typer.Option("--format", help="table, json or csv (data alone on stdout).")
    ] = SummaryFormat.TABLE,
    input_format: InFmtOpt = None,
    regrade: RegradeOpt = False,
    skip_invalid: SkipOpt = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of Monte Carlo maj@k estimates.")] = 0,
    # --- room for issue-5 options (--labels RUN_DIR, --human FILE, --plot FILE) -------------
    # Another helper adds them here, as keyword options after this line, and uses them below
    # where marked; nothing else in this command needs to change.
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels", help="Label run directory: add error-type shares of wrong traces."
        ),
    ] = None,
    human: Annotated[
        list[Path] | None,
        typer.Option(
            "--human", help="People's labels (repeatable): correct the shares for the judge."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="PNG of the judge-vs-people confusion matrix (with --human)."),
    ] = None,
) -> None:
    """Per-checkpoint pass@k, maj@k, sc_gain@k, answer statistics and outcome counts."""
    graded = load_graded(
        traces, input_format=input_format, regrade=regrade, skip_invalid=skip_invalid
    )
    counts = problem_counts(graded)
    max_n = int(counts.problems["n"].max()) if len(counts.problems) else 0
    ks = sorted(set(_parse_ks(k, max_n)))
    by_dataset = None if by is None else by is GroupBy.DATASET
    rows = vote_metrics(counts, ks, by_dataset=by_dataset, seed=seed)
    for row in rows:
        for note in row.notes:
            err_console.print(f"[yellow]note:[/] {note}")
    # --- issue-5 hook: --labels / --human / --plot output goes here -------------------------
    records: list[dict[str, Any]] = [row.to_json() for row in rows]
    error_table = None
    if labels is not None:
        error_table = summary_error_section(
            graded,
            records,
            labels=labels,
            human=human or [],
            plot=plot,
            pool_datasets=all(row.dataset == "all" for row in rows) and len(rows) > 0,
            seed=seed,
            flat=output is SummaryFormat.CSV,
        )
    elif human or plot is not None:
        raise OptionError(option="--human/--plot", value="given", allowed="only with --labels")
    if output is SummaryFormat.JSON:
        typer.echo(json.dumps(records, indent=2))
    elif output is SummaryFormat.CSV:
        typer.echo(pd.DataFrame.from_records(records).to_csv(index=False), nl=False)
    else:
        for table in _summary_tables(rows, ks):
            _out.print(table)
        if error_table is not None:
            _out.print(error_table)


def _coverage_tables(result: Coverage) -> tuple[Table, Table]:
    moves = Table(title="Solved problems per checkpoint", title_justify="left")
    for name in ("checkpoint", "solved", "retention", "acquisition", "forgetting"):
        moves.add_column(name, justify="left" if name == "checkpoint" else "right")
    for i, name in enumerate(result.checkpoints):
        moves.add_row(
            name,
            f"{result.solved[i]} / {result.n_problems}",
            _fmt(result.retention[i]),
            _fmt(result.acquisition[i]),
            _fmt(result.forgetting[i]),
        )
    jaccard = Table(title="Jaccard similarity of solved sets", title_justify="left")
    jaccard.add_column("", no_wrap=True)
    for name in result.checkpoints:
        jaccard.add_column(name, justify="right", no_wrap=True)
    for name, values in zip(result.checkpoints, result.jaccard, strict=True):
        jaccard.add_row(name, *(_fmt(v) for v in values))
    return moves, jaccard


def coverage_command(
    traces: TracesArg,
    output: Annotated[
        CoverageFormat, typer.Option("--format", help="table or json (data alone on stdout).")
    ] = CoverageFormat.TABLE,
    input_format: InFmtOpt = None,
    regrade: RegradeOpt = False,
    skip_invalid: SkipOpt = False,
) -> None:
    """Which problems each checkpoint solves: Jaccard overlap, retention, acquisition,
    forgetting, and union coverage (also at one checkpoint's sample budget)."""
    graded = load_graded(
        traces, input_format=input_format, regrade=regrade, skip_invalid=skip_invalid
    )
    result = coverage(graded)
    if output is CoverageFormat.JSON:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    moves, jaccard = _coverage_tables(result)
    _out.print(moves)
    _out.print(jaccard)
    _out.print(
        f"union coverage: {_fmt(result.union_coverage)} of {result.n_problems} problems; "
        f"at one checkpoint's sample budget split across checkpoints: "
        f"{_fmt(result.union_coverage_at_budget)}"
    )


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.command("summary")(handles_errors(summary))
    app.command("coverage")(handles_errors(coverage_command))
