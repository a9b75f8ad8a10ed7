"""Stored labels, whoever made them: judge records and their store (the current record per
trace), the run manifest, and people's labels."""

from misstep.labels._budget import label_sample
from misstep.labels._consensus import HumanConsensus, human_consensus, majority_labels
from misstep.labels._human import (
    ADJUDICATOR,
    HUMAN_DIR,
    NO_ERROR_CHOICE,
    HumanLabel,
    human_label_files,
    human_label_from_row,
    read_human_labels,
)
from misstep.labels._lock import run_dir_lock
from misstep.labels._manifest import (
    InputFile,
    RunManifest,
    add_to_history,
    make_manifest,
    read_manifest,
    run_taxonomy,
    write_manifest,
)
from misstep.labels._ownership import check_labels_input
from misstep.labels._record import LABEL_RECORD_VERSION, StoredLabel
from misstep.labels._run import (
    NOT_SAMPLED,
    REJECTS_FILE,
    SELECTIONS_FILE,
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
from misstep.labels._store import (
    LabelRow,
    LabelStore,
    iter_label_lines,
    labels_path,
    read_label_rows,
    read_labels,
    read_status_index,
)
from misstep.labels._tail import repair_tail
from misstep.verdict import LabelStatus, evidence_in_text

__all__ = [
    "ADJUDICATOR",
    "HUMAN_DIR",
    "LABEL_RECORD_VERSION",
    "NOT_SAMPLED",
    "NO_ERROR_CHOICE",
    "REJECTS_FILE",
    "SELECTIONS_FILE",
    "Action",
    "Current",
    "HumanConsensus",
    "HumanLabel",
    "InputFile",
    "LabelRow",
    "LabelRun",
    "LabelStatus",
    "LabelStore",
    "RecordFile",
    "RunFields",
    "RunManifest",
    "RunOptions",
    "StoredLabel",
    "Todo",
    "add_to_history",
    "check_labels_input",
    "evidence_in_text",
    "human_consensus",
    "human_label_files",
    "human_label_from_row",
    "iter_label_lines",
    "label_sample",
    "labels_path",
    "majority_labels",
    "make_manifest",
    "read_human_labels",
    "read_label_rows",
    "read_labels",
    "read_manifest",
    "read_status_index",
    "record_of",
    "repair_tail",
    "run_dir_lock",
    "run_taxonomy",
    "skipped_record",
    "write_manifest",
]
