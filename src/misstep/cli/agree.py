"""CLI command group: ``misstep agree`` (judge vs people) and ``misstep import-labels``
(people's answers into the human-labels JSONL); ``misstep plan`` and ``misstep sample`` (in
``cli/sample.py``) register with them."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import err_console, handles_errors, out_console, writing
from misstep.cli._options import (
    InputFormatOpt,
    MapOpt,
    PathFieldsOpt,
    Reading,
    RunTaxonomyOpt,
    SeedOpt,
    TableFormat,
    TaxonomyOpt,
    check_input,
    check_output_file,
    label_run,
)
from misstep.cli.sample import plan, sample
from misstep.errors import AnalysisError, OptionError

if TYPE_CHECKING:
    from misstep.agreement import LabelledRun, Raters
    from misstep.taxonomy import Taxonomy


class By(StrEnum):
    """What ``--by`` may split by."""

    checkpoint = "checkpoint"
    dataset = "dataset"


@handles_errors
def agree(
    human: Annotated[
        list[Path] | None,
        typer.Option(
            "--human",
            metavar="FILE",
            help="People's labels: human-labels JSONL/CSV, a filled-in `sample` task, or a "
            "Label Studio JSON export. Repeatable. The --labels runs' RUN_DIR/human/*.jsonl "
            "are read too.",
        ),
    ] = None,
    labels: Annotated[
        list[Path] | None,
        typer.Option(
            "--labels",
            metavar="RUN_DIR",
            help="A label run directory (or labels.jsonl): its judge is a rater. Repeatable.",
        ),
    ] = None,
    by: Annotated[
        By | None, typer.Option("--by", help="Repeat everything per checkpoint or dataset.")
    ] = None,
    traces: Annotated[
        Path | None,
        typer.Option(
            "--traces", metavar="FILE", help="Traces file: where --by finds each trace's group."
        ),
    ] = None,
    output: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = (
        TableFormat.table
    ),
    taxonomy: RunTaxonomyOpt = None,
    n_boot: Annotated[
        int,
        typer.Option(
            "--n-boot", metavar="INT", min=0, help="Bootstrap resamples for the intervals."
        ),
    ] = 1000,
    seed: SeedOpt = 0,
    input_format: InputFormatOpt = None,
    path_fields: PathFieldsOpt = None,
    column_map: MapOpt = None,
) -> None:
    """How well judges and people agree: pairs, all raters, per category, first error step."""
    for path in human or []:
        check_input(path, "--human")
    runs_given = [label_run(path, "--labels") for path in labels or []]
    if traces is not None:
        check_input(traces, "--traces")
    from misstep.agreement import compare_raters, gather_raters, load_labelled_run
    from misstep.cli._agree_tables import print_homogeneity, print_report
    from misstep.cli._analysis import analysis_config
    from misstep.labels import gather_human_files, read_human_labels

    runs = [
        load_labelled_run(
            run, None, taxonomy=taxonomy, full=True, config=analysis_config(seed=seed)
        )
        for run in runs_given
    ]
    tax = _one_taxonomy(runs, taxonomy)
    files = gather_human_files(human or [], runs_given)
    people = [label for path in files for label in read_human_labels(path, keys=tax.keys)]
    by_name = str(by) if by is not None else None
    raters = gather_raters(people, runs, by=by_name)
    for run, not_ok in raters.left_out:
        err_console.print(
            f"{run}: left out {sum(not_ok.values())} label(s) that are not ok: "
            + ", ".join(f"{s} {c}" for s, c in sorted(not_ok.items())),
            soft_wrap=True,
            markup=False,
        )
    if by is not None:
        reading = Reading(input_format, path_fields=path_fields, column_map=column_map)
        _groups_of_traces(raters, by, traces, reading)
    report = compare_raters(raters, categories=tax.keys, by=by_name, n_boot=n_boot, seed=seed)
    if output == TableFormat.json:
        typer.echo(report.to_json())
    else:
        print_report(out_console, report)
        print_homogeneity(report)


def _groups_of_traces(raters: Raters, by: By, traces: Path | None, reading: Reading) -> None:
    """Add each trace's group under ``--by`` from ``--traces``; OptionError when neither the
    labels nor the traces give one."""
    from misstep.rollouts import read_traces

    groups = raters.groups
    if traces is not None:
        for trace in read_traces(traces, input_format=reading.format_name):
            groups[trace.trace_id] = trace.checkpoint if by == By.checkpoint else trace.dataset
    if not groups:
        raise OptionError(
            option="--by",
            value=str(by),
            allowed="a split the labels can give",
            hint="pass --labels RUN_DIR (labels carry checkpoint and dataset) or --traces FILE",
        )


@handles_errors
def import_labels(
    source: Annotated[
        Path,
        typer.Argument(help="A filled-in task (JSONL/CSV) or a Label Studio JSON export."),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="PATH", help="Human-labels JSONL to write.")
    ],
    taxonomy: TaxonomyOpt = None,
    sidecar: Annotated[
        Path | None,
        typer.Option(
            "--sidecar",
            metavar="FILE",
            help="The task's sidecar (`<task file>.judge.jsonl`, written by `misstep sample`): "
            "the sample's weights. Default: the one beside the input, if any.",
        ),
    ] = None,
) -> None:
    """Convert people's answers to the human-labels JSONL (trace_id, annotator, ...)."""
    check_input(source, "input")
    if sidecar is not None:
        check_input(sidecar, "--sidecar")
    check_output_file(out, "--out")
    from misstep.labels import read_human_labels, task_sidecar, write_human_labels
    from misstep.taxonomy import load_taxonomy

    tax = load_taxonomy(taxonomy)
    rows = read_human_labels(source, keys=tax.keys, sidecar=sidecar)
    if not rows:
        raise AnalysisError(f"{source}: no filled-in label", hint="fill in the task first")
    with writing(out):
        write_human_labels(out, rows)
    annotators = sorted({r.annotator for r in rows})
    side = sidecar or task_sidecar(source)
    weights = (
        f"weights from {side}"
        if side.is_file()
        else "weights from the input"
        if any("weight" in r.model_fields_set for r in rows)
        else f"no sidecar ({side.name} beside the input): every weight 1 (right for labels "
        "not drawn by `misstep sample`; for a task, pass --sidecar TASK.judge.jsonl)"
    )
    err_console.print(
        f"wrote {len(rows)} label(s) by {len(annotators)} annotator(s) "
        f"({', '.join(annotators)}) to {out}; {weights}",
        soft_wrap=True,
        markup=False,
    )


def _one_taxonomy(runs: list[LabelledRun], taxonomy: Path | None) -> Taxonomy:
    """The taxonomy of the judge runs (all the same one), else ``--taxonomy`` or math-v1."""
    from misstep.taxonomy import load_taxonomy

    if not runs:
        return load_taxonomy(taxonomy)
    first = runs[0].taxonomy
    for other in runs[1:]:
        if other.taxonomy.hash != first.hash:
            raise OptionError(
                option="--labels",
                value=str(other.labels_path),
                allowed=f"label runs made with one taxonomy ({first.id}, hash {first.hash}, "
                f"as {runs[0].labels_path}); this one used {other.taxonomy.id} "
                f"(hash {other.taxonomy.hash})",
                hint="compare runs of one taxonomy at a time",
            )
    return first


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.command("agree")(agree)
    app.command("plan")(plan)
    app.command("sample")(sample)
    app.command("import-labels")(import_labels)
