"""The vllm backend over a stand-in AsyncLLM (no vllm needed): continuous submission, the one
adapter keeps every field, the exchange's retry applies offline too."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from misstep.judge import (
    JudgeConfig,
    JudgeRequest,
    JudgeSpec,
    bounded_schema,
    chat_body,
    engine_request,
    label_json_schema,
)
from misstep.judge._vllm import VLLMJudge, engine_settings
from misstep.labels import LabelStatus
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy(None)
LABEL = {"first_error_step": 0, "evidence": "x", "explanation": "y",
         "error_type": "arithmetic", "confidence": 0.5}  # fmt: skip


@dataclass
class _Structured:
    json: Any


class _Params:
    def __init__(self, **kw: Any) -> None:
        self.kw = kw


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    vllm = ModuleType("vllm")
    sampling = ModuleType("vllm.sampling_params")
    sampling.StructuredOutputsParams = _Structured  # type: ignore[attr-defined]
    sampling.RequestOutputKind = SimpleNamespace(FINAL_ONLY="final")  # type: ignore[attr-defined]
    vllm.SamplingParams = _Params  # type: ignore[attr-defined]
    vllm.sampling_params = sampling  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
    return vllm


class _Tokenizer:
    def __init__(self) -> None:
        self.kwargs: list[dict[str, Any]] = []

    def apply_chat_template(self, messages: list[Any], **kw: Any) -> list[int]:
        self.kwargs.append(kw)
        return [len(messages), 7, 7]


class _Engine:
    """Answers after a pause; records how many requests were in flight at once."""

    def __init__(self, cut_seeds: set[int]) -> None:
        self.cut_seeds = cut_seeds
        self.params: list[_Params] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.tokenizer = _Tokenizer()
        self.closed = False

    async def get_tokenizer(self) -> _Tokenizer:
        return self.tokenizer

    async def generate(self, prompt: Any, params: _Params, request_id: str) -> Any:
        self.params.append(params)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        if params.kw["seed"] in self.cut_seeds:
            text, finish = '{"first_error_step":0,"evidence":"x x x x', "length"
        else:
            text, finish = json.dumps(LABEL), "stop"
        yield SimpleNamespace(
            prompt_token_ids=prompt["prompt_token_ids"],
            outputs=[
                SimpleNamespace(text=text, finish_reason=finish, token_ids=[1, 2])
                for _ in range(params.kw["n"])
            ],
        )

    def shutdown(self) -> None:
        self.closed = True


def _judge(vllm: ModuleType, engine: _Engine, **kw: Any) -> VLLMJudge:
    spec = JudgeSpec(JudgeConfig(backend="vllm", model="m", **kw), TAXONOMY)
    return VLLMJudge(spec, engine=engine, vllm_module=vllm)


def _request(seed: int) -> JudgeRequest:
    trace = Trace(problem_id="p", response="1 + 1 = 3\n\n3 + 1 = 4")
    return JudgeRequest(
        trace=trace, final_answer=None, steps=["1 + 1 = 3", "3 + 1 = 4"],
        messages=[{"role": "user", "content": "x"}], seed=seed,
        schema=bounded_schema(label_json_schema(TAXONOMY), 2),
    )  # fmt: skip


def test_requests_are_submitted_at_once_and_a_cut_reply_is_retried(
    fake_vllm: ModuleType,
) -> None:
    engine = _Engine(cut_seeds={99})
    judge = _judge(fake_vllm, engine)

    async def go() -> list[Any]:
        results = await asyncio.gather(*(judge.judge(_request(s)) for s in (1, 2, 99, 4, 5)))
        await judge.aclose()
        return results

    results = asyncio.run(go())
    assert engine.most_in_flight == 5  # no lock-step batch: all five in the engine at once
    assert engine.closed
    assert [r.status for r in results] == [LabelStatus.OK] * 5  # the cut one, after its retry
    retried = results[2]
    assert retried.attempts == 2
    tries = retried.extra["tries"]
    assert [t["kind"] for t in tries] == ["first", "cut-retry"]
    assert [t["status"] for t in tries] == ["truncated", "ok"]
    # another seed (99 + 1_000_003), and at least temperature 0.3
    assert tries[1]["seed"] == 99 + 1_000_003 and tries[1]["temperature"] == 0.3
    assert retried.extra["usage"] == {"prompt_tokens": 6, "completion_tokens": 4}  # 2 x (3, 2)


def test_every_field_reaches_the_engine(fake_vllm: ModuleType) -> None:
    engine = _Engine(cut_seeds=set())
    judge = _judge(
        fake_vllm,
        engine,
        temperature=0.7,
        max_tokens=321,
        reasoning_effort="low",
        chat_template_kwargs={"enable_thinking": False},
    )
    request = _request(5)
    request = JudgeRequest(**{**request.__dict__, "n": 3})

    async def go() -> Any:
        result = await judge.judge(request)
        await judge.aclose()
        return result

    result = asyncio.run(go())
    assert len(result.choices) == 2  # n=3: the first and two more samples
    (params,) = engine.params
    kw = params.kw
    assert (kw["n"], kw["seed"], kw["max_tokens"], kw["temperature"]) == (3, 5, 321, 0.7)
    assert kw["output_kind"] == "final"
    assert kw["repetition_penalty"] == 1.0 and kw["top_k"] == -1  # neutral, explicit
    step = kw["structured_outputs"].json["properties"]["first_error_step"]
    assert (step["minimum"], step["maximum"]) == (0, 1)  # two steps shown
    (template,) = engine.tokenizer.kwargs
    assert template["enable_thinking"] is False and template["reasoning_effort"] == "low"


def test_the_adapter_keeps_every_field_of_the_body() -> None:
    body = chat_body(
        model="m", messages=[{"role": "user", "content": "q"}], schema={"type": "object"},
        name="Label", temperature=0.5, max_tokens=64, seed=9, n=2, reasoning_effort="high",
        chat_template_kwargs={"a": 1},
    )  # fmt: skip
    request = engine_request(body)
    sent = {k for k in body if k not in ("model", "messages", "response_format")}
    kept = set(request.sampling) | {"max_completion_tokens", "reasoning_effort",
                                    "chat_template_kwargs"}  # fmt: skip
    assert sent <= kept
    assert request.sampling["structured_outputs"] == {"json": {"type": "object"}}
    assert request.chat_template_kwargs == {
        "a": 1,
        "reasoning_effort": "high",
        "enable_thinking": True,
    }


def test_engine_settings_name_the_backend_and_let_the_user_win() -> None:
    from misstep.judge import JudgeConfig

    plain = engine_settings(JudgeConfig(backend="vllm", model="m"))
    assert plain["structured_outputs_config"] == {
        "backend": "xgrammar",
        "disable_any_whitespace": True,
    }
    mine = engine_settings(
        JudgeConfig(
            backend="vllm",
            model="m",
            engine_args={
                "max_model_len": 4096,
                "structured_outputs_config": {"backend": "guidance"},
            },
        )
    )
    assert mine["max_model_len"] == 4096
    assert mine["structured_outputs_config"] == {
        "backend": "guidance",
        "disable_any_whitespace": True,
    }
