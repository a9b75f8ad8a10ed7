"""How a judge is configured, its short id, and per-request seeds."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from misstep.defaults import JudgeDefaults as D
from misstep.errors import OptionError

__all__ = ["NEUTRAL_SAMPLING", "RETRY_TEMPERATURE", "JudgeConfig", "judge_id", "request_seed"]

NEUTRAL_SAMPLING: dict[str, float | int] = {
    "top_p": 1.0,
    "top_k": -1,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
"""Sent on every request: a field left unset is filled by vLLM from the model's
``generation_config.json`` (a repetition penalty of 1.05, say, which works against quoting the
trace verbatim), so the same model would label differently on the server and offline."""
RETRY_TEMPERATURE = 0.3
"""Temperature of the one retry of a reply cut at the token limit (when the run's own is
lower): greedy decoding under a JSON schema can loop on whitespace, and the same greedy request
would loop again."""


class JudgeConfig(BaseModel):
    """Everything that selects and tunes a judge backend; stored in the run manifest."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    backend: str = D.backend
    """Registered backend name: ``rules``, ``openai`` or ``vllm``."""
    model: str | None = None
    """Model name the backend asks for (served name for ``openai``, HF id for ``vllm``)."""
    base_url: str | None = None
    """Base URL of an OpenAI-compatible server, e.g. ``http://127.0.0.1:8000/v1``."""
    extra_base_urls: list[str] = Field(default_factory=list)
    """More servers of the same model: requests go to the least busy; one that keeps failing
    is dropped and its requests go to the others."""
    taxonomy_path: str | None = None
    """Taxonomy YAML file; None for the built-in ``math-v1``."""
    temperature: float = Field(default=D.temperature, ge=0.0)
    """Sampling temperature of the judge model."""
    max_tokens: int = Field(default=D.max_tokens, ge=1)
    """Longest reply, in tokens; a reply cut there is ``truncated``."""
    timeout_s: float = Field(default=D.timeout_s, gt=0)
    """Timeout of one read from the server, in seconds (httpx's per-operation timeout)."""
    deadline_s: float = Field(default=D.deadline_s, gt=0)
    """Total time one request (and the server probe) may take, in seconds, however the server
    trickles its bytes; past it the request counts as timed out (and is retried)."""
    max_retries: int = Field(default=D.max_retries, ge=0)
    """Retries after a 5xx, a timeout or a connection error (bounded, with backoff)."""
    concurrency: int = Field(default=D.concurrency, ge=1)
    """Requests in flight at once."""
    samples: int = Field(default=D.samples, ge=1)
    """Judge samples per trace; more than one stores the majority and the agreement, and
    needs a ``temperature`` above 0 (greedy samples are copies of one another)."""
    seed: int = D.seed
    """Global seed; per-request seeds derive from it, the trace id and the attempt."""
    max_trace_tokens: int = Field(default=D.max_trace_tokens, ge=1)
    """Token budget for the numbered steps in the prompt (estimated as characters / 4)."""
    reasoning_effort: str | None = None
    """``reasoning_effort`` sent to reasoning models (``low``, ``medium``, ``high``), or None."""
    chat_template_kwargs: dict[str, Any] | None = None
    """Arguments for the model's chat template (``{"enable_thinking": false}``), or None."""
    engine_args: dict[str, Any] = Field(default_factory=dict)
    """Engine settings of the offline ``vllm`` backend (``tensor_parallel_size``,
    ``max_model_len``, ``gpu_memory_utilization``...), passed to ``vllm.LLM``."""
    batch_invariant: bool = False
    """The user says the server runs with ``VLLM_BATCH_INVARIANT=1`` (recorded, not checked:
    the server does not report it)."""

    @model_validator(mode="after")
    def _samples_need_a_temperature(self) -> JudgeConfig:
        # Raised as is (not a ValueError): the OptionError names the field, as everywhere.
        if self.samples > 1 and self.temperature <= 0:
            raise OptionError(
                option="samples",
                value=self.samples,
                allowed="1 at temperature 0: greedy samples are copies of one another, so their "
                "agreement would always be 1",
                hint="set a temperature above 0 to draw several samples, e.g. `temperature=0.7`",
            )
        return self

    def require_model(self, what: str) -> str:
        """The model, or OptionError saying what ``model`` must name (``what``)."""
        if not self.model:
            raise OptionError(
                option="model",
                value=None,
                allowed=what,
                hint="name one, e.g. `model=Qwen/Qwen2.5-7B-Instruct`",
            )
        return self.model

    def sampling(self) -> dict[str, Any]:
        """Every sampling field that changes a label: the neutral ones, and the run's own."""
        return {
            **NEUTRAL_SAMPLING,
            "temperature": float(self.temperature),
            "max_tokens": self.max_tokens,
            "n": self.samples,
            "seed": self.seed,
            "reasoning_effort": self.reasoning_effort,
            "chat_template_kwargs": self.chat_template_kwargs,
        }


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_PROBES = (
    "We add 3 and 4.\n\n3 + 4 = 8\n\nSo the answer is $\\boxed{8}$.",
    "Step 1: Let x = 2. Step 2: Then 2x = 5.\nStep 3: The answer is 5.",
    "First, e.g. 1.5 + 2 = 3.5. Next, compute $$\\frac{1}{2} + 1.\n= 1.5$$ and "
    "\\(a = b\\). Thus x = 3! Is it? Yes.\n2. Then we stop.\n= 7\n" * 12,
    "<think>Let me think. 2 * 3 = 6.\n\nHmm, check: 6 / 2 = 3.</think>\n\nThe answer is 6.",
    "",
)
"""Responses in the forms the splitter handles (paragraphs, steps, one long paragraph with
formulas, abbreviations and enumerators, a think block, nothing): their steps and prompts
fingerprint the segmentation."""


@functools.cache
def segmentation_hash() -> str:
    """Fingerprint of how a trace becomes the numbered steps and the prompt around them: the
    steps ``misstep.prompts`` splits from ``_PROBES`` and the messages it renders for them,
    once with the default trace budget and once with a budget that cuts steps. A change in
    step splitting, numbering, fencing or budgeting changes what ``first_error_step`` indexes,
    so it changes the judge id; a refactor with the same output does not."""
    from misstep.prompts import render_judge_prompt, split_steps
    from misstep.rollouts import Trace
    from misstep.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(None)
    material: list[object] = []
    for i, text in enumerate(_PROBES):
        trace = Trace(problem_id=f"probe{i}", problem="Compute it.", response=text)
        material.append(split_steps(trace))
        for budget in (D.max_trace_tokens, 60):
            rendered = render_judge_prompt(taxonomy, trace, "8", max_trace_tokens=budget)
            material.append([rendered.messages, rendered.steps, list(rendered.shown_steps)])
    return hashlib.sha256(json.dumps(material).encode("utf-8", "surrogatepass")).hexdigest()


def judge_id(
    config: JudgeConfig,
    taxonomy_hash: str,
    prompt_hash: str,
    schema: dict[str, Any] | None = None,
    *,
    kind: str = "llm",
) -> str:
    """A short readable id of a judge configuration: what is asked, never the wire.

    Without a model: ``rules:tx<6 hex of taxonomy>:pr<4 hex of prompt>``. With a model:
    ``<kind>:<model basename>:<8 hex>`` (``kind`` is ``llm`` for labels, ``select`` for
    ``misstep select``) where the hex covers everything that changes a label: the model, the
    taxonomy hash, the prompt hash, the step segmentation and rendering
    (``segmentation_hash``, a fingerprint of their output on fixed probes), the JSON
    schema (before its per-trace bounds, which follow from the steps), every sampling field
    (``JudgeConfig.sampling``), the trace token budget and the engine settings. Not the
    backend: the same request sent live, offline, in a run-batch file or on Ray is one judge,
    and its labels resume each other.
    """
    if config.model is None:
        return f"{config.backend}:tx{taxonomy_hash[:6]}:pr{prompt_hash[:4]}"
    material = json.dumps(
        {
            "model": config.model,
            "taxonomy": taxonomy_hash,
            "prompt": prompt_hash,
            "segmentation": segmentation_hash(),
            "schema": schema,
            "sampling": config.sampling(),
            "max_trace_tokens": config.max_trace_tokens,
            "engine_args": config.engine_args,
        },
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(material.encode("utf-8")).hexdigest()[:8]
    name = _UNSAFE.sub("-", config.model.rstrip("/").rsplit("/", 1)[-1]) or "model"
    return f"{kind}:{name}:{digest}"


def request_seed(global_seed: int, trace_id: str, attempt: int) -> int:
    """Seed of one request: a pure function of (global seed, trace id, attempt), in [0, 2^31)."""
    material = f"{global_seed}\x1f{trace_id}\x1f{attempt}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(material).digest()[:4], "big") & 0x7FFFFFFF
