"""The vllm backend's batching and its SamplingParams, with a stand-in engine (no GPU)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

from misstep.judge import JudgeRequest, label_json_schema, label_model
from misstep.judge._vllm import VLLMJudge, structured_sampling_params
from misstep.labels import LabelStatus
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy(None)


class _Params:
    def __init__(self, **kw: Any) -> None:
        self.kw = kw


def _module(new_api: bool) -> SimpleNamespace:
    sampling = SimpleNamespace()
    if new_api:
        sampling.StructuredOutputsParams = lambda **kw: ("structured", kw)
    else:
        sampling.GuidedDecodingParams = lambda **kw: ("guided", kw)
    return SimpleNamespace(SamplingParams=_Params, sampling_params=sampling)


def test_current_vllm_gets_structured_outputs_older_gets_guided_decoding() -> None:
    schema = {"type": "object"}
    new = structured_sampling_params(
        _module(True), schema=schema, temperature=0.0, max_tokens=9, seed=3
    )
    assert new.kw == {
        "structured_outputs": ("structured", {"json": schema}),
        "temperature": 0.0,
        "max_tokens": 9,
        "seed": 3,
        # neutral values, never the model's generation_config.json defaults
        "top_p": 1.0,
        "top_k": -1,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }
    old = structured_sampling_params(
        _module(False), schema=schema, temperature=0.0, max_tokens=9, seed=3
    )
    assert old.kw["guided_decoding"] == ("guided", {"json": schema})


class _FakeLLM:
    """Answers every prompt of a batch; records the batch sizes."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def chat(self, messages: list[Any], sampling_params: list[Any], use_tqdm: bool) -> list[Any]:
        del use_tqdm
        self.batches.append(len(messages))
        outputs = []
        for params in sampling_params:
            seed = params.kw["seed"]
            if seed == 99:  # one reply cut at max_tokens
                text, finish = '{"error_type": "ari', "length"
            else:
                label = {"error_type": "misread", "first_error_step": 0, "evidence": "x",
                         "explanation": "y", "confidence": 0.5}  # fmt: skip
                text, finish = json.dumps(label), "stop"
            completion = SimpleNamespace(text=text, finish_reason=finish)
            outputs.append(SimpleNamespace(outputs=[completion]))
        return outputs


def test_concurrent_calls_are_gathered_into_one_chat_batch() -> None:
    llm = _FakeLLM()
    judge = VLLMJudge(
        llm=llm,
        vllm_module=_module(True),
        label_type=label_model(TAXONOMY),
        schema=label_json_schema(TAXONOMY),
        judge_id="vllm:test",
    )
    trace = Trace(problem_id="p", response="1 + 1 = 3")
    requests = [
        JudgeRequest(trace=trace, final_answer=None, steps=["1 + 1 = 3"],
                     messages=[{"role": "user", "content": "x"}], seed=seed)
        for seed in (1, 2, 99, 4, 5)
    ]  # fmt: skip

    async def go() -> list[Any]:
        results = await asyncio.gather(*(judge.judge(r) for r in requests))
        await judge.aclose()
        return results

    results = asyncio.run(go())
    assert llm.batches == [5]  # five concurrent calls, one engine call
    assert [r.status for r in results] == [
        LabelStatus.OK, LabelStatus.OK, LabelStatus.TRUNCATED, LabelStatus.OK, LabelStatus.OK,
    ]  # fmt: skip
    assert results[2].raw_reply == '{"error_type": "ari'
