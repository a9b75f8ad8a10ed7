"""CLI: ``misstep voting``, other ways of aggregating the samples against majority voting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import data, err_console, handles_errors, out_console
from misstep.cli._load import load_run
from misstep.cli._options import (
    READING,
    ByOpt,
    GroupBy,
    Reading,
    SeedOpt,
    TableFormat,
    TracesArg,
    check_input,
    reads_traces,
)
from misstep.defaults import DEFAULT_SEED
from misstep.errors import OptionError

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

    from misstep.metrics import VotingRow

__all__ = ["register"]


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OptionError(option=option, value=text, allowed="comma-separated integers") from None
    if not values or min(values) < 1:
        raise OptionError(option=option, value=text, allowed="integers >= 1, e.g. 2,3,5")
    return values


def _early(text: str) -> list[tuple[int, int]]:
    pairs = []
    for part in (p for p in text.split(",") if p.strip()):
        try:
            m, n = (int(x) for x in part.split(":"))
        except ValueError:
            raise OptionError(
                option="--early-stop", value=text, allowed="m:n pairs, e.g. 2:4,3:8"
            ) from None
        if not 1 <= m <= n:
            raise OptionError(option="--early-stop", value=part, allowed="1 <= m <= n")
        pairs.append((m, n))
    return pairs


def _field_values(
    traces: Path, input_format: str | None, table: pd.DataFrame, field: str
) -> pd.Series:
    """The numeric input field ``field`` of every graded trace (NaN where absent), read from
    the trace's own field or its passed-through extras."""
    import math

    import pandas as pd

    from misstep.rollouts import read_traces

    values: dict[str, float] = {}
    for trace in read_traces(traces, input_format=input_format):
        raw = getattr(trace, field, None) if field in type(trace).model_fields else None
        raw = trace.extra.get(field, raw)
        try:
            number = float(raw) if raw is not None else math.nan
        except (TypeError, ValueError):
            number = math.nan
        values[trace.trace_id] = number
    found = sum(1 for v in values.values() if not math.isnan(v))
    if not found:
        raise OptionError(
            option="--weight-field",
            value=field,
            allowed=f"a numeric field that the rows of {traces} carry",
        )
    return pd.Series([values.get(t, math.nan) for t in table["trace_id"]], index=table.index)


@handles_errors
@reads_traces
def voting(
    traces: TracesArg,
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            metavar="INT",
            min=1,
            help="The vote's budget; default: the largest of 1, 4, 16 that the samples allow.",
        ),
    ] = None,
    window: Annotated[
        str,
        typer.Option("--window", metavar="W,W", help="Checkpoint windows to vote over."),
    ] = "2,3,5",
    early_stop: Annotated[
        str,
        typer.Option(
            "--early-stop", metavar="M:N,M:N", help="Stop once M samples agree, at most N."
        ),
    ] = "2:4,3:8,4:16",
    weight_field: Annotated[
        str | None,
        typer.Option(
            "--weight-field",
            metavar="FIELD",
            help="A numeric per-trace input field (reward score, confidence, mean log-prob): "
            "adds the vote weighted by it.",
        ),
    ] = None,
    by: ByOpt = None,
    output: Annotated[
        TableFormat, typer.Option("--format", help="table, or json (data alone on stdout).")
    ] = TableFormat.table,
    reading: Reading = READING,
    seed: SeedOpt = DEFAULT_SEED,
    selections: Annotated[
        Path | None,
        typer.Option(
            "--selections",
            metavar="RUN_DIR",
            help="A `misstep select` run directory: add how often generative selection "
            "recovers the right answer that majority voting lost.",
        ),
    ] = None,
) -> None:
    """Would another way of voting have avoided the majority-vote failures? Per checkpoint:
    maj@K, majority over answered samples, voting over a window of checkpoints, early stop."""
    windows = _ints(window, "--window")
    stops = _early(early_stop)
    if selections is not None:
        check_input(selections, "--selections")
    run = load_run(traces, reading)
    from misstep.metrics import check_ks, default_ks, fitting_samples, max_samples, voting_table

    if k is not None:
        budget = check_ks([k], max_samples(run.table))[0]
    else:
        budget = default_ks(fitting_samples(run.table))[-1]
    weights = None
    if weight_field is not None:
        weights = _field_values(traces, reading.format_name, run.table, weight_field)
    rows = voting_table(
        run.table,
        budget,
        windows=windows,
        early_stops=stops,
        by_dataset=None if by is None else by is GroupBy.dataset,
        seed=seed,
        weights=weights,
        weight_name=weight_field or "weight",
    )
    chosen = None
    if selections is not None:
        from misstep.pipelines import selection_table

        chosen = selection_table(run.table, selections)
    if output is TableFormat.json:
        records = [row.to_json() for row in rows]
        if chosen is not None:
            from misstep.cli.select import selection_json

            typer.echo(json.dumps({"voting": records, "selection": selection_json(chosen)}))
            return
        typer.echo(json.dumps(records, indent=2))
        return
    for note in dict.fromkeys(note for row in rows for note in row.notes):
        err_console.print(f"note: {note}", markup=False, soft_wrap=True)
    out_console.print(_rich_table(rows))
    if chosen is not None:
        from misstep.cli.select import selection_rich_table

        out_console.print(selection_rich_table(chosen))


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _rich_table(rows: list[VotingRow]) -> Table:
    """One line per checkpoint (x dataset) and aggregator, a section per group: about ten
    columns whatever the number of aggregators, so that no header is cut."""
    from rich.table import Table

    with_dataset = len({row.dataset for row in rows}) > 1
    table = Table(
        title="Aggregators per checkpoint: majority-vote failures avoided is an expected count",
        title_justify="left",
        caption="n/a: no value (the notes above say why); a window's best single checkpoint is "
        "chosen per group, so it avoids no failure in particular",
        caption_justify="left",
    )
    table.add_column("checkpoint", no_wrap=True)
    if with_dataset:
        table.add_column("dataset", no_wrap=True)
    for name in ("problems (count)", "MV failures (count)"):
        table.add_column(name, justify="right")
    table.add_column("aggregator", no_wrap=True)
    for name in (
        "score (share)",
        "± (Monte Carlo SE)",
        "samples used (per problem)",
        "failures avoided (count)",
    ):
        table.add_column(name, justify="right")
    for row in rows:
        for i, agg in enumerate(row.aggregators):
            first = i == 0
            head = [data(row.checkpoint) if first else ""]
            if with_dataset:
                head.append(data(row.dataset) if first else "")
            head += [str(row.n_problems), str(row.majority_failures)] if first else ["", ""]
            table.add_row(
                *head,
                agg.name,
                _num(agg.score, ".3f"),
                f"{agg.score_se:.4f}" if agg.score_se else "",
                _num(agg.samples_used, ".1f"),
                _num(agg.failures_avoided, ".1f"),
                end_section=i == len(row.aggregators) - 1,
            )
    return table


def register(app: typer.Typer) -> None:
    """Add ``voting`` to the app."""
    app.command("voting")(voting)
