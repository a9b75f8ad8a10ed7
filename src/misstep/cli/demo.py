"""CLI: ``misstep demo``, the whole chain on the bundled synthetic example run."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from misstep.cli._errors import err_console, handles_errors
from misstep.defaults import DEFAULT_SEED

if TYPE_CHECKING:
    from rich.table import Table

    from misstep.metrics import CheckpointMetrics
    from misstep.pipelines import LabelProgress

_out = Console(highlight=False, soft_wrap=True)
_DEMO_K = 16  # the demo's headline k (misstep.pipelines.DEMO_KS; a test keeps them equal)


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _compact_table(rows: list[CheckpointMetrics]) -> Table:
    # The demo shows the headline columns only; `misstep summary` prints them all.
    from rich.table import Table

    from misstep.metrics import verdict

    k = _DEMO_K
    table = Table(title="Vote metrics (synthetic run)", title_justify="left")
    for name in (
        "checkpoint",
        "dataset",
        "pass@1",
        f"maj@{k}",
        f"sc_gain@{k}",
        "MV failures (count, share)",
    ):
        table.add_column(name, justify="left" if name in ("checkpoint", "dataset") else "right")
    for row in rows:
        gain = row.sc_gain_at_k.get(k)
        # red only where the gain's interval lies below 0, never for one that covers 0
        below = verdict(row.sc_gain_at_k_ci.get(k)) == "down"
        table.add_row(
            row.checkpoint,
            row.dataset,
            _f(row.pass_at_k.get(1)),
            _f(row.maj_at_k.get(k)),
            "-" if gain is None else f"[red]{gain:+.3f}[/]" if below else f"{gain:+.3f}",
            f"{row.majority_failures} ({row.majority_failure_rate:.3f})",
        )
    return table


@handles_errors
def demo(
    out: Annotated[
        Path, typer.Option("--out", metavar="PATH", help="Directory for every file of the demo.")
    ] = Path("demo-run"),
    seed: Annotated[
        int, typer.Option("--seed", metavar="INT", help="Seed of the synthetic run.")
    ] = DEFAULT_SEED,
) -> None:
    """Run the whole chain on the bundled SYNTHETIC example run with the rules judge.

    Generates the run, grades it, prints the vote metrics, labels the wrong traces with the
    model-free rules judge, links error types to majority-vote failures and writes
    OUT/report.html.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from misstep.cli._options import check_output_file
    from misstep.pipelines import run_demo

    check_output_file(out / "report.html", "--out")
    err_console.print(
        f"[bold]misstep demo[/]: synthetic example run (made up, not model output) -> {out}"
    )
    with Progress(
        TextColumn("[bold]labelling (rules judge)"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("label", total=None)

        def on_progress(state: LabelProgress) -> None:
            bar.update(task, completed=state.done)

        result = run_demo(out, seed=seed, label_progress=on_progress)
    _out.print(_compact_table(result.metrics))
    counts = result.label_summary.status_counts
    _out.print("labels: " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    _out.print("\n[bold]Findings[/]")
    for i, sentence in enumerate(result.findings[:5], start=1):
        _out.print(f"{i}. {sentence}")
    if not result.findings:
        _out.print("no findings")
    _out.print(
        f"\nwrote {result.traces}, {result.summary}, {result.coverage}, {result.link}, "
        f"labels in {result.run_dir}/\n[bold green]report:[/] {result.report}"
    )
    # The way on: read the traces behind the numbers and label some by hand.
    review = f"misstep review {shlex.quote(str(result.traces))} --labels {shlex.quote(str(out))}"
    _out.print("[bold green]next:[/] browse and label the traces behind these numbers: ", end="")
    _out.print(review, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the app."""
    app.command("demo")(demo)
