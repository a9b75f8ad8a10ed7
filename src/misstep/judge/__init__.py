"""The judge: label schema, the Judge protocol, backends, retries and the label store."""

from misstep.judge._config import JudgeConfig, judge_id, request_seed
from misstep.judge._evidence import evidence_in_text
from misstep.judge._protocol import Judge, JudgeRequest, JudgeResult
from misstep.judge._record import LABEL_RECORD_VERSION, LabelStatus, StoredLabel
from misstep.judge._registry import available_judges, create_judge, register_judge
from misstep.judge._rules import RULES_JUDGE_CAPABILITIES, RulesJudge
from misstep.judge._schema import EVIDENCE_MAX_CHARS, label_json_schema, label_model
from misstep.judge._store import (
    InputFile,
    LabelStore,
    RunManifest,
    iter_label_lines,
    read_labels,
    read_manifest,
    read_status_index,
    write_manifest,
)

__all__ = [
    "EVIDENCE_MAX_CHARS",
    "LABEL_RECORD_VERSION",
    "RULES_JUDGE_CAPABILITIES",
    "InputFile",
    "Judge",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeResult",
    "LabelStatus",
    "LabelStore",
    "RulesJudge",
    "RunManifest",
    "StoredLabel",
    "available_judges",
    "create_judge",
    "evidence_in_text",
    "iter_label_lines",
    "judge_id",
    "label_json_schema",
    "label_model",
    "read_labels",
    "read_manifest",
    "read_status_index",
    "register_judge",
    "request_seed",
    "write_manifest",
]
