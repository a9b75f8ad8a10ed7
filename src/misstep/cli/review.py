"""CLI: ``misstep review`` (the local web app to read and label traces)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from misstep.cli._errors import err_console, handles_errors
from misstep.cli._load import load_run
from misstep.cli._options import (
    HumanOpt,
    InputFormatOpt,
    JudgeIdOpt,
    LabelsOpt,
    LabelSubsetOpt,
    NoCacheOpt,
    RegradeOpt,
    SeedOpt,
    SkipInvalidOpt,
    TaxonomyOpt,
    TracesArg,
    check_input,
    input_format_value,
    label_run,
)
from misstep.errors import OptionError


def register(app: typer.Typer) -> None:
    """Add ``review`` to the app."""

    @app.command("review")
    @handles_errors
    def review_cmd(
        traces: TracesArg,
        labels: LabelsOpt,
        human: HumanOpt = None,
        annotator: Annotated[
            str | None,
            typer.Option(
                "--annotator",
                metavar="NAME",
                help="Default annotator name for labels made here (letters, digits, ._@+-); "
                "each person can also set theirs in the page.",
            ),
        ] = None,
        blind: Annotated[
            bool,
            typer.Option(
                "--blind",
                help="Hide the judge's label and quote until the person has answered "
                "(recorded with each label).",
            ),
        ] = False,
        host: Annotated[
            str,
            typer.Option("--host", metavar="ADDR", help="Address to bind (warns unless loopback)."),
        ] = "127.0.0.1",
        port: Annotated[
            int, typer.Option("--port", metavar="INT", min=0, max=65535, help="0: any free port.")
        ] = 0,
        queue_n: Annotated[
            int,
            typer.Option(
                "--queue-n",
                metavar="INT",
                min=1,
                help="Traces in the queue: the stratified sample `misstep sample --n` draws.",
            ),
        ] = 200,
        stratify: Annotated[
            str,
            typer.Option("--stratify", metavar="FIELDS", help="Queue strata, as `misstep sample`."),
        ] = "checkpoint,error_type",
        taxonomy: TaxonomyOpt = None,
        input_format: InputFormatOpt = None,
        regrade: RegradeOpt = False,
        skip_invalid: SkipInvalidOpt = False,
        no_cache: NoCacheOpt = False,
        labels_from_other_input: LabelSubsetOpt = False,
        judge_id: JudgeIdOpt = None,
        seed: SeedOpt = 0,
    ) -> None:
        """Browse the traces behind the numbers and label them, in a local web app.

        Prints the URL (with its access token) as the first line on stdout; stop with Ctrl-C."""
        from misstep.agreement import STRATA_FIELDS
        from misstep.review import check_annotator

        labels = label_run(labels, "--labels")
        for path in human or []:
            check_input(path, "--human")
        if annotator is not None:
            check_annotator(annotator, "--annotator")
        fields = [f.strip() for f in stratify.split(",") if f.strip()]
        if any(f not in STRATA_FIELDS for f in fields):
            raise OptionError(
                option="--stratify",
                value=stratify,
                allowed="names among " + ", ".join(STRATA_FIELDS),
            )
        run = load_run(
            traces,
            input_format=input_format,
            regrade=regrade,
            skip_invalid=skip_invalid,
            no_cache=no_cache,
        )
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from misstep.labels import read_human_labels
        from misstep.review import ReviewData, make_server, open_trace_texts
        from misstep.taxonomy import load_taxonomy

        tax = load_taxonomy(taxonomy)
        people = [h for path in human or [] for h in read_human_labels(path, keys=tax.keys)]
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
                input_format=input_format_value(input_format),
                on_progress=on_bytes,
            )
            stages = progress.add_task("loading", total=4)

            def on_stage(name: str) -> None:
                progress.update(stages, advance=1, description=name)

            data = ReviewData(
                run,
                labels,
                texts,
                tax,
                human=people,
                judge_id=judge_id,
                blind=blind,
                labels_from_other_input=labels_from_other_input,
                queue_n=queue_n,
                queue_stratify=fields,
                seed=seed,
                on_stage=on_stage,
            )
        server = make_server(data, host=host, port=port, annotator=annotator)
        if not server.loopback:
            err_console.print(
                f"warning: serving on {host}, reachable from other machines; anyone with the "
                "URL's token can read these traces and add labels",
                style="yellow",
                markup=False,
            )
        # The URL is the first line on stdout (scripts read it); the rest goes to stderr.
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        err_console.print(
            f"serving {data.n:,} traces and {len(data.label_rows):,} judge labels; people's "
            f"labels go to {data.writer.directory}/<annotator>.jsonl; Ctrl-C stops",
            markup=False,
            soft_wrap=True,
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            err_console.print("stopped", markup=False)
        finally:
            server.server_close()
