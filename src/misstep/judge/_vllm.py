"""The ``vllm`` backend: the offline ``vllm.LLM`` engine with structured outputs.

Installed with the ``misstep[vllm]`` extra and imported lazily. Concurrent ``judge`` calls are
gathered into one ``LLM.chat`` batch (the engine is fastest with many prompts at once); the
pipeline may also call ``judge_batch`` directly.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from misstep.errors import BackendNotInstalledError
from misstep.judge._config import NEUTRAL_SAMPLING
from misstep.judge._protocol import JudgeRequest, JudgeResult
from misstep.labels._record import LabelStatus

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig
    from misstep.taxonomy import Taxonomy

__all__ = ["VLLMJudge", "create_vllm_judge", "structured_sampling_params"]


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise BackendNotInstalledError(
            backend="vllm", extra="vllm", reason=f"the vllm package cannot be imported ({exc})"
        ) from None
    return vllm


def structured_sampling_params(
    vllm: Any, *, schema: dict[str, Any], temperature: float, max_tokens: int, seed: int
) -> Any:
    """SamplingParams constrained to ``schema``: ``structured_outputs=StructuredOutputsParams``
    on current vLLM (>= 0.11; ``guided_decoding`` was removed in 0.12), else the older
    ``guided_decoding=GuidedDecodingParams``."""
    sampling = vllm.sampling_params
    # The same neutral values the server backend sends: unset, they would come from the
    # model's generation_config.json.
    common = {
        **NEUTRAL_SAMPLING,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
    }
    if hasattr(sampling, "StructuredOutputsParams"):
        return vllm.SamplingParams(
            structured_outputs=sampling.StructuredOutputsParams(json=schema), **common
        )
    return vllm.SamplingParams(guided_decoding=sampling.GuidedDecodingParams(json=schema), **common)


class VLLMJudge:
    """Batches concurrent requests into ``LLM.chat`` calls run in a worker thread."""

    def __init__(
        self,
        *,
        llm: Any,
        vllm_module: Any,
        label_type: type[BaseModel],
        schema: dict[str, Any],
        judge_id: str,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        max_batch: int = 256,
        model: str | None = None,
    ) -> None:
        self._llm = llm
        self._vllm = vllm_module
        self._label_type = label_type
        self._schema = schema
        self._judge_id = judge_id
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._max_batch = max_batch
        self.server_model = model
        self.preferred_concurrency = max_batch
        """In-flight requests the pipeline should allow so that batches fill up."""
        self._pending: list[tuple[JudgeRequest, asyncio.Future[JudgeResult]]] = []
        self._worker: asyncio.Task[None] | None = None

    @property
    def judge_id(self) -> str:
        return self._judge_id

    async def aclose(self) -> None:
        if self._worker is not None:
            await self._worker
        self._llm = None

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        future: asyncio.Future[JudgeResult] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        # Let every coroutine that is ready enqueue its request before the first batch starts.
        await asyncio.sleep(0)
        while self._pending:
            batch, self._pending = (
                self._pending[: self._max_batch],
                self._pending[self._max_batch :],
            )
            try:
                results = await self.judge_batch([req for req, _ in batch])
            except Exception as exc:  # the engine failed: every request in the batch failed
                results = [
                    JudgeResult(status=LabelStatus.FAILED, reason=f"vllm engine error: {exc}")
                    for _ in batch
                ]
            for (_, future), res in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(res)

    async def judge_batch(self, requests: list[JudgeRequest]) -> list[JudgeResult]:
        """Label many traces with one ``LLM.chat`` call (run off the event loop)."""
        start = time.perf_counter()
        params = [
            structured_sampling_params(
                self._vllm,
                schema=self._schema,
                temperature=self._temperature,
                max_tokens=self._max_tokens,
                seed=req.seed,
            )
            for req in requests
        ]
        messages = [req.messages for req in requests]
        outputs = await asyncio.to_thread(
            self._llm.chat, messages, sampling_params=params, use_tqdm=False
        )
        latency = (time.perf_counter() - start) * 1000.0 / max(1, len(requests))
        return [self._to_result(out, latency) for out in outputs]

    def _to_result(self, output: Any, latency_ms: float) -> JudgeResult:
        completion = output.outputs[0]
        raw = completion.text or ""
        if completion.finish_reason == "length":
            return JudgeResult(
                status=LabelStatus.TRUNCATED,
                raw_reply=raw,
                latency_ms=latency_ms,
                reason=f"reply cut at max_tokens={self._max_tokens}",
            )
        try:
            label = self._label_type.model_validate_json(raw)
        except ValidationError as exc:
            # Decoding is constrained to the schema, so only bounds the grammar cannot express
            # (e.g. confidence range) get here; a re-ask would give the same greedy answer.
            return JudgeResult(
                status=LabelStatus.UNPARSEABLE,
                raw_reply=raw,
                latency_ms=latency_ms,
                reason=str(exc.errors()[:2]),
            )
        return JudgeResult(status=LabelStatus.OK, label=label, latency_ms=latency_ms)


def create_vllm_judge(config: JudgeConfig, taxonomy: Taxonomy) -> VLLMJudge:
    """Load the model into an offline engine (registry factory); needs ``misstep[vllm]``."""
    vllm = _import_vllm()
    from misstep.errors import OptionError
    from misstep.judge import judge_id, label_json_schema, label_model
    from misstep.prompts import prompt_hash

    if not config.model:
        raise OptionError(
            option="--model",
            value=None,
            allowed="a Hugging Face model id or local path for the vllm backend",
            hint="e.g. --model Qwen/Qwen2.5-7B-Instruct",
        )
    # No free whitespace in the JSON grammar: greedy decoding under a schema can otherwise loop
    # on whitespace until max_tokens. --engine-arg settings (tensor_parallel_size,
    # max_model_len, gpu_memory_utilization, ...) go to the engine as given, and win.
    engine: dict[str, Any] = {
        "seed": config.seed,
        "enable_prefix_caching": True,
        "structured_outputs_config": {"disable_any_whitespace": True},
        **config.engine_args,
    }
    llm = vllm.LLM(model=config.model, **engine)
    schema = label_json_schema(taxonomy)
    return VLLMJudge(
        llm=llm,
        vllm_module=vllm,
        label_type=label_model(taxonomy),
        schema=schema,
        judge_id=judge_id(config, taxonomy.hash, prompt_hash(), schema),
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        max_batch=max(1, config.concurrency) * 16,
        model=config.model,
    )
