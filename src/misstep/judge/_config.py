"""How a judge is configured, its short id, and per-request seeds."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JudgeConfig", "judge_id", "request_seed"]


class JudgeConfig(BaseModel):
    """Everything that selects and tunes a judge backend; stored in the run manifest."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    backend: str = "rules"
    """Registered backend name: ``rules``, ``openai`` or ``vllm``."""
    model: str | None = None
    """Model name the backend asks for (served name for ``openai``, HF id for ``vllm``)."""
    base_url: str | None = None
    """Base URL of an OpenAI-compatible server, e.g. ``http://127.0.0.1:8000/v1``."""
    taxonomy_path: str | None = None
    """Taxonomy YAML file; None for the built-in ``math-v1``."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature of the judge model."""
    max_tokens: int = Field(default=1024, ge=1)
    """Longest reply, in tokens; a reply cut there is ``truncated``."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Timeout of one read from the server, in seconds (httpx's per-operation timeout)."""
    deadline_s: float = Field(default=300.0, gt=0)
    """Total time one request (and the server probe) may take, in seconds, however the server
    trickles its bytes; past it the request counts as timed out (and is retried)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries after a 5xx, a timeout or a connection error (bounded, with backoff)."""
    concurrency: int = Field(default=16, ge=1)
    """Requests in flight at once."""
    samples: int = Field(default=1, ge=1)
    """Judge samples per trace; more than one stores the majority and the agreement."""
    seed: int = 0
    """Global seed; per-request seeds derive from it, the trace id and the attempt."""
    max_trace_tokens: int = Field(default=6000, ge=1)
    """Token budget for the numbered steps in the prompt (estimated as characters / 4)."""


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def judge_id(config: JudgeConfig, taxonomy_hash: str, prompt_hash: str) -> str:
    """A short readable id of a judge configuration.

    Without a model: ``rules:tx<6 hex of taxonomy>:pr<4 hex of prompt>``. With a model:
    ``<backend>:<model basename>:<8 hex>`` where the hex covers backend, model, taxonomy hash,
    prompt hash, temperature, max_tokens, samples and seed.
    """
    if config.model is None:
        return f"{config.backend}:tx{taxonomy_hash[:6]}:pr{prompt_hash[:4]}"
    material = "|".join(
        [
            config.backend,
            config.model,
            taxonomy_hash,
            prompt_hash,
            repr(float(config.temperature)),
            str(config.max_tokens),
            str(config.samples),
            str(config.seed),
        ]
    )
    digest = hashlib.sha256(material.encode("utf-8")).hexdigest()[:8]
    name = _UNSAFE.sub("-", config.model.rstrip("/").rsplit("/", 1)[-1]) or "model"
    return f"{config.backend}:{name}:{digest}"


def request_seed(global_seed: int, trace_id: str, attempt: int) -> int:
    """Seed of one request: a pure function of (global seed, trace id, attempt), in [0, 2^31)."""
    material = f"{global_seed}\x1f{trace_id}\x1f{attempt}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(material).digest()[:4], "big") & 0x7FFFFFFF
