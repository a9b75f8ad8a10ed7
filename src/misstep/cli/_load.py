"""Read and grade a command's input once, with progress on stderr: the graded table every
command starts from (from the cache when the same input was graded before)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from misstep.cli._errors import err_console, quote
from misstep.cli._options import InputFormat, check_input, input_format_value

if TYPE_CHECKING:
    from misstep.rollouts import GradedRun

__all__ = ["load_run"]


def load_run(
    traces: Path,
    *,
    input_format: InputFormat | None,
    regrade: bool,
    skip_invalid: bool,
    no_cache: bool,
) -> GradedRun:
    """The graded table of ``traces``; rejects (with ``skip_invalid``) are reported with the
    path of the file they went to."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from misstep.rollouts import RejectSink, default_rejects_path, input_size, load_graded

    check_input(traces, "traces")
    sink = RejectSink(default_rejects_path(traces), source=traces) if skip_invalid else None
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        size = input_size(traces)
        hashing = progress.add_task("hashing the input", total=size)
        grading = progress.add_task("reading and grading", total=size, visible=False)

        def on_hash(done: int) -> None:
            progress.update(hashing, completed=done)

        def on_progress(done: int, read: int) -> None:
            progress.update(
                grading,
                visible=True,
                completed=read,
                description=f"reading and grading: {done:,} traces",
            )

        try:
            run = load_graded(
                traces,
                input_format=input_format_value(input_format),
                regrade=regrade,
                rejects=sink,
                cache=not no_cache,
                on_progress=on_progress,
                on_hash=on_hash,
            )
        finally:
            if sink is not None:
                sink.close()
    if sink is not None:
        if sink.count:
            err_console.print(
                f"{sink.count} invalid row(s) rejected, written to {quote(sink.path)}",
                soft_wrap=True,
                markup=False,
            )
        else:
            err_console.print("no invalid rows")
    source = "read from the cache" if run.from_cache else "graded"
    err_console.print(f"{len(run.table):,} traces {source}", markup=False)
    return run
