"""CLI: ``misstep compare RUN_A RUN_B``, two evaluations on their shared problems."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import data, err_console, handles_errors, out_console
from misstep.cli._load import load_run
from misstep.cli._options import (
    READING,
    Reading,
    SeedOpt,
    TextFormat,
    reads_traces,
)
from misstep.defaults import DEFAULT_SEED, AnalysisDefaults
from misstep.errors import OptionError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["register"]


class CompareMetric(StrEnum):
    """``--metric``."""

    maj = "maj"
    pass1 = "pass@1"


def _one_checkpoint(
    table: pd.DataFrame, chosen: str | None, option: str, path: Path
) -> pd.DataFrame:
    from misstep.metrics import order_checkpoints

    names = order_checkpoints(table)
    if chosen is None:
        if len(names) > 1:
            raise OptionError(
                option=option,
                value=None,
                allowed=f"one of the checkpoints of {path}: {', '.join(names)}",
                hint=f"pass {option} NAME",
            )
        return table
    if chosen not in names:
        raise OptionError(
            option=option, value=chosen, allowed=f"a checkpoint of {path}: {', '.join(names)}"
        )
    return table[table["checkpoint"].astype(str) == chosen]


def _value(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@handles_errors
@reads_traces
def compare(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="The first evaluation.")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="The second evaluation.")],
    metric: Annotated[
        CompareMetric,
        typer.Option("--metric", help="maj: the full majority vote (default); pass@1."),
    ] = CompareMetric.maj,
    checkpoint_a: Annotated[
        str | None,
        typer.Option("--checkpoint-a", metavar="NAME", help="RUN_A's checkpoint, if several."),
    ] = None,
    checkpoint_b: Annotated[
        str | None,
        typer.Option("--checkpoint-b", metavar="NAME", help="RUN_B's checkpoint, if several."),
    ] = None,
    output: Annotated[
        TextFormat, typer.Option("--format", help="text, or json (data alone on stdout).")
    ] = TextFormat.text,
    n_perm: Annotated[
        int, typer.Option("--n-perm", metavar="INT", min=100, help="Permutations for p.")
    ] = AnalysisDefaults.n_perm,
    reading: Reading = READING,
    seed: SeedOpt = DEFAULT_SEED,
) -> None:
    """Two evaluations on their shared problems: the paired difference with an interval and
    a permutation p-value, the problems that flipped, and what else differs."""
    runs = [load_run(path, reading).table for path in (run_a, run_b)]
    from misstep.metrics import compare_runs

    a = _one_checkpoint(runs[0], checkpoint_a, "--checkpoint-a", run_a)
    b = _one_checkpoint(runs[1], checkpoint_b, "--checkpoint-b", run_b)
    result = compare_runs(a, b, metric=metric.value, n_perm=n_perm, seed=seed)
    if output is TextFormat.json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    ci = result.delta_ci
    interval = "" if ci is None else f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
    out_console.print(
        f"{result.metric} over {result.n_shared} shared problems: a {result.a:.3f}, "
        f"b {result.b:.3f}; b - a {100 * result.delta:+.1f} pp{interval} (95% interval), "
        f"permutation p = {result.p_value:.3g}: {result.verdict}",
        markup=False,
    )
    for note in result.notes:
        err_console.print(f"note: {note}", markup=False, soft_wrap=True)
    for run in ("a", "b"):
        s = result.expected_spread[run]
        if s is None:
            out_console.print(
                f"run {run}: from sampling alone: n/a (one sample per problem)", markup=False
            )
            continue
        out_console.print(
            f"run {run}: {s['observed']:.1f} problems solved by the majority; from sampling "
            f"alone expect {s['mean']:.1f} (95% range {s['low']:.0f}-{s['high']:.0f})",
            markup=False,
        )
    from rich.table import Table

    diff = Table(title="what else differs (per run)")
    diff.add_column("")
    diff.add_column("a", justify="right")
    diff.add_column("b", justify="right")
    for name in result.differences["a"]:
        diff.add_row(name, *(_value(result.differences[run].get(name)) for run in ("a", "b")))
    out_console.print(diff)
    flips = Table(title=f"{len(result.flipped)} problem(s) whose majority flipped")
    for col in ("problem", "change", "a: majority (margin)", "b: majority (margin)"):
        flips.add_column(col)
    for f in result.flipped:
        flips.add_row(
            data(f["problem"]),
            f["change"],
            data(f"{f['a']['majority']} ({f['a']['margin']})"),
            data(f"{f['b']['majority']} ({f['b']['margin']})"),
        )
    out_console.print(flips)
    err_console.print(
        "answer classes are matched across the runs by their canonical keys", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the app."""
    app.command("compare")(compare)
