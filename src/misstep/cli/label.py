"""CLI command group: ``misstep label`` (judge every wrong trace, resumably)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.cli._errors import data, err_console, handles_errors, quote
from misstep.cli._options import (
    AddJudgeOpt,
    BaseUrlsOpt,
    ChatTemplateKwargsOpt,
    InputFormatOpt,
    MaxTokensOpt,
    ModelOpt,
    NoCacheOpt,
    ReasoningEffortOpt,
    RegradeOpt,
    SeedOpt,
    TaxonomyOpt,
    TemperatureOpt,
    TracesArg,
    check_base_urls,
    check_input,
    check_reasoning_effort,
    input_format_value,
)
from misstep.errors import OptionError

if TYPE_CHECKING:
    from rich.console import Console

    from misstep.judge import JudgeConfig
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
        by_ck.add_column("checkpoint")
        keys = list(taxonomy.keys)
        extra = sorted(
            {k for c in summary.error_types_by_checkpoint.values() for k in c} - set(keys)
        )
        for key in keys + extra:
            by_ck.add_column(key, justify="right")
        for checkpoint, counts in sorted(summary.error_types_by_checkpoint.items()):
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


def _label_on_ray(
    traces: Path,
    out: Path,
    config: JudgeConfig,
    taxonomy: Taxonomy,
    *,
    actors: int,
    include_correct: bool,
    input_format: str | None,
    regrade: bool,
    add_judge: bool,
    limit: int | None,
    per_checkpoint: int | None,
    pilot: int | None,
    skip_invalid: bool,
    no_cache: bool,
) -> None:
    from misstep.pipelines import import_ray, label_with_ray

    if config.backend not in ("openai", "vllm"):
        raise OptionError(
            option="--ray",
            value=actors,
            allowed="with --judge openai (servers) or --judge vllm (engines on GPU nodes)",
        )
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
        include_correct=include_correct,
        input_format=input_format,
        regrade=regrade,
        add_judge=add_judge,
        limit=limit,
        per_checkpoint=per_checkpoint,
        pilot=pilot,
        skip_invalid=skip_invalid,
        cache=not no_cache,
    )
    _print_summary(err_console, summary, taxonomy)


def _json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(option=option, value=text, allowed=f"a JSON object ({exc.msg})") from None
    if not isinstance(value, dict):
        raise OptionError(option=option, value=text, allowed="a JSON object, {...}")
    return value


def _engine_args(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(option="--engine-arg", value=item, allowed="KEY=VALUE")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


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
    ] = "rules",
    base_url: BaseUrlsOpt = None,
    model: ModelOpt = None,
    taxonomy: TaxonomyOpt = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", metavar="INT", min=1, help="Requests in flight.")
    ] = 16,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", metavar="SECONDS", help="Seconds one read from the server may take."
        ),
    ] = 60.0,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            metavar="SECONDS",
            help="Seconds one whole request may take, however slowly the server answers.",
        ),
    ] = 300.0,
    max_retries: Annotated[
        int, typer.Option("--max-retries", metavar="INT", min=0, help="Retries on 5xx/timeouts.")
    ] = 3,
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            metavar="INT",
            min=1,
            help="Judge samples per trace, drawn in one request (majority); needs --temperature "
            "above 0.",
        ),
    ] = 1,
    temperature: TemperatureOpt = 0.0,
    max_tokens: MaxTokensOpt = 1024,
    reasoning_effort: ReasoningEffortOpt = None,
    chat_template_kwargs: ChatTemplateKwargsOpt = None,
    engine_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--engine-arg",
            metavar="KEY=VALUE",
            help="vllm backend: an engine setting (tensor_parallel_size=2, max_model_len=16384); "
            "repeatable. VALUE is read as JSON when it parses, else as text.",
        ),
    ] = None,
    batch_invariant: Annotated[
        bool,
        typer.Option(
            "--batch-invariant",
            metavar="",
            help="Record that the server runs with VLLM_BATCH_INVARIANT=1 (not checkable).",
        ),
    ] = False,
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
    seed: SeedOpt = 0,
    include_correct: Annotated[
        bool,
        typer.Option(
            "--include-correct", metavar="", help="Also judge traces whose answer is correct."
        ),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", metavar="INT", min=1, help="Read only the first N traces."),
    ] = None,
    per_checkpoint: Annotated[
        int | None,
        typer.Option(
            "--per-checkpoint",
            metavar="INT",
            min=1,
            help="Label budget: judge N traces drawn at random per checkpoint x dataset "
            "(each label keeps its inclusion probability; shares are weighted by it).",
        ),
    ] = None,
    pilot: Annotated[
        int | None,
        typer.Option(
            "--pilot",
            metavar="INT",
            min=1,
            help="Judge N traces in all, spread evenly over checkpoints x datasets at random "
            "(unlike --limit, which reads the first rows).",
        ),
    ] = None,
    max_trace_tokens: Annotated[
        int,
        typer.Option(
            "--max-trace-tokens",
            metavar="INT",
            min=1,
            help="Token budget of the trace in the prompt.",
        ),
    ] = 6000,
    input_format: InputFormatOpt = None,
    regrade: RegradeOpt = False,
    no_cache: NoCacheOpt = False,
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid", metavar="", help="Write invalid rows to RUN_DIR/rejects.jsonl."
        ),
    ] = False,
) -> None:
    """Label every wrong trace with its first error: type, step and quote. Re-run to resume."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from misstep.judge import JudgeConfig, available_judges, create_judge
    from misstep.pipelines import LabelProgress, run_labeling
    from misstep.taxonomy import load_taxonomy

    check_input(traces, "traces")
    if out.exists() and not out.is_dir():
        raise OptionError(option="--out", value=str(out), allowed="a directory (the run directory)")
    if timeout <= 0:
        raise OptionError(option="--timeout", value=timeout, allowed="a positive number of seconds")
    if deadline <= 0:
        raise OptionError(
            option="--deadline", value=deadline, allowed="a positive number of seconds"
        )
    if judge not in available_judges():
        raise OptionError(
            option="--judge", value=judge, allowed="one of " + ", ".join(available_judges())
        )
    if per_checkpoint is not None and pilot is not None:
        raise OptionError(
            option="--pilot",
            value=pilot,
            allowed="either --per-checkpoint or --pilot, not both",
        )
    if samples > 1 and temperature <= 0:
        raise OptionError(
            option="--samples",
            value=samples,
            allowed="1 at temperature 0: greedy samples are copies of one another, so their "
            "agreement would always be 1",
            hint="pass --temperature above 0 (e.g. --temperature 0.7) with --samples",
        )
    check_base_urls(base_url)
    check_reasoning_effort(reasoning_effort)
    if ray_actors is not None and judge == "vllm" and samples > 1:
        raise OptionError(
            option="--samples",
            value=samples,
            allowed="1 with --ray and --judge vllm: Ray's vLLM processor keeps only the first "
            "output of a request",
            hint="use --ray with --judge openai (servers) for several samples per trace",
        )
    template_kwargs = _json_object(chat_template_kwargs, "--chat-template-kwargs")
    engine_args = _engine_args(engine_arg or [])
    tax = load_taxonomy(taxonomy)
    config = JudgeConfig(
        backend=judge,
        model=model,
        base_url=base_url[0] if base_url else None,
        extra_base_urls=list(base_url[1:]) if base_url else [],
        taxonomy_path=str(taxonomy) if taxonomy is not None else None,
        timeout_s=timeout,
        deadline_s=deadline,
        max_retries=max_retries,
        concurrency=concurrency,
        samples=samples,
        seed=seed,
        max_trace_tokens=max_trace_tokens,
        temperature=temperature,
        max_tokens=max_tokens,
        reasoning_effort=reasoning_effort,
        chat_template_kwargs=template_kwargs,
        engine_args=engine_args,
        batch_invariant=batch_invariant,
    )
    if ray_actors is not None:
        _label_on_ray(
            traces,
            out,
            config,
            tax,
            actors=ray_actors,
            include_correct=include_correct,
            input_format=input_format_value(input_format),
            regrade=regrade,
            add_judge=add_judge,
            limit=limit,
            per_checkpoint=per_checkpoint,
            pilot=pilot,
            skip_invalid=skip_invalid,
            no_cache=no_cache,
        )
        return
    # Build (and probe) the judge before the progress bar: a dead server fails at once.
    backend = create_judge(config, tax)
    total = _count_lines(traces, limit)
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

        def final(state: LabelProgress) -> None:
            nonlocal last
            last = 0.0
            on_progress(state)

        summary = run_labeling(
            traces,
            out,
            config,
            taxonomy=tax,
            include_correct=include_correct,
            limit=limit,
            input_format=input_format_value(input_format),
            regrade=regrade,
            skip_invalid=skip_invalid,
            progress=on_progress,
            judge=backend,
            add_judge=add_judge,
            per_checkpoint=per_checkpoint,
            pilot=pilot,
            cache=not no_cache,
        )
        final_state = LabelProgress(done=summary.traces, resumed=summary.resumed)
        final_state.status_counts.update(summary.written_counts)
        bar.update(task, total=summary.traces)
        final(final_state)
    _print_summary(err_console, summary, tax)
    if summary.rejected:
        rejects = quote(Path(summary.run_dir) / "rejects.jsonl")
        err_console.print(f"{summary.rejected} invalid row(s) written to {rejects}")


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.command("label")(label)
