"""The one way every command reads its input: the traces, graded once with progress on stderr
(from the cache when the same input was graded before), and for the analysis commands the
label run over them (``misstep.agreement.load_labelled_run``) with its notes on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from misstep.cli._errors import err_console, quote
from misstep.cli._options import LabelSource, Reading, check_input

if TYPE_CHECKING:
    from misstep.agreement import AnalysisConfig, LabelledRun
    from misstep.rollouts import GradedRun

__all__ = ["load_input", "load_run"]


def load_run(traces: Path, reading: Reading) -> GradedRun:
    """The graded table of ``traces``; rejects (with ``--skip-invalid``) are reported with the
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
    skip_invalid = reading.skip_invalid
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
                input_format=reading.format_name,
                regrade=reading.regrade,
                rejects=sink,
                cache=reading.cache,
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
    if reading.regrade:
        _compare_with_harness(run)
    return run


def _compare_with_harness(run: GradedRun) -> None:
    """With ``--regrade``: how misstep's own grade compares with the grade the rows carried
    (a harness's, verl's score), on the rows that carried one."""
    table = run.table
    carried = table["harness_correct"].notna()
    n = int(carried.sum())
    if not n:
        return
    theirs = table.loc[carried, "harness_correct"].astype(bool)
    mine = table.loc[carried, "correct"].astype(bool)
    differ = int((theirs != mine).sum())
    err_console.print(
        f"misstep's grade differs from the harness's on {differ} of {n} traces "
        f"({mine.mean():.1%} correct by misstep, {theirs.mean():.1%} by the harness; the "
        "graded table's harness_correct and harness_answer keep the harness's)",
        markup=False,
    )


def load_input(
    traces: Path,
    reading: Reading,
    source: LabelSource,
    *,
    analysis: AnalysisConfig | None = None,
    full: bool = False,
) -> tuple[GradedRun, LabelledRun]:
    """An analysis command's input: the graded table of ``traces`` (``load_run``) and its
    label run (labels of one judge checked against the input, the run's taxonomy, people's
    labels); the options are checked before a single trace is read. ``full`` and
    ``analysis`` (the command's ``AnalysisConfig``, from ``cli._analysis.analysis_config``)
    go to ``load_labelled_run``."""
    source = source.checked()
    run = load_run(traces, reading)
    return run, _labelled(source, run, full=full, analysis=analysis)


def _labelled(
    source: LabelSource,
    run: GradedRun,
    *,
    full: bool,
    analysis: AnalysisConfig | None,
) -> LabelledRun:
    """Load the run's labels, taxonomy and people's labels; say what was left out and which
    people's label files were read."""
    from misstep.agreement import load_labelled_run

    labelled = load_labelled_run(
        source.labels,
        run,
        judge=source.judge_id,
        human=list(source.human),
        taxonomy=source.taxonomy,
        allow_other_input=source.other_input,
        full=full,
        config=analysis,
    )
    if labelled.outside:
        err_console.print(
            f"{labelled.outside} labelled trace(s) of {quote(source.labels)} are not in "
            f"{quote(run.input_path)} and are left out",
            soft_wrap=True,
        )
    given = {p.resolve() for p in source.human}
    own = [p for p in labelled.human_files if p.resolve() not in given]
    if own:
        err_console.print(
            f"people's labels of the run: {len(own)} file(s) in "
            f"{quote(own[0].parent)} ({', '.join(p.name for p in own)})",
            soft_wrap=True,
        )
    return labelled
