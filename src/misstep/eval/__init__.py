"""misstep.eval."""

from misstep.eval._counts import ProblemCounts, problem_counts
from misstep.eval._coverage import Coverage, coverage
from misstep.eval._findings import Finding
from misstep.eval._link import LinkResult, link_analysis, read_train_metrics
from misstep.eval._majk import MajEstimate, MajMethod, maj_at_k_one
from misstep.eval._order import order_checkpoints
from misstep.eval._passk import pass_at_k, pass_at_k_one
from misstep.eval._report import render_report, report_trace_ids, write_report
from misstep.eval._votes import CheckpointMetrics, problem_stats, vote_metrics
from misstep.eval.agreement import (
    AgreementReport,
    CorrectedDistribution,
    Rating,
    SampleRow,
    agreement_report,
    cohen_kappa,
    correct_distribution,
    corrected_distributions,
    fleiss_kappa_of,
    krippendorff_alpha,
    read_annotations,
    stratified_sample,
    write_task,
)

__all__ = [
    "AgreementReport",
    "CheckpointMetrics",
    "CorrectedDistribution",
    "Coverage",
    "Finding",
    "LinkResult",
    "MajEstimate",
    "MajMethod",
    "ProblemCounts",
    "Rating",
    "SampleRow",
    "agreement_report",
    "cohen_kappa",
    "correct_distribution",
    "corrected_distributions",
    "coverage",
    "fleiss_kappa_of",
    "krippendorff_alpha",
    "link_analysis",
    "maj_at_k_one",
    "order_checkpoints",
    "pass_at_k",
    "pass_at_k_one",
    "problem_counts",
    "problem_stats",
    "read_annotations",
    "read_train_metrics",
    "render_report",
    "report_trace_ids",
    "stratified_sample",
    "vote_metrics",
    "write_report",
    "write_task",
]
