"""The judge: label schema, the Judge protocol, the one exchange, config, registry, backends."""

from misstep.judge._config import JudgeConfig, judge_id, request_seed, segmentation_hash
from misstep.judge._evidence import evidence_in_text
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
from misstep.judge._protocol import Judge, JudgeRequest, JudgeResult
from misstep.judge._registry import available_judges, create_judge, register_judge
from misstep.judge._rules import RULES_JUDGE_CAPABILITIES, RulesJudge
from misstep.judge._schema import (
    EVIDENCE_MAX_CHARS,
    EXPLANATION_MAX_CHARS,
    label_json_schema,
    label_model,
)
from misstep.judge._vllm import engine_settings

__all__ = [
    "EVIDENCE_MAX_CHARS",
    "EXPLANATION_MAX_CHARS",
    "RULES_JUDGE_CAPABILITIES",
    "EngineRequest",
    "Judge",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeResult",
    "Reply",
    "RetryPolicy",
    "RulesJudge",
    "Try",
    "available_judges",
    "bounded_schema",
    "chat_body",
    "create_judge",
    "engine_request",
    "engine_settings",
    "evidence_in_text",
    "judge_id",
    "label_json_schema",
    "label_model",
    "parse_completion",
    "parse_reply",
    "reask_messages",
    "register_judge",
    "request_seed",
    "segmentation_hash",
]
