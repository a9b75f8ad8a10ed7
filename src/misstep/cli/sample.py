"""CLI commands ``misstep plan`` (how many traces people should label) and ``misstep sample``
(which ones)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import data, err_console, handles_errors, out_console, writing
from misstep.cli._options import (
    READING,
    HumanOpt,
    JudgeIdOpt,
    LabelRunOpt,
    LabelSource,
    LabelSubsetOpt,
    Reading,
    RunTaxonomyOpt,
    SeedOpt,
    TableFormat,
    TracesArg,
    check_input,
    check_output_file,
    parse_annotators,
    parse_strata,
    reads_traces,
)
from misstep.errors import AnalysisError, OptionError

if TYPE_CHECKING:
    from misstep.agreement import LabelledRun

__all__ = ["plan", "sample"]


class TaskFormat(StrEnum):
    """Output of ``sample``."""

    jsonl = "jsonl"
    csv = "csv"
    labelstudio = "labelstudio"


class AllocationChoice(StrEnum):
    """How ``sample`` spreads ``--n`` over the strata."""

    proportional = "proportional"
    equal = "equal"


PlanOpt = Annotated[
    Path | None,
    typer.Option(
        "--plan",
        metavar="PLAN.json",
        help="Draw what a `misstep plan --format json` asks for: per checkpoint, its "
        "human_labels_needed minus those held, at random among the traces people have not "
        "labelled (replaces --n, --stratify and --allocation).",
    ),
]
HalfwidthOpt = Annotated[
    float | None,
    typer.Option(
        "--halfwidth",
        metavar="H",
        help="Plan for this half-width (share) and draw it, as --plan does.",
    ),
]


AnnotatorsOpt = Annotated[
    str | None,
    typer.Option(
        "--annotators",
        metavar="NAMES",
        help="Comma-separated people to spread the task over: each trace goes to one of them "
        "(and a share --overlap to two), one row per person with `annotator` filled in "
        "(jsonl and csv).",
    ),
]
OverlapOpt = Annotated[
    float,
    typer.Option(
        "--overlap",
        metavar="R",
        help="With --annotators: the share of traces given to two people, for agree's "
        "inter-annotator agreement (0 to 1).",
    ),
]


@handles_errors
@reads_traces
def sample(
    traces: TracesArg,
    labels: LabelRunOpt,
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="PATH", help="Annotation task file to write.")
    ],
    n: Annotated[int, typer.Option("--n", metavar="INT", min=1, help="Traces to sample.")] = 200,
    stratify: Annotated[
        str,
        typer.Option(
            "--stratify",
            metavar="FIELDS",
            help="Comma-separated strata among checkpoint, dataset, error_type, problem_id.",
        ),
    ] = "checkpoint,error_type",
    allocation: Annotated[
        AllocationChoice, typer.Option("--allocation", help="proportional or equal per stratum.")
    ] = AllocationChoice.proportional,
    seed: SeedOpt = 0,
    output: Annotated[
        TaskFormat | None,
        typer.Option("--format", help="jsonl, csv or labelstudio; default: from --out's suffix."),
    ] = None,
    taxonomy: RunTaxonomyOpt = None,
    reading: Reading = READING,
    labels_from_other_input: LabelSubsetOpt = False,
    judge_id: JudgeIdOpt = None,
    plan_file: PlanOpt = None,
    halfwidth: HalfwidthOpt = None,
    human: HumanOpt = None,
    annotators: AnnotatorsOpt = None,
    overlap: OverlapOpt = 0.0,
) -> None:
    """Write a stratified random sample of judged traces as a blind annotation task."""
    fields = parse_strata(stratify)
    people = parse_annotators(annotators) if annotators is not None else None
    if people is None and overlap:
        raise OptionError(
            option="--overlap", value=overlap, allowed="with --annotators", hint="name the people"
        )
    # The format follows --out's suffix unless --format names one.
    fmt = output or {".csv": TaskFormat.csv, ".json": TaskFormat.labelstudio}.get(
        out.suffix.lower(), TaskFormat.jsonl
    )
    source = LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input).checked()
    check_output_file(out, "--out")
    from misstep.agreement import assign_annotators, stratified_sample, write_task
    from misstep.cli._analysis import analysis_config

    if people is not None:
        assign_annotators([], people, overlap=overlap)  # the checks, before any reading
        if fmt is TaskFormat.labelstudio:
            raise OptionError(
                option="--annotators",
                value=annotators,
                allowed="with --format jsonl or csv",
                hint="Label Studio spreads tasks over its own users (project settings, overlap)",
            )
    from misstep.cli._load import load_input
    from misstep.rollouts import read_traces

    _, labelled = load_input(
        traces, reading, source, analysis=analysis_config(seed=seed), full=True
    )
    stored = labelled.records
    take, exclude = _planned(labelled, plan_file, halfwidth)
    if take is not None:
        fields = ["checkpoint"]
    rows = stratified_sample(
        read_traces(traces, input_format=reading.format_name),
        stored,
        n=n,
        stratify=fields,
        allocation=allocation.value,
        seed=seed,
        inclusion=labelled.inclusion,
        take=take,
        exclude=exclude,
    )
    if not rows:
        raise AnalysisError(
            f"no trace of {traces} has an ok label in {source.labels}: nothing to sample",
            hint="run `misstep label` first, on the same traces file",
        )
    assigned = (
        assign_annotators([r.trace_id for r in rows], people, overlap=overlap)
        if people is not None
        else None
    )
    with writing(out):
        written = write_task(
            rows, out, fmt=fmt.value, categories=labelled.categories, assigned=assigned
        )
    strata = sorted({r.stratum for r in rows})
    err_console.print(
        f"sampled {len(rows)} trace(s) from {len(strata)} strata ({', '.join(fields) or 'none'}), "
        f"{allocation.value if take is None else 'planned'} allocation, seed {seed}; rows in "
        f"a random order; the judge's labels, weights and strata kept out of the task (blind) "
        f"in its sidecar {written[-1]}, which import-labels and review --task read",
        soft_wrap=True,
        markup=False,
    )
    for path in written[:-1]:
        err_console.print(f"wrote {path}", soft_wrap=True, markup=False)
    if assigned is not None:
        load = {p: sum(p in who for who in assigned.values()) for p in people or []}
        doubled = sum(len(who) > 1 for who in assigned.values())
        err_console.print(
            f"assigned {len(rows)} trace(s), {doubled} of them to two people: "
            + ", ".join(f"{p} {n}" for p, n in load.items()),
            soft_wrap=True,
            markup=False,
        )


def _planned(
    labelled: LabelledRun, plan_file: Path | None, halfwidth: float | None
) -> tuple[dict[str, int] | None, set[str]]:
    """``sample``'s draw per checkpoint stratum from ``--plan`` or ``--halfwidth`` (None:
    neither given) and the traces people already labelled."""
    if plan_file is None and halfwidth is None:
        return None, set()
    if plan_file is not None and halfwidth is not None:
        raise OptionError(
            option="--plan/--halfwidth", value="both", allowed="one of them", hint="drop one"
        )
    from pydantic import ValidationError

    from misstep.agreement import LabelPlan, plan_labels
    from misstep.errors import InputFormatError

    if plan_file is not None:
        check_input(plan_file, "--plan")
        try:
            plan = LabelPlan.model_validate_json(plan_file.read_bytes())
        except ValidationError as exc:
            raise InputFormatError(
                path=plan_file,
                reason=f"not a misstep plan: {exc.errors()[0]['msg']}",
                hint="write one with `misstep plan ... --format json > PLAN.json`",
            ) from None
    else:
        plan = plan_labels(labelled, float(halfwidth or 0.0))
    take = {
        f"checkpoint={row.checkpoint}": max(0, row.human_labels_needed - row.human_labels_held)
        for row in plan.checkpoints
    }
    return take, {h.trace_id for h in labelled.human}


@handles_errors
@reads_traces
def plan(
    traces: TracesArg,
    labels: LabelRunOpt,
    halfwidth: Annotated[
        float,
        typer.Option(
            "--halfwidth",
            metavar="H",
            help="Wanted half-width of every type's 95% interval at every checkpoint (share, "
            "e.g. 0.05).",
        ),
    ],
    human: HumanOpt = None,
    output: Annotated[TableFormat, typer.Option("--format", help="table or json.")] = (
        TableFormat.table
    ),
    taxonomy: RunTaxonomyOpt = None,
    reading: Reading = READING,
    labels_from_other_input: LabelSubsetOpt = False,
    judge_id: JudgeIdOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """How many traces people must label per checkpoint for a given interval half-width."""
    from misstep.agreement import plan_labels
    from misstep.cli._analysis import analysis_config
    from misstep.cli._load import load_input

    source = LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input)
    _, labelled = load_input(traces, reading, source, analysis=analysis_config(seed=seed))
    result = plan_labels(labelled, halfwidth)
    if output is TableFormat.json:
        typer.echo(result.model_dump_json(indent=2))
        return
    from rich.table import Table

    table = Table(
        title=f"human labels for a 95% half-width of {halfwidth:.3f} on every type's share "
        "(ppi, per checkpoint)",
        title_justify="left",
    )
    for col in ("checkpoint", "judged wrong (count)", "needed (count)", "held (count)"):
        table.add_column(col, justify="left" if col == "checkpoint" else "right")
    table.add_column("expected half-width (share)", justify="right")
    table.add_column("pilot")
    for row in result.checkpoints:
        table.add_row(
            data(row.checkpoint),
            str(row.n_judged),
            str(row.human_labels_needed),
            str(row.human_labels_held),
            f"{row.expected_halfwidth:.3f}",
            row.pilot,
        )
    out_console.print(table)
    err_console.print(f"note: {result.note}", soft_wrap=True, markup=False)
    err_console.print(
        "draw them with `misstep sample TRACES --labels RUN_DIR --halfwidth H --out TASK` "
        "(or --plan PLAN.json)",
        soft_wrap=True,
        markup=False,
    )
