"""CLI command group: ``misstep agree`` (judge vs people), ``misstep plan`` (how many traces
people should label), ``misstep sample`` (which ones) and ``misstep import-labels`` (their
answers into the human-labels JSONL)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.cli._errors import data, err_console, handles_errors, out_console, writing
from misstep.cli._options import (
    READING,
    HumanOpt,
    InputFormatOpt,
    JudgeIdOpt,
    LabelRunOpt,
    LabelSource,
    LabelSubsetOpt,
    MapOpt,
    PathFieldsOpt,
    Reading,
    RunTaxonomyOpt,
    SeedOpt,
    TableFormat,
    TaxonomyOpt,
    TracesArg,
    check_input,
    check_output_file,
    label_run,
    parse_strata,
    reads_traces,
)
from misstep.errors import AnalysisError, OptionError

if TYPE_CHECKING:
    from rich.console import Console

    from misstep.agreement import AgreementReport, LabelledRun
    from misstep.labels import HumanLabel
    from misstep.taxonomy import Taxonomy

_MAX_SHOWN_DISAGREEMENTS = 20


class By(StrEnum):
    """What ``--by`` may split by."""

    checkpoint = "checkpoint"
    dataset = "dataset"


class TaskFormat(StrEnum):
    """Output of ``sample``."""

    jsonl = "jsonl"
    csv = "csv"
    labelstudio = "labelstudio"


class AllocationChoice(StrEnum):
    """How ``sample`` spreads ``--n`` over the strata."""

    proportional = "proportional"
    equal = "equal"


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _print_report(console: Console, report: AgreementReport, title: str = "") -> None:
    from rich.table import Table

    pairs = Table(title=data(f"{title}agreement on error types, pair by pair"))
    for column in ("a", "b", "n", "agreement", "95% CI", "Cohen's kappa", "95% CI "):
        if column in ("a", "b"):
            pairs.add_column(column, overflow="fold")  # rater names are never cut
        else:
            pairs.add_column(column, justify="right")
    for p in report.pairs:
        pairs.add_row(
            data(p.a),
            data(p.b),
            str(p.n),
            _f(p.agreement),
            _ci(p.agreement_ci),
            _f(p.cohen_kappa),
            _ci(p.cohen_kappa_ci),
        )
    console.print(pairs)
    o = report.overall
    console.print(
        f"all {len(o.raters)} raters, {o.n_items} items: Krippendorff's alpha "
        f"{_f(o.krippendorff_alpha)} {_ci(o.krippendorff_alpha_ci)}, Fleiss' kappa "
        f"{_f(o.fleiss_kappa)} on the {o.fleiss_items} items with {o.fleiss_ratings} ratings each",
        markup=False,
    )
    for entry in report.confusion:
        table = Table(
            title=data(
                f"{title}{entry.rater} against {entry.reference}: accuracy "
                f"{_f(entry.accuracy)} {_ci(entry.accuracy_ci)} on {entry.n} items "
                "(rows: reference, columns: rater)"
            )
        )
        table.add_column("reference \\ rater")
        for category in entry.categories:
            table.add_column(data(category), justify="right")
        for category, row in zip(entry.categories, entry.counts, strict=True):
            table.add_row(data(category), *(str(v) for v in row))
        console.print(table)
        cats = Table(title=data(f"{title}{entry.rater} per category"))
        for column in ("category", "support", "precision", "recall", "F1", "95% CI", "prev ref"):
            cats.add_column(column, justify="left" if column == "category" else "right")
        cats.add_column("prev rater", justify="right")
        for row_ in report.per_category:
            if row_.rater != entry.rater:
                continue
            cats.add_row(
                data(row_.category),
                str(row_.support),
                _f(row_.precision),
                _f(row_.recall),
                _f(row_.f1),
                _ci(row_.f1_ci),
                _f(row_.prevalence_reference),
                _f(row_.prevalence_rater),
            )
        console.print(cats)
    if report.steps:
        steps = Table(title=data(f"{title}first error step"))
        for column in ("a", "b", "n", "exact", "95% CI", "acc. erroneous", "acc. error-free"):
            steps.add_column(column, justify="left" if column in ("a", "b") else "right")
        steps.add_column("ProcessBench F1", justify="right")
        steps.add_column("95% CI ", justify="right")
        for s in report.steps:
            steps.add_row(
                data(s.a),
                data(s.b),
                str(s.n),
                _f(s.exact_agreement),
                _ci(s.exact_agreement_ci),
                f"{_f(s.acc_erroneous)} ({s.n_erroneous})",
                f"{_f(s.acc_error_free)} ({s.n_error_free})",
                _f(s.processbench_f1),
                _ci(s.processbench_f1_ci),
            )
        console.print(steps)
    if report.disagreements:
        shown = report.disagreements[:_MAX_SHOWN_DISAGREEMENTS]
        table = Table(
            title=data(
                f"{len(report.disagreements)} disagreeing item(s)"
                + (
                    f", first {len(shown)} (all with --format json)"
                    if len(shown) < len(report.disagreements)
                    else ""
                )
            )
        )
        for column in ("trace_id", "a", "label a", "b", "label b"):
            table.add_column(column)
        for d in shown:
            table.add_row(*(data(v) for v in (d.trace_id, d.a, d.label_a, d.b, d.label_b)))
        console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", markup=False)
    for group, sub in report.groups.items():
        console.rule(data(f"{report.by} = {group}"))
        _print_report(console, sub, title=f"[{group}] ")


@handles_errors
def agree(
    human: Annotated[
        list[Path] | None,
        typer.Option(
            "--human",
            metavar="FILE",
            help="People's labels: human-labels JSONL/CSV, a filled-in `sample` task, or a "
            "Label Studio JSON export. Repeatable. A --judge run's RUN_DIR/human/*.jsonl "
            "are read too.",
        ),
    ] = None,
    judge: Annotated[
        list[Path] | None,
        typer.Option(
            "--judge",
            metavar="RUN_DIR",
            help="A label run directory (or labels.jsonl). Repeatable.",
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
    judge = [label_run(path, "--judge") for path in judge or []]
    if traces is not None:
        check_input(traces, "--traces")
    from misstep.agreement import agreement_report, load_labelled_run
    from misstep.rollouts import read_traces

    runs = [
        load_labelled_run(run, None, taxonomy=taxonomy, full=True, seed=seed) for run in judge or []
    ]
    tax = _one_taxonomy(runs, taxonomy)
    files: dict[Path, Path] = {}
    for path in [*(human or []), *(p for r in runs for p in r.human_files)]:
        files.setdefault(path.resolve(), path)
    raters, people = _people(list(files.values()), tax.keys)
    judges, groups = _add_judges(raters, judge, runs, by)
    if by is not None and traces is not None:
        reading = Reading(input_format, path_fields=path_fields, column_map=column_map)
        for trace in read_traces(traces, input_format=reading.format_name):
            groups[trace.trace_id] = trace.checkpoint if by == By.checkpoint else trace.dataset
    if by is not None and not groups:
        raise OptionError(
            option="--by",
            value=str(by),
            allowed="a split the labels can give",
            hint="pass --judge RUN_DIR (labels carry checkpoint and dataset) or --traces FILE",
        )
    if len(raters) < 2:
        raise AnalysisError(
            f"agreement needs at least two raters; found {len(raters)}: "
            + (", ".join(raters) or "none"),
            hint="pass labels of two or more annotators, or add --judge RUN_DIR",
        )
    report = agreement_report(
        raters,
        judges=judges,
        categories=tax.keys,
        by=str(by) if by is not None else None,
        groups=groups if by is not None else None,
        n_boot=n_boot,
        seed=seed,
    )
    if not report.pairs and not report.steps:
        raise AnalysisError(
            "no trace is labelled by two raters: nothing to compare",
            hint="check that the files' trace_id values match",
        )
    _add_homogeneity(report, runs, judges, people, groups if by == By.checkpoint else {})
    if output == TableFormat.json:
        typer.echo(report.to_json())
    else:
        _print_report(out_console, report)
        _print_homogeneity(report)


def _people(
    files: list[Path], keys: list[str]
) -> tuple[dict[str, dict[str, Any]], list[HumanLabel]]:
    """People's ratings ({annotator: {trace_id: rating}}) and their labels, from every file."""
    from misstep.agreement import human_raters
    from misstep.labels import read_human_labels

    raters: dict[str, dict[str, Any]] = {}
    people: list[HumanLabel] = []
    for path in files:
        rows = read_human_labels(path, keys=keys)
        people += rows
        for name, ratings in human_raters(rows).items():
            raters.setdefault(name, {}).update(ratings)
    return raters, people


def _add_judges(
    raters: dict[str, dict[str, Any]],
    judge: list[Path],
    runs: list[LabelledRun],
    by: By | None,
) -> tuple[list[str], dict[str, str]]:
    """Add each judge run's ok labels to ``raters`` (a name people use too gets ``@RUN_DIR``);
    returns the judges' rater names and, with ``--by``, each trace's group from its label."""
    from misstep.agreement import judge_raters

    judges: list[str] = []
    groups: dict[str, str] = {}
    for run, labelled in zip(judge, runs, strict=True):
        stored = labelled.records
        found, status = judge_raters(stored)
        not_ok = {s: c for s, c in status.items() if s != "ok" and c}
        if not_ok:
            err_console.print(
                f"{run}: left out {sum(not_ok.values())} label(s) that are not ok: "
                + ", ".join(f"{s} {c}" for s, c in sorted(not_ok.items())),
                soft_wrap=True,
                markup=False,
            )
        for name, ratings in found.items():
            unique = name if name not in raters else f"{name}@{run}"
            raters[unique] = ratings
            judges.append(unique)
        if by is not None:
            for trace_id, label in stored.items():
                value = label.checkpoint if by == By.checkpoint else label.dataset
                if value is not None:
                    groups[trace_id] = value
    return judges, groups


def _add_homogeneity(
    report: AgreementReport,
    runs: list[LabelledRun],
    judges: list[str],
    people: list[HumanLabel],
    checkpoints: dict[str, str],
) -> None:
    """How many human labels the figures rest on, and per judge run the test of one
    confusion at every checkpoint (what ``--estimator pooled`` assumes)."""
    from misstep.agreement import confusion_homogeneity, ok_types
    from misstep.labels import ADJUDICATOR, human_consensus

    # agree reports agreement as it was before adjudication: its figures and this count rest on
    # people's own labels alone.
    own = [p for p in people if p.role != ADJUDICATOR]
    agreed = human_consensus(own) if own else None
    report.n_human = len(agreed.types) if agreed is not None else 0
    if agreed is None:
        return
    for name, labelled in zip(judges, runs, strict=False):
        stored = labelled.records
        judged = ok_types(stored)
        ck = {t: lab.checkpoint for t, lab in stored.items() if lab.checkpoint is not None}
        ck.update(checkpoints)
        shared = sorted(t for t in agreed.types if t in judged and t in ck)
        if shared:
            report.confusion_homogeneity[name] = confusion_homogeneity(
                [ck[t] for t in shared],
                [agreed.types[t] for t in shared],
                [judged[t] for t in shared],
            )


def _print_homogeneity(report: AgreementReport) -> None:
    """The human-label count and the homogeneity tests, on stderr (notes, not data)."""
    if report.n_human is not None:
        err_console.print(
            f"human labels: {report.n_human} trace(s) with a consensus type", markup=False
        )
    for name, test in report.confusion_homogeneity.items():
        stat = "-" if test.statistic is None else f"G = {test.statistic:.1f}, df {test.dof}"
        err_console.print(
            f"{name}: one confusion at every checkpoint? {test.n} human labels over "
            f"{test.n_checkpoints} checkpoint(s) ({stat}): {test.meaning}",
            soft_wrap=True,
            markup=False,
        )


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
) -> None:
    """Write a stratified random sample of judged traces as a blind annotation task."""
    fields = parse_strata(stratify)
    # The format follows --out's suffix unless --format names one.
    fmt = output or {".csv": TaskFormat.csv, ".json": TaskFormat.labelstudio}.get(
        out.suffix.lower(), TaskFormat.jsonl
    )
    source = LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input).checked()
    check_output_file(out, "--out")
    from misstep.agreement import stratified_sample, write_task
    from misstep.cli._load import load_input
    from misstep.rollouts import read_traces

    _, labelled = load_input(traces, reading, source, seed=seed, full=True)
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
    with writing(out):
        written = write_task(rows, out, fmt=fmt.value, categories=labelled.categories)
    strata = sorted({r.stratum for r in rows})
    err_console.print(
        f"sampled {len(rows)} trace(s) from {len(strata)} strata ({', '.join(fields) or 'none'}), "
        f"{allocation.value} allocation, seed {seed}; judge labels kept out of the task "
        f"(blind) in {written[-1]}",
        soft_wrap=True,
        markup=False,
    )
    for path in written[:-1]:
        err_console.print(f"wrote {path}", soft_wrap=True, markup=False)


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
    from misstep.cli._load import load_input

    source = LabelSource.of(labels, judge_id, human, taxonomy, labels_from_other_input)
    _, labelled = load_input(traces, reading, source, seed=seed)
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
) -> None:
    """Convert people's answers to the human-labels JSONL (trace_id, annotator, ...)."""
    check_input(source, "input")
    check_output_file(out, "--out")
    import orjson

    from misstep.labels import read_human_labels
    from misstep.taxonomy import load_taxonomy

    tax = load_taxonomy(taxonomy)
    rows = read_human_labels(source, keys=tax.keys)
    if not rows:
        raise AnalysisError(f"{source}: no filled-in label", hint="fill in the task first")
    with writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as fh:
            for row in rows:
                fh.write(orjson.dumps(row.model_dump(exclude_none=True)) + b"\n")
    annotators = sorted({r.annotator for r in rows})
    err_console.print(
        f"wrote {len(rows)} label(s) by {len(annotators)} annotator(s) "
        f"({', '.join(annotators)}) to {out}",
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
                option="--judge",
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
