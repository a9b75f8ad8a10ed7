"""CLI commands ``misstep export-requests`` and ``misstep ingest-replies``: label through
``vllm run-batch`` files instead of a live server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from misstep.cli._errors import err_console, handles_errors, quote
from misstep.cli._judge_options import (
    IncludeCorrectOpt,
    LimitOpt,
    MaxTraceTokensOpt,
    SamplesOpt,
    check_run_dir,
    judge_config,
)
from misstep.cli._options import (
    AddJudgeOpt,
    ChatTemplateKwargsOpt,
    InputFormatOpt,
    MapOpt,
    MaxTokensOpt,
    NoCacheOpt,
    PathFieldsOpt,
    Reading,
    ReasoningEffortOpt,
    RegradeOpt,
    SeedOpt,
    TaxonomyOpt,
    TemperatureOpt,
    TracesArg,
    check_input,
)
from misstep.defaults import JudgeDefaults as J


@handles_errors
def export_requests(
    traces: TracesArg,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", metavar="RUN_DIR", help="Run directory to write into."),
    ],
    model: Annotated[
        str,
        typer.Option("--model", metavar="NAME", help="The model vllm run-batch will serve."),
    ],
    taxonomy: TaxonomyOpt = None,
    temperature: TemperatureOpt = J.temperature,
    max_tokens: MaxTokensOpt = J.max_tokens,
    samples: SamplesOpt = J.samples,
    seed: SeedOpt = J.seed,
    max_trace_tokens: MaxTraceTokensOpt = J.max_trace_tokens,
    reasoning_effort: ReasoningEffortOpt = None,
    chat_template_kwargs: ChatTemplateKwargsOpt = None,
    include_correct: IncludeCorrectOpt = False,
    limit: LimitOpt = None,
    input_format: InputFormatOpt = None,
    regrade: RegradeOpt = False,
    no_cache: NoCacheOpt = False,
    add_judge: AddJudgeOpt = False,
    path_fields: PathFieldsOpt = None,
    column_map: MapOpt = None,
) -> None:
    """Write the judge requests as RUN_DIR/requests.jsonl for `vllm run-batch`."""
    from misstep.labels import RunDir, RunOptions
    from misstep.pipelines import REPLIES_HINT
    from misstep.pipelines import export_requests as export
    from misstep.taxonomy import load_taxonomy

    check_input(traces, "traces")
    check_run_dir(out)
    reading = Reading(
        input_format, regrade, no_cache=no_cache, path_fields=path_fields, column_map=column_map
    )
    reading.spec()
    config = judge_config(
        "batch", taxonomy, chat_template_kwargs=chat_template_kwargs, model=model,
        temperature=temperature, max_tokens=max_tokens, samples=samples, seed=seed,
        max_trace_tokens=max_trace_tokens, reasoning_effort=reasoning_effort,
    )  # fmt: skip
    options = RunOptions(
        include_correct=include_correct,
        limit=limit,
        add_judge=add_judge,
        **reading.run_fields(),
    )
    summary = export(traces, out, config, taxonomy=load_taxonomy(taxonomy), options=options)
    err_console.print(
        f"wrote {summary.requests} request(s) to {quote(RunDir(out).requests)} (and "
        f"{RunDir(out).requests_parquet.name}); {summary.skipped} trace(s) not judged, "
        f"{summary.already_ok} already labelled by {summary.judge}"
        + (
            f"; {summary.retries} of the requests retry a cut or broken reply"
            if summary.retries
            else ""
        )
        + (
            f"; {summary.given_up} cut or broken reply(ies) kept (no attempt left)"
            if summary.given_up
            else ""
        )
    )
    err_console.print(f"next: {REPLIES_HINT}", markup=False)


@handles_errors
def ingest_replies(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="The exported run directory.")],
    replies: Annotated[
        Path, typer.Argument(metavar="REPLIES", help="vllm run-batch's output file (JSONL).")
    ],
    taxonomy: TaxonomyOpt = None,
) -> None:
    """Store the labels of a `vllm run-batch` output file, validated like live replies."""
    from misstep.pipelines import ingest_replies as ingest
    from misstep.taxonomy import load_taxonomy

    check_input(run_dir, "RUN_DIR")
    check_input(replies, "REPLIES")
    summary = ingest(run_dir, replies, taxonomy=load_taxonomy(taxonomy))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.written_counts.items())) or "none"
    err_console.print(
        f"{summary.replies} reply line(s) read; labels written: {counts}; "
        f"{summary.already_ok} already ok; {summary.awaiting} request(s) still without a reply"
        + (
            f"; {summary.unknown} reply(ies) to no exported request, left out: "
            + ", ".join(repr(i) for i in summary.unknown_ids)
            + (" ..." if summary.unknown > len(summary.unknown_ids) else "")
            if summary.unknown
            else ""
        )
    )
    if summary.to_retry:
        err_console.print(
            f"{summary.to_retry} reply(ies) were cut or broke the schema: run export-requests "
            "again to send their retries (as the live path retries them)"
        )
    if summary.prompt_tokens or summary.completion_tokens:
        err_console.print(
            f"tokens: {summary.prompt_tokens:,} prompt, {summary.completion_tokens:,} completion"
        )


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.command("export-requests")(export_requests)
    app.command("ingest-replies")(ingest_replies)
