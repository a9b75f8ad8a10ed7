"""CLI command group: ``misstep label`` (judge every wrong trace, resumably)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import data, err_console, handles_errors, quote
from misstep.cli._judge_options import (
    BatchInvariantOpt,
    ConcurrencyOpt,
    DeadlineOpt,
    EngineArgOpt,
    IncludeCorrectOpt,
    LimitOpt,
    MaxRetriesOpt,
    MaxTraceTokensOpt,
    PerCheckpointOpt,
    PilotOpt,
    RejectsOpt,
    SamplesOpt,
    TimeoutOpt,
    check_run_dir,
    judge_config,
)
from misstep.cli._options import (
    AddJudgeOpt,
    BaseUrlsOpt,
    ChatTemplateKwargsOpt,
    InputFormatOpt,
    MapOpt,
    MaxTokensOpt,
    ModelOpt,
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
from misstep.errors import OptionError

if TYPE_CHECKING:
    from rich.console import Console

    from misstep.judge import JudgeConfig
    from misstep.labels import RunOptions
    from misstep.pipelines import LabelProgress, LabelRunSummary
    from misstep.taxonomy import Taxonomy

_STATUSES = ("ok", "skipped", "unparseable", "truncated", "failed")


def _count_lines(path: Path, limit: int | None) -> int | None:
    """Total for the progress bar: the lines of a plain JSONL file (cheap), else unknown."""
    if not path.is_file() or path.suffix not in (".jsonl", ".ndjson"):
        return limit
    lines = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            lines += block.count(b"\n")
            if limit is not None and lines >= limit:
                return limit
    return lines


def _status_text(progress: LabelProgress) -> str:
    counts = progress.status_counts
    parts = [f"{s} {counts[s]}" for s in _STATUSES if counts.get(s)]
    if progress.resumed:
        parts.append(f"already ok {progress.resumed}")
    if progress.rejected:
        parts.append(f"rejected {progress.rejected}")
    return " · ".join(parts)


def _print_summary(console: Console, summary: LabelRunSummary, taxonomy: Taxonomy) -> None:
    from rich.table import Table

    table = Table(title=data(f"labels in {summary.run_dir} (judge {summary.judge})"))
    table.add_column("status")
    table.add_column("traces", justify="right")
    table.add_column("written this run", justify="right")
    for status in _STATUSES:
        table.add_row(
            status,
            str(summary.status_counts.get(status, 0)),
            str(summary.written_counts.get(status, 0)),
        )
    console.print(table)
    if summary.error_types_by_checkpoint:
        by_ck = Table(title="error types per checkpoint (current ok labels)")
        by_ck.add_column("checkpoint", overflow="fold")  # names and values are never cut
        keys = list(taxonomy.keys)
        extra = sorted(
            {k for c in summary.error_types_by_checkpoint.values() for k in c} - set(keys)
        )
        for key in keys + extra:
            by_ck.add_column(key, justify="right", overflow="fold")
        # Already in checkpoint order (metrics.order_checkpoints), as every command lists them.
        for checkpoint, counts in summary.error_types_by_checkpoint.items():
            by_ck.add_row(data(checkpoint), *(str(counts.get(k, 0)) for k in keys + extra))
        console.print(by_ck)
    console.print(
        f"{summary.traces} traces read, {summary.written} records written, "
        f"{summary.resumed} already labelled, {summary.rejected} rejected, "
        f"{summary.calls} judge requests in {summary.seconds:.1f} s"
    )
    if summary.prompt_tokens or summary.completion_tokens:
        console.print(
            f"tokens this run: {summary.prompt_tokens:,} prompt, "
            f"{summary.completion_tokens:,} completion (as the server counted them)"
        )
    not_ok = sum(summary.status_counts.get(s, 0) for s in ("unparseable", "truncated", "failed"))
    if not_ok:
        console.print(
            f"[yellow]{not_ok} trace(s) have no label yet; run the same command again to "
            "retry them.[/]"
        )


@handles_errors
def label(
    traces: TracesArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="PATH", help="Run directory for labels.jsonl and manifest.json."
        ),
    ],
    judge: Annotated[
        str,
        typer.Option(
            "--judge",
            metavar="NAME",
            help="Judge backend: rules (no model), openai (a server) or vllm.",
        ),
    ] = J.backend,
    base_url: BaseUrlsOpt = None,
    model: ModelOpt = None,
    taxonomy: TaxonomyOpt = None,
    concurrency: ConcurrencyOpt = J.concurrency,
    timeout: TimeoutOpt = J.timeout_s,
    deadline: DeadlineOpt = J.deadline_s,
    max_retries: MaxRetriesOpt = J.max_retries,
    samples: SamplesOpt = J.samples,
    temperature: TemperatureOpt = J.temperature,
    max_tokens: MaxTokensOpt = J.max_tokens,
    reasoning_effort: ReasoningEffortOpt = None,
    chat_template_kwargs: ChatTemplateKwargsOpt = None,
    engine_arg: EngineArgOpt = None,
    batch_invariant: BatchInvariantOpt = False,
    ray_actors: Annotated[
        int | None,
        typer.Option(
            "--ray",
            metavar="ACTORS",
            min=1,
            help="Label on a Ray cluster (RAY_ADDRESS, else a local one) with this many actors: "
            "misstep's client against the servers (--judge openai), or Ray's vLLM engine "
            "processor on GPU nodes (--judge vllm). Needs misstep[ray].",
        ),
    ] = None,
    add_judge: AddJudgeOpt = False,
    seed: SeedOpt = J.seed,
    include_correct: IncludeCorrectOpt = False,
    limit: LimitOpt = None,
    per_checkpoint: PerCheckpointOpt = None,
    pilot: PilotOpt = None,
    max_trace_tokens: MaxTraceTokensOpt = J.max_trace_tokens,
    input_format: InputFormatOpt = None,
    regrade: RegradeOpt = False,
    no_cache: NoCacheOpt = False,
    skip_invalid: RejectsOpt = False,
    path_fields: PathFieldsOpt = None,
    column_map: MapOpt = None,
) -> None:
    """Label every wrong trace with its first error: type, step and quote. Re-run to resume."""
    from misstep.judge import available_judges
    from misstep.labels import RunOptions
    from misstep.taxonomy import load_taxonomy

    check_input(traces, "traces")
    check_run_dir(out)
    reading = Reading(input_format, regrade, skip_invalid, no_cache, path_fields, column_map)
    if judge not in available_judges():
        raise OptionError(
            option="--judge", value=judge, allowed="one of " + ", ".join(available_judges())
        )
    # Every option is checked and bound once, before any connection, then passed whole.
    config = judge_config(
        judge, taxonomy, base_urls=base_url, engine_arg=engine_arg,
        chat_template_kwargs=chat_template_kwargs, model=model, concurrency=concurrency,
        timeout_s=timeout, deadline_s=deadline, max_retries=max_retries, samples=samples,
        temperature=temperature, max_tokens=max_tokens, reasoning_effort=reasoning_effort,
        batch_invariant=batch_invariant, seed=seed, max_trace_tokens=max_trace_tokens,
    )  # fmt: skip
    options = RunOptions(
        include_correct=include_correct,
        limit=limit,
        per_checkpoint=per_checkpoint,
        pilot=pilot,
        add_judge=add_judge,
        **reading.run_fields(),
    )
    tax = load_taxonomy(taxonomy)
    if ray_actors is not None:
        _label_on_ray(traces, out, config, tax, options, actors=ray_actors)
    else:
        _label_live(traces, out, config, tax, options)


def _label_on_ray(
    traces: Path,
    out: Path,
    config: JudgeConfig,
    taxonomy: Taxonomy,
    options: RunOptions,
    *,
    actors: int,
) -> None:
    from misstep.pipelines import check_engine_samples, import_ray, label_with_ray

    if config.backend not in ("openai", "vllm"):
        raise OptionError(
            option="--ray",
            value=actors,
            allowed="with --judge openai (servers) or --judge vllm (engines on GPU nodes)",
        )
    if config.backend == "vllm":
        check_engine_samples(config)
    ray = import_ray()
    ray.init(ignore_reinit_error=True, log_to_driver=False)
    err_console.print(f"labelling on Ray with {actors} actor(s)")
    summary = label_with_ray(
        traces,
        out,
        config,
        taxonomy=taxonomy,
        actors=actors,
        engine=config.backend == "vllm",
        options=options,
    )
    _print_summary(err_console, summary, taxonomy)


def _label_live(
    traces: Path, out: Path, config: JudgeConfig, taxonomy: Taxonomy, options: RunOptions
) -> None:
    """``misstep label`` without Ray: the live path, with a progress bar."""
    from misstep.judge import create_judge
    from misstep.labels import RunDir
    from misstep.pipelines import LabelProgress, run_labeling

    # Build (and probe) the judge before the progress bar: a dead server fails at once.
    backend = create_judge(config, taxonomy)
    with _progress_bar(_count_lines(traces, options.limit)) as (on_progress, finish):
        summary = run_labeling(
            traces,
            out,
            config,
            taxonomy=taxonomy,
            progress=on_progress,
            judge=backend,
            options=options,
        )
        final_state = LabelProgress(done=summary.traces, resumed=summary.resumed)
        final_state.status_counts.update(summary.written_counts)
        finish(final_state, summary.traces)
    _print_summary(err_console, summary, taxonomy)
    if summary.rejected:
        rejects = quote(RunDir(Path(summary.run_dir)).rejects)
        err_console.print(f"{summary.rejected} invalid row(s) written to {rejects}")


@contextlib.contextmanager
def _progress_bar(
    total: int | None,
) -> Iterator[tuple[Callable[[LabelProgress], None], Callable[[LabelProgress, int], None]]]:
    """A progress bar of the traces done (rate, statuses; the judge's notices printed above
    it): the progress callback, and the call that draws the final state with its total."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    start = time.monotonic()
    last = 0.0
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]labelling"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[counts]}"),
        console=err_console,
        transient=False,
    ) as bar:
        task = bar.add_task("label", total=total, rate="", counts="")

        def on_progress(state: LabelProgress) -> None:
            nonlocal last
            while state.notices:
                bar.console.print(f"[yellow]{state.notices.pop(0)}[/]", highlight=False)
            now = time.monotonic()
            if now - last < 0.1:  # redraw at most 10 times a second
                return
            last = now
            rate = state.done / max(now - start, 1e-9)
            bar.update(
                task,
                completed=state.done,
                rate=f"{rate:.1f} traces/s",
                counts=_status_text(state),
            )

        def finish(state: LabelProgress, traces: int) -> None:
            nonlocal last
            bar.update(task, total=traces)
            last = 0.0
            on_progress(state)

        yield on_progress, finish


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.command("label")(label)
