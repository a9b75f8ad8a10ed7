"""The one extension point of the judge: a backend that turns a rendered prompt into a label."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from misstep.labels import LabelStatus
from misstep.rollouts import Trace

__all__ = ["Judge", "JudgeRequest", "JudgeResult"]


@dataclass(frozen=True)
class JudgeRequest:
    """Everything a backend may use to label one trace."""

    trace: Trace
    """The trace itself (untrusted text)."""
    final_answer: str | None
    """The trace's extracted final answer."""
    steps: list[str]
    """The steps exactly as shown to the judge, numbered from 0."""
    messages: list[dict[str, str]]
    """The rendered chat messages (system + user); the trace is fenced as data at the end."""
    seed: int
    """Per-request seed: a pure function of (global seed, trace_id, attempt/sample)."""
    trace_cut: bool = False
    """The trace was shortened to fit the token budget."""
    n: int = 1
    """Samples to draw in this one request (``--samples``; the prefill is shared). A backend
    that draws several returns the others in ``JudgeResult.choices``."""
    schema: dict[str, Any] | None = None
    """The JSON schema sent with this request, with this trace's bounds
    (``misstep.judge._exchange.bounded_schema``); None: the backend's own."""


@dataclass
class JudgeResult:
    """What a backend returns for one request. ``label`` is set only when status is ``ok``."""

    status: LabelStatus
    label: BaseModel | None = None
    attempts: int = 1
    latency_ms: float = 0.0
    raw_reply: str | None = None
    reason: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    choices: list[JudgeResult] = field(default_factory=list)
    """The other samples of a request with ``n`` > 1, each with its own status and label."""
    server_down: str | None = None
    """Set when the failure says the server itself is unusable, not this trace: ``unreachable``
    (connection errors or timeouts after every retry) or ``auth`` (HTTP 401/403). The pipeline
    stops after a few such results in a row instead of failing every remaining trace."""


@runtime_checkable
class Judge(Protocol):
    """A judge backend, registered by name so that a manifest can rebuild it."""

    @property
    def judge_id(self) -> str:
        """Short id of this configuration (backend, model, taxonomy/prompt hashes, sampling)."""
        ...

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        """Label one trace. Never raises for a bad reply: returns a non-ok status instead."""
        ...

    async def aclose(self) -> None:
        """Release connections and engines."""
        ...
