"""CLI command ``misstep select``: generative selection on majority-vote failures, and the
table that ``voting --selections`` shows too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import data, err_console, handles_errors, out_console
from misstep.cli._judge_options import ConcurrencyOpt, check_run_dir, judge_config
from misstep.cli._options import (
    BaseUrlsOpt,
    InputFormatOpt,
    MapOpt,
    MaxTokensOpt,
    ModelOpt,
    NoCacheOpt,
    PathFieldsOpt,
    Reading,
    RegradeOpt,
    SeedOpt,
    TableFormat,
    TaxonomyOpt,
    TemperatureOpt,
    TracesArg,
    check_input,
)
from misstep.defaults import JudgeDefaults as J
from misstep.defaults import SelectDefaults as S
from misstep.errors import OptionError

if TYPE_CHECKING:
    import pandas as pd


def selection_rich_table(frame: pd.DataFrame) -> object:
    """The per-checkpoint selection table for people."""
    from rich.table import Table

    table = Table(
        title="Generative selection on majority-vote failures (counts of problems; recovered: "
        "share of the selected failures, Wilson 95% interval)",
        title_justify="left",
    )
    for name in (
        "checkpoint",
        "vote wrong",
        "no sample right",
        "right answer outvoted",
        "selected",
        "right among candidates",
        "recovered",
    ):
        table.add_column(name, justify="left" if name == "checkpoint" else "right")
    for row in frame.to_dict(orient="records"):
        share = "-"
        ci = row["recovered_ci"]
        if row["recovered_share"] is not None and ci is not None:
            share = f"{row['recovered']} ({row['recovered_share']:.2f}, {ci[0]:.2f} to {ci[1]:.2f})"
        table.add_row(
            data(str(row["checkpoint"])),
            *(
                str(row[key])
                for key in (
                    "majority_wrong",
                    "no_correct_sample",
                    "failures",
                    "selected",
                    "correct_in_candidates",
                )
            ),
            share,
        )
    return table


def selection_json(frame: pd.DataFrame) -> list[dict[str, object]]:
    """The per-checkpoint selection table as JSON records."""
    records = frame.to_dict(orient="records")
    for record in records:
        ci = record.get("recovered_ci")
        record["recovered_ci"] = list(ci) if ci is not None else None
    return records  # type: ignore[return-value]


@handles_errors
def select(
    traces: TracesArg,
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="RUN_DIR", help="Run directory to write into.")
    ],
    judge: Annotated[
        str, typer.Option("--judge", metavar="NAME", help="openai: a server of the model.")
    ] = S.backend,
    base_url: BaseUrlsOpt = None,
    model: ModelOpt = None,
    max_candidates: Annotated[
        int,
        typer.Option("--max-candidates", metavar="INT", min=2, help="Most frequent answers shown."),
    ] = S.max_candidates,
    temperature: TemperatureOpt = J.temperature,
    max_tokens: MaxTokensOpt = S.max_tokens,
    concurrency: ConcurrencyOpt = J.concurrency,
    taxonomy: TaxonomyOpt = None,
    seed: SeedOpt = J.seed,
    input_format: InputFormatOpt = None,
    regrade: RegradeOpt = False,
    no_cache: NoCacheOpt = False,
    path_fields: PathFieldsOpt = None,
    column_map: MapOpt = None,
    output: Annotated[
        TableFormat, typer.Option("--format", help="table, or json (data alone on stdout).")
    ] = TableFormat.table,
) -> None:
    """Ask the judge model to pick the right answer among each majority-vote failure's
    distinct answers: was the right answer there but outvoted, and can selection find it?"""
    from misstep.pipelines import run_selection, selection_table
    from misstep.rollouts import load_graded
    from misstep.taxonomy import load_taxonomy

    check_input(traces, "traces")
    check_run_dir(out)
    reading = Reading(
        input_format, regrade, no_cache=no_cache, path_fields=path_fields, column_map=column_map
    )
    reading.spec()
    if judge != "openai":
        raise OptionError(option="--judge", value=judge, allowed="openai (a server of the model)")
    # The selection's taxonomy is not the labels': the config names none (as before).
    config = judge_config(
        "openai", None, base_urls=base_url, model=model, concurrency=concurrency,
        temperature=temperature, max_tokens=max_tokens, seed=seed,
    )  # fmt: skip
    summary = run_selection(
        traces,
        out,
        config,
        taxonomy=load_taxonomy(taxonomy),
        max_candidates=max_candidates,
        input_format=reading.format_name,
        regrade=reading.regrade,
        cache=reading.cache,
    )
    err_console.print(
        f"{summary.failures} majority-vote failure(s); {summary.written} selected now, "
        f"{summary.resumed} already selected by {summary.judge}"
    )
    graded = load_graded(
        traces, input_format=reading.format_name, regrade=regrade, cache=reading.cache
    )
    frame = selection_table(graded.table, out)
    if output is TableFormat.json:
        typer.echo(json.dumps(selection_json(frame), indent=2))
        return
    out_console.print(selection_rich_table(frame))


def register(app: typer.Typer) -> None:
    """Add ``select`` to the app."""
    app.command("select")(select)
