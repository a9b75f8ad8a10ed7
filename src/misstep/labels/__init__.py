"""Stored labels, whoever made them: judge records and their store (the current record per
trace), the run manifest, and people's labels; the label run directory that holds them
(``RunDir``: every file's name and path)."""

from misstep.labels._budget import label_sample
from misstep.labels._consensus import (
    HumanConsensus,
    current_labels,
    human_consensus,
    majority_labels,
)
from misstep.labels._design import sampling_weight, task_rows
from misstep.labels._evidence import evidence_in_text
from misstep.labels._human import (
    ADJUDICATOR,
    CANT_TELL,
    HUMAN_LABEL_VERSION,
    NO_ERROR_CHOICE,
    HumanLabel,
    Verdict,
    human_label_from_row,
    read_human_labels,
)
from misstep.labels._latest import label_time, supersedes
from misstep.labels._lock import run_dir_lock
from misstep.labels._manifest import (
    InputFile,
    RunManifest,
    add_to_history,
    read_manifest,
    run_taxonomy,
    write_manifest,
)
from misstep.labels._ownership import check_labels_input
from misstep.labels._people import (
    HumanLabelWriter,
    Reveal,
    human_label_line,
    read_reveals,
    utc_now,
    write_human_labels,
)
from misstep.labels._record import LABEL_RECORD_VERSION, LabelStatus, StoredLabel
from misstep.labels._run import (
    NOT_SAMPLED,
    Action,
    Current,
    LabelRun,
    RecordFile,
    RunFields,
    RunOptions,
    Todo,
    record_of,
    skipped_record,
)
from misstep.labels._rundir import (
    ANNOTATOR_PATTERN,
    HUMAN_DIR,
    REJECTS_FILE,
    REQUEST_TRIES_FILE,
    REQUESTS_FILE,
    REQUESTS_PARQUET,
    SELECTIONS_FILE,
    RunDir,
    check_annotator,
    find_label_run,
    gather_human_files,
    labels_path,
)
from misstep.labels._store import (
    LabelRow,
    LabelStore,
    iter_label_lines,
    read_label_rows,
    read_labels,
    read_status_index,
)
from misstep.labels._tail import repair_tail

__all__ = [
    "ADJUDICATOR",
    "ANNOTATOR_PATTERN",
    "CANT_TELL",
    "HUMAN_DIR",
    "HUMAN_LABEL_VERSION",
    "LABEL_RECORD_VERSION",
    "NOT_SAMPLED",
    "NO_ERROR_CHOICE",
    "REJECTS_FILE",
    "REQUESTS_FILE",
    "REQUESTS_PARQUET",
    "REQUEST_TRIES_FILE",
    "SELECTIONS_FILE",
    "Action",
    "Current",
    "HumanConsensus",
    "HumanLabel",
    "HumanLabelWriter",
    "InputFile",
    "LabelRow",
    "LabelRun",
    "LabelStatus",
    "LabelStore",
    "RecordFile",
    "Reveal",
    "RunDir",
    "RunFields",
    "RunManifest",
    "RunOptions",
    "StoredLabel",
    "Todo",
    "Verdict",
    "add_to_history",
    "check_annotator",
    "check_labels_input",
    "current_labels",
    "evidence_in_text",
    "find_label_run",
    "gather_human_files",
    "human_consensus",
    "human_label_from_row",
    "human_label_line",
    "iter_label_lines",
    "label_sample",
    "label_time",
    "labels_path",
    "majority_labels",
    "read_human_labels",
    "read_label_rows",
    "read_labels",
    "read_manifest",
    "read_reveals",
    "read_status_index",
    "record_of",
    "repair_tail",
    "run_dir_lock",
    "run_taxonomy",
    "sampling_weight",
    "skipped_record",
    "supersedes",
    "task_rows",
    "utc_now",
    "write_human_labels",
    "write_manifest",
]
