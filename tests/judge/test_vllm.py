"""The offline vllm backend (AsyncLLM) on a real engine: a CUDA GPU, or any machine with vllm
installed and ``MISSTEP_VLLM_TEST_MODEL`` naming a local model folder (the real-vLLM tier on
CPU: VLLM_CPU_KVCACHE_SPACE=2 MISSTEP_VLLM_TEST_MODEL=DIR). Skipped elsewhere."""

from __future__ import annotations

import asyncio
import importlib.util
import os

import pytest

from misstep.judge import (
    JudgeConfig,
    JudgeRequest,
    bounded_schema,
    create_judge,
    label_json_schema,
)
from misstep.labels import LabelStatus
from misstep.prompts import render_judge_prompt
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

pytestmark = pytest.mark.gpu


def _engine_ready() -> bool:
    if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("torch") is None:
        return False
    if os.environ.get("MISSTEP_VLLM_TEST_MODEL"):
        return True
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.skipif(
    not _engine_ready(), reason="needs the vllm extra and a CUDA GPU or MISSTEP_VLLM_TEST_MODEL"
)
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
                schema=bounded_schema(
                    label_json_schema(taxonomy), len(rendered.steps), max_tokens=256
                ),
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
    # bounded by the grammar: no step outside the two shown, so never unparseable for that
    assert LabelStatus.UNPARSEABLE not in statuses
