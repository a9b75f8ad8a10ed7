"""The judge: label schema, the Judge protocol, config, registry and backends."""

from misstep.judge._config import JudgeConfig, judge_id, request_seed
from misstep.judge._evidence import evidence_in_text
from misstep.judge._protocol import Judge, JudgeRequest, JudgeResult
from misstep.judge._registry import available_judges, create_judge, register_judge
from misstep.judge._rules import RULES_JUDGE_CAPABILITIES, RulesJudge
from misstep.judge._schema import EVIDENCE_MAX_CHARS, label_json_schema, label_model

__all__ = [
    "EVIDENCE_MAX_CHARS",
    "RULES_JUDGE_CAPABILITIES",
    "Judge",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeResult",
    "RulesJudge",
    "available_judges",
    "create_judge",
    "evidence_in_text",
    "judge_id",
    "label_json_schema",
    "label_model",
    "register_judge",
    "request_seed",
]
