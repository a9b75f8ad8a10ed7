"""Run the link analysis of a loaded label run; write the HTML report.

Pipelines take loaded objects (a ``LabelledRun`` over its graded table, training metrics as a
table); the commands parse, load, call and print. Traces are streamed twice rather than held in
memory: once to grade them (the graded table keeps no response text) and, for the report, once
more to keep only the few traces its failure browser shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from misstep.agreement import LabelledRun
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
from misstep.rollouts import Trace, read_traces

__all__ = [
    "RunAnalysis",
    "analyse_run",
    "collect_traces",
    "dataset_report_path",
    "write_run_report",
]


@dataclass
class RunAnalysis:
    """A label run joined to its graded input and the link analysis over them."""

    labelled: LabelledRun
    """The label run as every analysis reads it (graded table, labels, taxonomy, people's
    labels, distributions)."""
    result: LinkResult
    """The analysis with the datasets of each checkpoint pooled."""
    by_dataset: dict[str, LinkResult] = field(default_factory=dict)
    """With ``by_dataset``: the same analysis run on each dataset alone, by name."""

    @property
    def graded(self) -> pd.DataFrame:
        """The graded table (every dataset)."""
        return self.labelled.table

    @property
    def labels(self) -> dict[str, StoredLabel]:
        """The current label record of each trace."""
        return self.labelled.records

    @property
    def human(self) -> list[HumanLabel] | None:
        """People's labels, when there are any."""
        return self.labelled.human or None


def analyse_run(
    labelled: LabelledRun,
    *,
    ks: Sequence[int] | None = None,
    train_metrics: pd.DataFrame | None = None,
    by_dataset: bool = False,
    on_stage: Callable[[str], None] | None = None,
) -> RunAnalysis:
    """The link analysis of a label run joined to its graded input (``labelled``:
    ``misstep.agreement.load_labelled_run(labels, load_graded(traces), full=True)``, whose
    config says how it estimates): error types against vote failures, with the datasets of
    each checkpoint pooled and, with ``by_dataset``, on each dataset alone. ``ks`` follow
    ``metrics.check_ks``; None: the ``metrics.default_ks`` that the samples allow.
    ``train_metrics``: per-step training metrics (``misstep.link.read_train_metrics``)."""
    graded = labelled.table
    ks = default_ks(fitting_samples(graded)) if ks is None else check_ks(ks, max_samples(graded))
    result = link_analysis(labelled, train_metrics=train_metrics, ks=ks, on_stage=on_stage)
    per_dataset: dict[str, LinkResult] = {}
    if by_dataset:
        for name in sorted(graded["dataset"].astype(str).unique()):
            per_dataset[name] = link_analysis(
                labelled,
                train_metrics=train_metrics,
                ks=ks,
                on_stage=None if on_stage is None else _named(on_stage, name),
                dataset=name,
            )
    return RunAnalysis(labelled=labelled, result=result, by_dataset=per_dataset)


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
