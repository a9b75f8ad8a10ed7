"""The offline vllm backend on a real GPU (skipped elsewhere)."""

from __future__ import annotations

import asyncio
import importlib.util
import os

import pytest

from misstep.judge import JudgeConfig, JudgeRequest, create_judge
from misstep.labels import LabelStatus
from misstep.prompts import render_judge_prompt
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

pytestmark = pytest.mark.gpu


def _gpu_ready() -> bool:
    if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA GPU and the vllm extra")
def test_vllm_labels_a_batch_with_structured_outputs() -> None:
    taxonomy = load_taxonomy(None)
    model = os.environ.get("MISSTEP_VLLM_TEST_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")
    config = JudgeConfig(backend="vllm", model=model, max_tokens=256)
    judge = create_judge(config, taxonomy)
    traces = [
        Trace(problem_id=f"p{i}", response=f"We add {i} and 3.\n\n{i} + 3 = {i + 4}")
        for i in range(8)
    ]
    requests = []
    for trace in traces:
        rendered = render_judge_prompt(taxonomy, trace, None)
        requests.append(
            JudgeRequest(
                trace=trace, final_answer=None, steps=rendered.steps,
                messages=rendered.messages, seed=1,
            )
        )  # fmt: skip

    async def go() -> list[LabelStatus]:
        results = await asyncio.gather(*(judge.judge(r) for r in requests))
        await judge.aclose()
        return [r.status for r in results]

    statuses = asyncio.run(go())
    # constrained decoding: every reply parses (or is cut at max_tokens), none fails
    assert set(statuses) <= {LabelStatus.OK, LabelStatus.TRUNCATED, LabelStatus.UNPARSEABLE}
    assert statuses.count(LabelStatus.OK) >= 6
