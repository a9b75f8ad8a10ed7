"""The judge: label schema, the Judge protocol, the one exchange, config, registry, backends.

Its contract with storage is ``misstep.verdict``'s vocabulary, re-exported here: a judge
returns ``Verdict``s (``JudgeResult``) with a ``LabelStatus``; ``misstep.labels`` stores them."""

from misstep.judge._config import JudgeConfig, judge_id, request_seed, segmentation_hash
from misstep.judge._exchange import (
    EngineRequest,
    Reply,
    RetryPolicy,
    Try,
    bounded_schema,
    chat_body,
    engine_request,
    parse_completion,
    parse_reply,
    reask_messages,
)
from misstep.judge._protocol import Judge, JudgeRequest, JudgeResult, declared
from misstep.judge._registry import (
    available_judges,
    create_judge,
    import_backend,
    register_judge,
)
from misstep.judge._rules import RULES_JUDGE_CAPABILITIES, RulesJudge
from misstep.judge._schema import (
    EVIDENCE_MAX_CHARS,
    EXPLANATION_MAX_CHARS,
    label_json_schema,
    label_model,
)
from misstep.judge._spec import Attempt, JudgeSpec, first_attempt, next_attempt
from misstep.judge._vllm import engine_settings
from misstep.verdict import LABEL_FIELDS, LabelStatus, Verdict, evidence_in_text

__all__ = [
    "EVIDENCE_MAX_CHARS",
    "EXPLANATION_MAX_CHARS",
    "LABEL_FIELDS",
    "RULES_JUDGE_CAPABILITIES",
    "Attempt",
    "EngineRequest",
    "Judge",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeResult",
    "JudgeSpec",
    "LabelStatus",
    "Reply",
    "RetryPolicy",
    "RulesJudge",
    "Try",
    "Verdict",
    "available_judges",
    "bounded_schema",
    "chat_body",
    "create_judge",
    "declared",
    "engine_request",
    "engine_settings",
    "evidence_in_text",
    "first_attempt",
    "import_backend",
    "judge_id",
    "label_json_schema",
    "label_model",
    "next_attempt",
    "parse_completion",
    "parse_reply",
    "reask_messages",
    "register_judge",
    "request_seed",
    "segmentation_hash",
]
