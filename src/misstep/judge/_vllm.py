"""The ``vllm`` backend: vLLM's ``AsyncLLM`` in this process, requests submitted as they come.

Installed with the ``misstep[vllm]`` extra and imported lazily. Each trace's request goes to the
engine the moment the pipeline has it (continuous batching: the engine schedules what is in
flight, no lock-step batches waiting for their slowest member); the request is the same chat
body the server path sends, translated by the one adapter
(``misstep.judge._exchange.engine_request``), and its replies go through the same validator
and retry policy.

The engine runs with ``structured_outputs_config`` backend ``xgrammar`` and
``disable_any_whitespace``: vLLM accepts the whitespace setting only with a named backend, and
only at engine level (a per-request setting is ignored). On CPU, vLLM starts its engine core
with ``spawn``: a script that builds this judge needs an ``if __name__ == "__main__":`` guard
(the ``misstep`` console script has one).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from misstep.errors import OptionError
from misstep.judge._exchange import (
    EngineRequest,
    ModelJudge,
    Reply,
    Sent,
    TransportGaveUp,
    engine_request,
    sampling_params,
)
from misstep.judge._protocol import JudgeResult
from misstep.judge._registry import import_backend
from misstep.judge._spec import JudgeSpec
from misstep.verdict import LabelStatus

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig
    from misstep.taxonomy import Taxonomy

__all__ = [
    "CPU_MAX_BATCHED_TOKENS",
    "STRUCTURED_OUTPUTS_CONFIG",
    "VLLMJudge",
    "create_vllm_judge",
    "engine_settings",
]

STRUCTURED_OUTPUTS_CONFIG: dict[str, Any] = {"backend": "xgrammar", "disable_any_whitespace": True}
"""The engine's structured-output settings: no free whitespace in the JSON grammar (greedy
decoding could loop on it until ``max_tokens``), which vLLM accepts only with the backend
named. The same settings as the documented server command
``--structured-outputs-config.backend xgrammar
--structured-outputs-config.disable_any_whitespace true``."""


CPU_MAX_BATCHED_TOKENS = 16384
"""The engine's token budget per step on a CPU build, unless ``--engine-arg`` sets one."""
ENGINE_BATCHING = 16
"""Requests in flight per unit of ``concurrency``: the engine batches what is in flight."""


def engine_settings(config: JudgeConfig) -> dict[str, Any]:
    """The engine's keyword arguments: the seed, prefix caching, the structured-output
    settings (``STRUCTURED_OUTPUTS_CONFIG``, merged under a user's own
    ``structured_outputs_config``), then the ``--engine-arg`` settings, which win."""
    user = dict(config.engine_args)
    structured = dict(STRUCTURED_OUTPUTS_CONFIG)
    given = user.pop("structured_outputs_config", None)
    if isinstance(given, dict):
        structured.update(given)
    elif given is not None:
        raise OptionError(
            option="engine_args",
            value=f"structured_outputs_config={given!r}",
            allowed='a JSON object, e.g. structured_outputs_config={"backend":"guidance"}',
        )
    return {"seed": config.seed, "enable_prefix_caching": True, **user,
            "structured_outputs_config": structured}  # fmt: skip


class VLLMJudge(ModelJudge):
    """Labels traces with an in-process ``AsyncLLM``; every request is submitted at once."""

    def __init__(self, spec: JudgeSpec, *, engine: Any, vllm_module: Any) -> None:
        """A judge of ``spec``'s configuration (its model) on a started ``engine``."""
        super().__init__(spec)
        self._engine = engine
        self._vllm = vllm_module
        self.server_model = self.model
        self._ids = itertools.count()
        self.supports_n = True
        """One request draws all the samples of a trace (``n``)."""
        self.preferred_concurrency = max(1, spec.config.concurrency) * ENGINE_BATCHING
        """Requests the pipeline should keep in flight so that the engine's batches fill."""

    async def aclose(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.shutdown()
            # AsyncLLM.__del__ shuts down again when the object is collected, which at
            # interpreter exit finds vLLM's module globals gone (a TypeError printed after a
            # successful run): once is enough.
            engine.shutdown = _already_shut_down

    async def _attempt(self, body: dict[str, Any]) -> Sent:
        try:
            return await self._generate(engine_request(body))
        except Exception as exc:  # the engine failed this request: a failed record
            raise TransportGaveUp(
                JudgeResult(
                    status=LabelStatus.FAILED,
                    reason=f"vllm engine error: {type(exc).__name__}: {exc}"[:500],
                )
            ) from None

    async def _generate(self, request: EngineRequest) -> Sent:
        from vllm.sampling_params import RequestOutputKind

        prompt = await self._prompt(request)
        params = sampling_params(self._vllm, request, output_kind=RequestOutputKind.FINAL_ONLY)
        final = None
        async for output in self._engine.generate(prompt, params, f"misstep-{next(self._ids)}"):
            final = output
        if final is None:
            return Sent([])
        replies = [Reply(c.text or "", c.finish_reason) for c in final.outputs]
        usage = {
            "prompt_tokens": len(final.prompt_token_ids or ()),
            "completion_tokens": sum(len(c.token_ids or ()) for c in final.outputs),
        }
        return Sent(replies, usage)

    async def _prompt(self, request: EngineRequest) -> Any:
        """The token ids of the chat prompt, rendered by the model's own chat template (as the
        server renders it), with the template arguments of the request."""
        tokenizer = await _tokenizer(self._engine)
        ids = tokenizer.apply_chat_template(
            request.messages,
            tokenize=True,
            add_generation_prompt=True,
            **(request.chat_template_kwargs or {}),
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):  # a BatchEncoding
            ids = ids["input_ids"]
        return {"prompt_token_ids": list(ids)}


def _already_shut_down(timeout: float | None = None) -> None:
    del timeout


async def _tokenizer(engine: Any) -> Any:
    getter = getattr(engine, "get_tokenizer", None)
    if getter is not None:
        tok = getter()
        if hasattr(tok, "__await__"):
            tok = await tok
        return tok
    return engine.tokenizer


def create_vllm_judge(config: JudgeConfig, taxonomy: Taxonomy) -> VLLMJudge:
    """Start an ``AsyncLLM`` engine on the model (registry factory); needs ``misstep[vllm]``."""
    vllm = import_backend("vllm", "vllm")
    model = config.require_model("a Hugging Face model id or local path for the vllm backend")
    from vllm.config import StructuredOutputsConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    settings = engine_settings(config)
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        # vLLM 0.32's CPU generators have no offset: a seeded, sampled request (the retry of a
        # cut reply) whose prompt is prefilled in chunks crashes the engine (`set_offset` in
        # gpu_model_runner). A token budget above any judge prompt keeps prefills whole.
        settings.setdefault("max_num_batched_tokens", CPU_MAX_BATCHED_TOKENS)
    settings["structured_outputs_config"] = StructuredOutputsConfig(
        **settings["structured_outputs_config"]
    )
    engine = AsyncLLM.from_engine_args(AsyncEngineArgs(model=model, **settings))
    return VLLMJudge(JudgeSpec(config, taxonomy), engine=engine, vllm_module=vllm)
