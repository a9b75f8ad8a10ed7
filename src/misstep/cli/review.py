"""CLI: ``misstep review`` (the local web app to read, label and adjudicate traces)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.cli._analysis import analysis_config
from misstep.cli._errors import err_console, handles_errors
from misstep.cli._load import load_input
from misstep.cli._options import (
    READING,
    HumanOpt,
    JudgeIdOpt,
    LabelsOpt,
    LabelSource,
    LabelSubsetOpt,
    Reading,
    RunTaxonomyOpt,
    SeedOpt,
    TracesArg,
    check_input,
    parse_strata,
    reads_traces,
)
from misstep.errors import OptionError

if TYPE_CHECKING:
    from misstep.agreement import LabelledRun
    from misstep.review import Grant, ReviewData, ReviewServer
    from misstep.rollouts import GradedRun

AnnotatorOpt = Annotated[
    str | None,
    typer.Option(
        "--annotator",
        metavar="NAME",
        help="Default annotator name for labels made with the shared URL (letters, digits, "
        "._@+-); each person can also set theirs in the page (self-declared: see "
        "--annotators).",
    ),
]
AnnotatorsOpt = Annotated[
    str | None,
    typer.Option(
        "--annotators",
        metavar="NAMES",
        help="Comma-separated people: one URL each (stdout, in this order), its token bound "
        "to its person, who reads and writes only their own labels. Without it one shared "
        "URL, whose users type their names.",
    ),
]
AdjudicatorsOpt = Annotated[
    str | None,
    typer.Option(
        "--adjudicators",
        metavar="NAMES",
        help="Comma-separated adjudicators: one URL each (after the annotators'), the only "
        "tokens that reach /adjudicate (implies --adjudicate; without it --adjudicate "
        "prints one shared adjudicator URL).",
    ),
]
BlindOpt = Annotated[
    bool,
    typer.Option(
        "--blind",
        help="Serve nothing of the judge's output for a trace (label, strata, sorting) until "
        "the person has labelled it and asks to see it; the reveal is recorded.",
    ),
]
HostOpt = Annotated[
    str,
    typer.Option("--host", metavar="ADDR", help="Address to bind (warns unless loopback)."),
]
PortOpt = Annotated[
    int, typer.Option("--port", metavar="INT", min=0, max=65535, help="0: any free port.")
]
QueueNOpt = Annotated[
    int,
    typer.Option(
        "--queue-n",
        metavar="INT",
        min=1,
        help="Traces in the queue: the stratified sample `misstep sample --n` draws "
        "(drawn once at start, with its weights).",
    ),
]
StratifyOpt = Annotated[
    str,
    typer.Option("--stratify", metavar="FIELDS", help="Queue strata, as `misstep sample`."),
]
TaskOpt = Annotated[
    Path | None,
    typer.Option(
        "--task",
        metavar="FILE",
        help="A `misstep sample` task file (JSONL, CSV or Label Studio JSON) as the queue: its "
        "traces in its order, each label weighted as the file says.",
    ),
]
AdjudicateOpt = Annotated[
    bool,
    typer.Option(
        "--adjudicate",
        help="Also serve /adjudicate, to the adjudicator's URL only (printed after the "
        "annotators'): the traces where people disagree, their labels side by side, and a "
        "decision stored with role adjudicator (summary, link, report and the corrected "
        "distributions then use it; agree does not).",
    ),
]
WithJudgeOpt = Annotated[
    bool,
    typer.Option(
        "--with-judge",
        help="With --adjudicate: also list traces where a person disagrees with the judge "
        "(with --blind: recorded as revealed to the adjudicator, whose own later labels of "
        "those traces count as not blind).",
    ),
]
HideNamesOpt = Annotated[
    bool,
    typer.Option("--hide-names", help="With --adjudicate: show people as person 1, person 2, ..."),
]


def register(app: typer.Typer) -> None:
    """Add ``review`` to the app."""

    @app.command("review")
    @handles_errors
    @reads_traces
    def review_cmd(
        traces: TracesArg,
        labels: LabelsOpt,
        human: HumanOpt = None,
        annotator: AnnotatorOpt = None,
        annotators: AnnotatorsOpt = None,
        adjudicators: AdjudicatorsOpt = None,
        blind: BlindOpt = False,
        host: HostOpt = "127.0.0.1",
        port: PortOpt = 0,
        queue_n: QueueNOpt = 200,
        stratify: StratifyOpt = "checkpoint,error_type",
        task: TaskOpt = None,
        adjudicate: AdjudicateOpt = False,
        with_judge: WithJudgeOpt = False,
        hide_names: HideNamesOpt = False,
        taxonomy: RunTaxonomyOpt = None,
        reading: Reading = READING,
        labels_from_other_input: LabelSubsetOpt = False,
        judge_id: JudgeIdOpt = None,
        seed: SeedOpt = 0,
    ) -> None:
        """Browse the traces behind the numbers, label them, and adjudicate disagreements,
        in a local web app.

        Prints one URL per token on stdout (its access token after #), the first an
        annotator's; scripts send the token as `Authorization: Bearer TOKEN`. Stop with
        Ctrl-C."""
        from misstep.labels import check_annotator
        from misstep.review import make_grants

        source = LabelSource.of(
            labels, judge_id, human, taxonomy, labels_from_other_input
        ).checked()
        if task is not None:
            check_input(task, "--task")
        if annotator is not None:
            check_annotator(annotator, "--annotator")
        people, judges = _names(annotators), _names(adjudicators)
        adjudicate = adjudicate or bool(judges)
        if (with_judge or hide_names) and not adjudicate:
            raise OptionError(
                option="--with-judge/--hide-names", value="given", allowed="with --adjudicate"
            )
        if annotator is not None and people:
            raise OptionError(
                option="--annotator", value=annotator, allowed="not with --annotators"
            )
        # Checked before the (slow) load: names, each once.
        make_grants(annotators=people, adjudicators=judges, adjudicate=adjudicate)
        fields = parse_strata(stratify)
        run, labelled = load_input(traces, reading, source, analysis=analysis_config(seed=seed))
        data = _load_data(
            traces,
            run,
            labelled,
            input_format=reading.format_name,
            judge_id=judge_id,
            blind=blind,
            queue_n=queue_n,
            queue_stratify=fields,
            task=task,
            adjudicate=adjudicate,
            with_judge=with_judge,
            hide_names=hide_names,
            seed=seed,
        )
        from misstep.review import make_server

        server = make_server(
            data,
            host=host,
            port=port,
            annotator=annotator,
            annotators=people,
            adjudicators=judges,
        )
        _serve(data, server, host)


def _names(text: str | None) -> list[str]:
    """A comma-separated list of names (blanks dropped)."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _load_data(
    traces: Path,
    run: GradedRun,
    labelled: LabelledRun,
    *,
    input_format: str | None,
    **options: Any,
) -> ReviewData:
    """The text index and the review data, with progress."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from misstep.review import ReviewData, open_trace_texts

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("indexing the trace texts", total=1)

        def on_bytes(done: int, total: int) -> None:
            if total:
                progress.update(task, total=total, completed=done)
            else:
                progress.update(task, description=f"copying the trace texts: {done:,}")

        texts = open_trace_texts(
            traces,
            run.table["trace_id"].astype(str).tolist(),
            input_sha256=run.input_sha256,
            input_format=input_format,
            on_progress=on_bytes,
        )
        stages = progress.add_task("loading", total=4)

        def on_stage(name: str) -> None:
            progress.update(stages, advance=1, description=name)

        return ReviewData(labelled, texts, on_stage=on_stage, **options)


def _for_whom(grant: Grant) -> str:
    if grant.name:
        return grant.who
    if grant.adjudicates:
        return "adjudicators (who type their names)"
    return "annotators (who type their names)"


def _serve(data: ReviewData, server: ReviewServer, host: str) -> None:
    """Print the URLs and serve until Ctrl-C."""
    if not server.loopback:
        err_console.print(
            f"warning: serving on {host}, reachable from other machines; anyone with the "
            "URL's token can read these traces and add labels",
            style="yellow",
            markup=False,
        )
    # One URL per token on stdout, an annotator's first (scripts read the first line); who
    # each is for, and the rest, go to stderr.
    sys.stdout.write("".join(server.url_of(g) + "\n" for g in server.grants))
    sys.stdout.flush()
    err_console.print(
        "URLs on stdout, one per line: " + ", ".join(_for_whom(g) for g in server.grants),
        markup=False,
        soft_wrap=True,
    )
    if server.wildcard:
        for g in server.grants:
            other = server.url_of(g, socket.gethostname())
            err_console.print(
                f"from other machines: {other} ({_for_whom(g)})", markup=False, soft_wrap=True
            )
    err_console.print(
        f"serving {data.n:,} traces and {len(data.label_rows):,} judge labels; queue: "
        f"{len(data.queue):,} traces ({data.queue_source}); people's labels go to "
        f"{data.writer.directory}/<annotator>.jsonl"
        + ("; adjudication at /adjudicate" if data.adjudicate_mode else "")
        + "; Ctrl-C stops",
        markup=False,
        soft_wrap=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        err_console.print("stopped", markup=False)
        server.server_close()
