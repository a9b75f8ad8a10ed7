"""End-to-end flows composed from the layers below: grade, label, demo."""

from misstep.pipelines._analyse import (
    RunAnalysis,
    analyse_run,
    collect_traces,
    dataset_report_path,
    write_run_report,
)
from misstep.pipelines._batch import (
    REPLIES_HINT,
    ExportSummary,
    IngestSummary,
    export_requests,
    ingest_replies,
)
from misstep.pipelines._demo import DEMO_KS, DemoResult, run_demo
from misstep.pipelines._label import LabelProgress, LabelRunSummary, arun_labeling, run_labeling
from misstep.pipelines._ray import check_engine_samples, import_ray, label_with_ray
from misstep.pipelines._select import run_selection, selection_table
from misstep.pipelines._synthetic import (
    SYNTHETIC_PLANTED_ERROR_TYPE,
    SYNTHETIC_PLANTED_STEP,
    make_synthetic_run,
)

__all__ = [
    "DEMO_KS",
    "REPLIES_HINT",
    "SYNTHETIC_PLANTED_ERROR_TYPE",
    "SYNTHETIC_PLANTED_STEP",
    "DemoResult",
    "ExportSummary",
    "IngestSummary",
    "LabelProgress",
    "LabelRunSummary",
    "RunAnalysis",
    "analyse_run",
    "arun_labeling",
    "check_engine_samples",
    "collect_traces",
    "dataset_report_path",
    "export_requests",
    "import_ray",
    "ingest_replies",
    "label_with_ray",
    "make_synthetic_run",
    "run_demo",
    "run_labeling",
    "run_selection",
    "selection_table",
    "write_run_report",
]
