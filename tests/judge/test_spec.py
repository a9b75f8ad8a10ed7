"""``JudgeSpec`` (what a judge is asked), the retry state between rounds (``Attempt``,
``next_attempt``) and ``declared`` (the protocol's defaults for a structural backend)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from misstep.judge import (
    Attempt,
    Judge,
    JudgeConfig,
    JudgeRequest,
    JudgeResult,
    JudgeSpec,
    RetryPolicy,
    Try,
    declared,
    first_attempt,
    judge_id,
    label_json_schema,
    next_attempt,
    request_seed,
)
from misstep.labels import LabelStatus
from misstep.prompts import prompt_hash
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy(None)
CONFIG = JudgeConfig(backend="openai", model="m", seed=5, max_tokens=99)
SEED = request_seed(5, "t0", 0)
STEP = 1_000_003  # the cut retry's seed offset


def test_the_spec_id_is_the_live_formula() -> None:
    spec = JudgeSpec(CONFIG, TAXONOMY)
    expected = judge_id(CONFIG, TAXONOMY.hash, prompt_hash(), label_json_schema(TAXONOMY))
    assert spec.judge_id == expected and spec.judge_id.startswith("llm:m:")
    # the backend does not change what is asked
    batch = JudgeSpec(CONFIG.model_copy(update={"backend": "batch"}), TAXONOMY)
    assert batch.judge_id == spec.judge_id


def test_the_body_of_an_attempt() -> None:
    spec = JudgeSpec(CONFIG, TAXONOMY)
    trace = Trace(trace_id="t0", problem_id="p", response="1 + 1 = 3\n\nSo 3.")
    body = spec.attempt_body(trace, "3", first_attempt(CONFIG, "t0"))
    assert (body["seed"], body["temperature"], body["max_completion_tokens"]) == (SEED, 0.0, 99)
    step = body["response_format"]["json_schema"]["schema"]["properties"]["first_error_step"]
    assert step["maximum"] == 1  # two steps shown: 0 and 1
    reask = Attempt("reask", SEED, 0.0, (Try("first", SEED, 0.0, "unparseable"),), "{x", "bad")
    messages = spec.attempt_body(trace, "3", reask)["messages"]
    assert messages[-2] == {"role": "assistant", "content": "{x"}
    assert "bad" in messages[-1]["content"]


@pytest.mark.parametrize(
    ("effort", "kwargs", "expected"),
    [
        (None, None, None),
        (None, {"enable_thinking": False}, {"enable_thinking": False}),
        ("low", None, {"reasoning_effort": "low", "enable_thinking": True}),
        ("none", None, {"reasoning_effort": "none", "enable_thinking": False}),
        (
            "high",
            {"enable_thinking": False},
            {"reasoning_effort": "high", "enable_thinking": False},
        ),
    ],
)  # fmt: skip
def test_template_kwargs(
    effort: str | None, kwargs: dict[str, Any] | None, expected: dict[str, Any] | None
) -> None:
    config = CONFIG.model_copy(update={"reasoning_effort": effort, "chat_template_kwargs": kwargs})
    assert JudgeSpec(config, TAXONOMY).template_kwargs() == expected


FIRST = {"kind": "first", "seed": SEED, "temperature": 0.0}


@pytest.mark.parametrize(
    ("previous", "expected"),
    [
        (None, ("first", SEED, 0.0, 0)),
        # an old record without its tries: one first attempt, cut -> the cut retry
        ({"status": "truncated"}, ("cut-retry", SEED + STEP, 0.3, 1)),
        ({"status": "truncated", "tries": [{**FIRST, "status": "truncated"}]},
         ("cut-retry", SEED + STEP, 0.3, 1)),
        ({"status": "truncated", "tries": [{**FIRST, "status": "truncated"},
                                           {"kind": "cut-retry", "seed": SEED + STEP,
                                            "temperature": 0.3, "status": "truncated"}]}, None),
        ({"status": "unparseable", "raw_reply": "{x",
          "reason": "reply: bad (after 2 attempts: first truncated, cut-retry unparseable)"},
         ("reask", SEED, 0.0, 1)),
        ({"status": "ok"}, None),
    ],
)  # fmt: skip
def test_next_attempt(
    previous: dict[str, Any] | None, expected: tuple[str, int, float, int] | None
) -> None:
    attempt = next_attempt(CONFIG, "t0", previous, RetryPolicy())
    if expected is None:
        assert attempt is None
        return
    assert attempt is not None
    assert (attempt.kind, attempt.seed, attempt.temperature, len(attempt.before)) == expected
    if attempt.kind == "reask":  # the problem alone, without the attempts glued to it
        assert (attempt.raw, attempt.problem) == ("{x", "reply: bad")
    # the state survives a round trip through the files (with the reply, for Ray's plan)
    again = Attempt.from_dict(attempt.as_dict(), first_attempt(CONFIG, "t0"))
    assert again == attempt
    assert "raw" not in attempt.as_dict(reply=False)


def test_an_older_tries_file_line_falls_back_to_the_first_attempt() -> None:
    first = first_attempt(CONFIG, "t0")
    assert Attempt.from_dict({}, first) == first
    assert first.tries("ok") == [Try("first", SEED, 0.0, "ok")]


class _Structural:
    """A backend that implements only the three required members (no subclassing)."""

    @property
    def judge_id(self) -> str:
        return "structural:v1"

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        return JudgeResult(status=LabelStatus.FAILED, reason="no")

    async def aclose(self) -> None:
        return None


def test_declared_gives_a_structural_backend_the_defaults() -> None:
    judge = declared(_Structural())  # type: ignore[arg-type]
    assert isinstance(judge, Judge) and judge.judge_id == "structural:v1"
    trace = Trace(trace_id="t", problem_id="p", response="r")
    assert (judge.supports_n, judge.preferred_concurrency, judge.base_url) == (False, 0, None)
    assert judge.too_long(trace) is None and judge.take_notices() == []
    assert dict(judge.server_info) == {} and judge.server_model is None
    assert judge.spec is None and asyncio.run(judge.embed(["x"])) is None
    request = JudgeRequest(trace=trace, final_answer=None, steps=["r"], messages=[], seed=0)
    assert asyncio.run(judge.judge(request)).reason == "no"
    with pytest.raises(Exception, match="another structured output"):
        judge.for_label(JudgeResult, {}, "x")  # type: ignore[arg-type]


def test_the_spec_owns_the_retry_policy_and_the_requests_in_flight() -> None:
    spec = JudgeSpec(CONFIG.model_copy(update={"concurrency": 4}), TAXONOMY)
    assert spec.policy == RetryPolicy() and spec.policy is spec.policy  # one per spec
    # the configuration's concurrency, or more for a backend that batches (vllm: 16 x 4)
    assert (spec.in_flight(), spec.in_flight(64)) == (4, 64)
    assert spec.next_attempt("t0", None) == first_attempt(CONFIG, "t0")
    # the manifest's copy of the configuration never holds a credential
    secret = CONFIG.model_copy(update={"base_url": "http://user:pw@host:8000/v1"})
    assert JudgeSpec(secret, TAXONOMY).recorded_config()["base_url"] == "http://host:8000/v1"


def test_declared_keeps_a_subclass_itself() -> None:
    from misstep.judge import RulesJudge

    rules = RulesJudge(JudgeConfig(), TAXONOMY)
    assert declared(rules) is rules
