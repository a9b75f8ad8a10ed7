"""Grade a rollouts file, join its labels and run the link analysis; write the HTML report.

Traces are streamed twice rather than held in memory: once to grade them (the graded table keeps
no response text) and, for the report, once more to keep only the few traces its failure
browser shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from misstep.agreement import read_annotations
from misstep.labels import HumanLabel, StoredLabel, check_labels_input, read_labels
from misstep.link import LinkResult, link_analysis
from misstep.report import report_trace_ids, write_report
from misstep.rollouts import GradedRun, Trace, load_graded, read_traces

__all__ = ["RunAnalysis", "analyse_run", "collect_traces", "write_run_report"]


@dataclass
class RunAnalysis:
    """A graded run, its current labels and the link analysis over them."""

    graded: pd.DataFrame
    labels: dict[str, StoredLabel]
    human: list[HumanLabel] | None
    result: LinkResult


def analyse_run(
    traces_path: str | Path | GradedRun,
    labels: str | Path,
    *,
    human: Sequence[str | Path] = (),
    train_metrics: str | Path | None = None,
    ks: Sequence[int] = (1, 4, 16),
    input_format: str | None = None,
    regrade: bool = False,
    seed: int = 0,
    labels_from_other_input: bool = False,
    cache: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunAnalysis:
    """The graded table of ``traces_path`` (an already loaded ``GradedRun``, or a path read
    through the graded-table cache), the current labels of ``labels`` (a run directory or a
    labels.jsonl, which must belong to that input unless ``labels_from_other_input``) and the
    human label files, linked: error types against vote failures."""
    run = (
        traces_path
        if isinstance(traces_path, GradedRun)
        else load_graded(
            traces_path,
            input_format=input_format,
            regrade=regrade,
            cache=cache,
            on_progress=on_progress,
        )
    )
    graded = run.table
    stored = read_labels(labels)
    check_labels_input(
        labels,
        stored,
        input_path=run.input_path,
        input_sha256=run.input_sha256,
        trace_ids=set(graded["trace_id"].tolist()),
        allow_other_input=labels_from_other_input,
    )
    human_labels = [h for path in human for h in read_annotations(path)] or None
    result = link_analysis(
        graded, stored, human=human_labels, train_metrics=train_metrics, ks=ks, seed=seed
    )
    return RunAnalysis(graded=graded, labels=stored, human=human_labels, result=result)


def collect_traces(
    traces_path: str | Path, trace_ids: set[str], *, input_format: str | None = None
) -> dict[str, Trace]:
    """Stream the file once and keep only the traces whose id is in ``trace_ids``."""
    found: dict[str, Trace] = {}
    if not trace_ids:
        return found
    # closing(): stopping early must still close the file the reader holds open
    with closing(read_traces(traces_path, input_format=input_format)) as traces:
        for trace in traces:
            if trace.trace_id in trace_ids:
                found[trace.trace_id] = trace
                if len(found) == len(trace_ids):
                    break
    return found


def write_run_report(
    out: str | Path,
    analysis: RunAnalysis,
    traces_path: str | Path,
    *,
    input_format: str | None = None,
) -> Path:
    """Write the self-contained HTML report of ``analysis`` to ``out``."""
    traces = collect_traces(
        traces_path, report_trace_ids(analysis.result), input_format=input_format
    )
    return write_report(out, analysis.result, traces=traces, labels=analysis.labels)
