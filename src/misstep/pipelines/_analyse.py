"""Grade a rollouts file, join its labels and run the link analysis; write the HTML report.

Traces are streamed twice rather than held in memory: once to grade them (the graded table keeps
no response text) and, for the report, once more to keep only the few traces its failure
browser shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from misstep.agreement import AnalysisConfig, LabelledRun, load_labelled_run
from misstep.labels import HumanLabel, StoredLabel
from misstep.link import LinkResult, link_analysis
from misstep.metrics import (
    CheckpointMetrics,
    VotingRow,
    check_ks,
    default_ks,
    fitting_samples,
    max_samples,
    vote_metrics,
    voting_table,
)
from misstep.report import report_trace_ids, write_report
from misstep.rollouts import GradedRun, Trace, load_graded, read_traces

__all__ = [
    "RunAnalysis",
    "analyse_run",
    "collect_traces",
    "dataset_report_path",
    "write_run_report",
]


@dataclass
class RunAnalysis:
    """A graded run, its current labels and the link analysis over them."""

    graded: pd.DataFrame
    """The graded table (every dataset)."""
    labels: dict[str, StoredLabel]
    """The current label of each trace."""
    human: list[HumanLabel] | None
    """People's labels, when given."""
    result: LinkResult
    """The analysis with the datasets of each checkpoint pooled."""
    by_dataset: dict[str, LinkResult] = field(default_factory=dict)
    """With ``by="dataset"``: the same analysis run on each dataset alone, by name."""
    labelled: LabelledRun | None = None
    """The label run as every analysis reads it (taxonomy, people's labels, distributions)."""


def analyse_run(
    traces_path: str | Path | GradedRun,
    labels: str | Path | LabelledRun,
    *,
    human: Sequence[str | Path] = (),
    train_metrics: str | Path | None = None,
    ks: Sequence[int] | None = None,
    input_format: str | None = None,
    regrade: bool = False,
    labels_from_other_input: bool = False,
    judge_id: str | None = None,
    by: str | None = None,
    taxonomy: str | Path | None = None,
    cache: bool = True,
    on_stage: Callable[[str], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    config: AnalysisConfig | None = None,
) -> RunAnalysis:
    """The graded table of ``traces_path`` (an already loaded ``GradedRun``, or a path read
    through the graded-table cache), the current labels of ``labels`` (a run directory or a
    labels.jsonl, which must belong to that input unless ``labels_from_other_input``), read
    with its taxonomy and people's labels by ``misstep.agreement.load_labelled_run``, linked:
    error types against vote failures. ``ks`` follow ``metrics.check_ks``; None: the
    ``metrics.default_ks`` that the samples allow. ``labels`` may be a ``LabelledRun`` already
    loaded over ``traces_path`` with ``full=True`` (the CLI's, which said what it left out);
    ``human``, ``judge_id``, ``taxonomy``, ``labels_from_other_input`` and ``config`` (how
    the analysis estimates, ``AnalysisConfig``) are then its own."""
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
    ks = default_ks(fitting_samples(graded)) if ks is None else check_ks(ks, max_samples(graded))
    labelled = (
        labels
        if isinstance(labels, LabelledRun)
        else load_labelled_run(
            labels,
            run,
            judge=judge_id,
            human=human,
            taxonomy=taxonomy,
            allow_other_input=labels_from_other_input,
            full=True,
            config=config,
        )
    )
    seed = labelled.config.seed
    stored = labelled.records
    human_labels = labelled.human or None
    result = link_analysis(
        graded, labelled, train_metrics=train_metrics, ks=ks, seed=seed, on_stage=on_stage
    )
    per_dataset: dict[str, LinkResult] = {}
    if by == "dataset":
        for name, part in graded.groupby("dataset", sort=True):
            per_dataset[str(name)] = link_analysis(
                part.reset_index(drop=True),
                labelled,
                train_metrics=train_metrics,
                ks=ks,
                seed=seed,
                on_stage=None if on_stage is None else _named(on_stage, str(name)),
                dataset=str(name),
            )
    return RunAnalysis(
        graded=graded,
        labels=stored,
        human=human_labels,
        result=result,
        by_dataset=per_dataset,
        labelled=labelled,
    )


def _named(on_stage: Callable[[str], None], dataset: str) -> Callable[[str], None]:
    return lambda stage: on_stage(f"{dataset}: {stage}")


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


def dataset_report_path(out: str | Path, dataset: str) -> Path:
    """``report.html`` -> ``report.<dataset>.html``, the dataset's name made safe for a file
    name (every character but letters, digits, ``.``, ``_`` and ``-`` becomes ``_``)."""
    path = Path(out)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", dataset).strip(".") or "dataset"
    return path.with_name(f"{path.stem}.{safe}{path.suffix or '.html'}")


def write_run_report(
    out: str | Path,
    analysis: RunAnalysis,
    traces_path: str | Path,
    *,
    input_format: str | None = None,
) -> list[Path]:
    """Write the self-contained HTML report of ``analysis`` to ``out`` and, when it was run
    per dataset, one report per dataset beside it (``dataset_report_path``). Returns the paths
    written, ``out`` first. The traces are streamed once for all of them."""
    results = [(Path(out), analysis.result)]
    results += [(dataset_report_path(out, d), r) for d, r in analysis.by_dataset.items()]
    wanted: set[str] = set()
    for _, result in results:
        wanted |= report_trace_ids(result)
    traces = collect_traces(traces_path, wanted, input_format=input_format)
    written = []
    for path, result in results:
        graded = analysis.graded
        if path != Path(out):  # a per-dataset report: that dataset's rows
            dataset = next(d for d, r in analysis.by_dataset.items() if r is result)
            graded = graded[graded["dataset"].astype(str) == dataset]
        voting, curves = _voting_and_curves(graded, result.k)
        written.append(
            write_report(
                path,
                result,
                traces=traces,
                labels=analysis.labels,
                voting=voting,
                curves=curves,
            )
        )
    return written


def _voting_and_curves(
    graded: pd.DataFrame, k: int
) -> tuple[list[VotingRow], list[CheckpointMetrics]]:
    """The report's table of other aggregators (datasets pooled, at the headline k) and its
    pass@k / maj@k curves (k = 1, 2, 4, ... up to the fewest samples of a problem)."""
    n_min = int(graded.groupby(["checkpoint", "dataset", "problem_id"]).size().min())
    ks = [2**i for i in range(n_min.bit_length()) if 2**i <= n_min]
    # At any size: the table takes seconds (benchmarks/bench_link.py, 700,000 traces).
    voting = voting_table(graded, k, by_dataset=False)
    curves = vote_metrics(graded, ks, by_dataset=False, n_boot=10)
    return voting, curves
