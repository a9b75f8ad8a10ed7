"""CLI: ``misstep link`` (findings, then tables) and ``misstep report`` (the HTML report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from misstep.cli._errors import err_console, handles_errors
from misstep.errors import OptionError
from misstep.link import LinkResult
from misstep.pipelines import RunAnalysis, analyse_run, write_run_report

_out = Console(highlight=False, soft_wrap=True)

TracesArg = Annotated[Path, typer.Argument(help="Rollouts file or directory.")]
LabelsOpt = Annotated[
    Path, typer.Option("--labels", help="Run directory (or labels.jsonl) of `misstep label`.")
]
HumanOpt = Annotated[
    Path | None, typer.Option("--human", help="Human labels (JSONL or CSV) for corrected shares.")
]
TrainOpt = Annotated[
    Path | None,
    typer.Option("--train-metrics", help="CSV or JSONL with `step` and training metrics."),
]
KOpt = Annotated[str, typer.Option("--k", help="Comma-separated k for maj@k, capped at n.")]
InFmtOpt = Annotated[
    str | None, typer.Option("--input-format", help="jsonl, parquet, csv, hf or verl.")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of every bootstrap / permutation.")]


def _ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OptionError(option="--k", value=text, allowed="comma-separated integers") from None
    if not ks or min(ks) < 1:
        raise OptionError(option="--k", value=text, allowed="integers >= 1, e.g. 1,4,16")
    return ks


def _analyse(
    traces_path: Path,
    labels: Path,
    human: Path | None,
    train_metrics: Path | None,
    k: str,
    input_format: str | None,
    seed: int,
) -> RunAnalysis:
    ks = _ks(k)
    err_console.print(f"grading {traces_path} ...")
    return analyse_run(
        traces_path,
        labels,
        human=[human] if human is not None else [],
        train_metrics=train_metrics,
        ks=ks,
        input_format=input_format,
        seed=seed,
    )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _print_text(r: LinkResult) -> None:
    _out.print("[bold]Findings[/]")
    if not r.findings:
        _out.print("  no error type moved against sc_gain between consecutive checkpoints")
    for f in r.findings[:5]:
        tag = "[green]significant[/]" if f.significant else "[dim]not significant[/]"
        if f.p_value is None:
            tag = "[dim]descriptive[/]"
        _out.print(f"  {f.rank}. ({tag}) ", end="")
        _out.print(f.sentence, markup=False)
    for n in r.notes:
        _out.print(f"  note: {n}", markup=False)
    t = Table(title="per checkpoint")
    keys = ["pass@1"] + [f"{p}@{k}" for k in r.ks if k > 1 for p in ("maj", "sc_gain")]
    for col in ["checkpoint", *keys, "MV failures", *r.types]:
        t.add_column(col, justify="left" if col == "checkpoint" else "right")
    for c in r.checkpoints:
        vals = [c.metrics.get(m) for m in keys]
        t.add_row(
            c.checkpoint,
            *[
                "-" if v is None else f"{v:+.3f}" if "sc_gain" in m else f"{v:.3f}"
                for m, v in zip(keys, vals, strict=True)
            ],
            str(c.majority_failures),
            *[_pct(c.error_dist.get(ty)) for ty in r.types],
        )
    _out.print(t)
    s = Table(title="shifts between consecutive checkpoints")
    for col in ("from", "to", "JSD", "adj. p", "largest change"):
        s.add_column(col)
    for sh in r.shifts:
        big = max(sh.changes, key=lambda c: abs(c.delta), default=None)
        s.add_row(
            sh.before,
            sh.after,
            "-" if sh.jsd is None else f"{sh.jsd:.3f}",
            "-" if sh.p_value is None else f"{sh.p_value:.3g}",
            "-" if big is None else f"{big.error_type} {big.delta:+.1%}",
        )
    _out.print(s)


def register(app: typer.Typer) -> None:
    """Add ``link`` and ``report`` to the app."""

    @app.command("link")
    @handles_errors
    def link_cmd(
        traces: TracesArg,
        labels: LabelsOpt,
        human: HumanOpt = None,
        train_metrics: TrainOpt = None,
        fmt: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
        k: KOpt = "1,4,16",
        input_format: InFmtOpt = None,
        seed: SeedOpt = 0,
    ) -> None:
        """Which error types moved where majority voting stopped paying off."""
        if fmt not in ("text", "json"):
            raise OptionError(option="--format", value=fmt, allowed="text or json")
        result = _analyse(traces, labels, human, train_metrics, k, input_format, seed).result
        if fmt == "json":
            typer.echo(json.dumps(result.to_json(), allow_nan=False))
        else:
            _print_text(result)

    @app.command("report")
    @handles_errors
    def report_cmd(
        traces: TracesArg,
        labels: LabelsOpt,
        out: Annotated[Path, typer.Option("--out", help="The HTML file to write.")],
        human: HumanOpt = None,
        train_metrics: TrainOpt = None,
        k: KOpt = "1,4,16",
        input_format: InFmtOpt = None,
        seed: SeedOpt = 0,
    ) -> None:
        """Write a self-contained HTML report of the link analysis."""
        analysis = _analyse(traces, labels, human, train_metrics, k, input_format, seed)
        path = write_run_report(out, analysis, traces, input_format=input_format)
        err_console.print(f"wrote {path}")
