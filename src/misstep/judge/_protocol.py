"""The one extension point of the judge: a backend that turns a rendered prompt into a label."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from misstep.errors import OptionError
from misstep.rollouts import Trace
from misstep.verdict import LabelStatus

if TYPE_CHECKING:
    from misstep.judge._spec import JudgeSpec

__all__ = ["Judge", "JudgeRequest", "JudgeResult", "Try", "declared"]


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


@dataclass(frozen=True)
class Try:
    """One attempt of a request, as recorded on the stored label (``tries``)."""

    kind: str
    """``first``, ``cut-retry`` (the reply before was cut at the token limit), ``reask`` (the
    reply before broke the schema)."""
    seed: int
    temperature: float
    status: str
    """The status of this attempt's (first) reply."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "seed": self.seed,
            "temperature": self.temperature,
            "status": self.status,
        }


@dataclass
class JudgeResult:
    """What a backend returns for one request. ``label`` is set only when status is ``ok``."""

    status: LabelStatus
    label: BaseModel | None = None
    attempts: int = 1
    latency_ms: float = 0.0
    raw_reply: str | None = None
    reason: str | None = None
    problem: str | None = None
    """Of an ``unparseable`` reply: what was wrong with it, alone (``reason`` may add the
    attempts made); a re-ask names it."""
    tries: list[Try] | None = None
    """The attempts made for this request (``run_exchange``, or the rounds of files and Ray)."""
    usage: dict[str, int] | None = None
    """Prompt and completion tokens the server counted for this request."""
    reasoning: str | None = None
    """Reasoning text a reasoning parser split off the reply."""
    choices: list[JudgeResult] = field(default_factory=list)
    """The other samples of a request with ``n`` > 1, each with its own status and label."""
    server_down: str | None = None
    """Set when the failure says the server itself is unusable, not this trace: ``unreachable``
    (connection errors or timeouts after every retry) or ``auth`` (HTTP 401/403). The pipeline
    stops after a few such results in a row instead of failing every remaining trace."""

    @property
    def extra(self) -> dict[str, object]:
        """``tries`` (as dicts), ``usage`` and ``reasoning`` in one mapping, those that are set
        (a read-only view, as results carried them before they were typed)."""
        out: dict[str, object] = {}
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.tries is not None:
            out["tries"] = [t.as_dict() for t in self.tries]
        return out


@runtime_checkable
class Judge(Protocol):
    """A judge backend, registered by name so that a manifest can rebuild it.

    Three members are required (``judge_id``, ``judge``, ``aclose``); every other capability
    the pipeline reads is declared here with its default, as inspect_ai's ``ModelAPI`` does.
    A backend that subclasses ``Judge`` inherits the defaults and overrides what it can do; one
    that implements only the three required members is given the defaults by
    :func:`declared` (``create_judge`` applies it)."""

    supports_n: bool = False
    """One request can draw several samples (``JudgeRequest.n``); else one request each."""
    preferred_concurrency: int = 0
    """Requests to keep in flight so that a batching engine fills its batches (0: no wish)."""
    base_url: str | None = None
    """The server asked, named when it stops answering."""
    server_model: str | None = None
    """The model id the server reported, for the manifest."""
    server_info: Mapping[str, Any] = MappingProxyType({})
    """What the server said of itself (``GET /version``, ``max_model_len``), for the
    manifest."""
    spec: JudgeSpec | None = None
    """The one specification of this judge's run (``JudgeSpec``: the id, schema, sampling,
    concurrency and retry policy), made once from the configuration with the model resolved;
    None for a backend that does not say, whose run makes it from the configuration."""

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

    def too_long(self, trace: Trace) -> JudgeResult | None:
        """The result of a trace this judge will not read (over its size limit), decided before
        any per-character work; None: judge it."""
        return None

    async def embed(self, texts: list[str]) -> list[list[float]] | None:
        """Embeddings of ``texts`` from the judge's server (``/v1/embeddings``, for
        ``misstep discover``'s sample); None when it serves none."""
        return None

    def take_notices(self) -> list[str]:
        """Messages for the user since the last call (a server dropped), then forgotten."""
        return []

    def for_label(
        self, label_type: type[BaseModel], schema: dict[str, Any], judge_id: str
    ) -> Judge:
        """This judge asking for another structured output (``misstep select``'s choice)."""
        raise OptionError(
            option="backend",
            value=self.judge_id,
            allowed="a backend that can ask for another structured output (openai)",
        )


class _Declared(Judge):
    """A judge that implements only the three required members, with every default."""

    def __init__(self, inner: Judge) -> None:
        self._inner = inner

    @property
    def judge_id(self) -> str:
        return self._inner.judge_id

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        return await self._inner.judge(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def declared(judge: Judge) -> Judge:
    """``judge`` with every capability declared: itself when it subclasses :class:`Judge`,
    else wrapped so that the capabilities it does not implement take their defaults."""
    return judge if Judge in type(judge).__mro__ else _Declared(judge)
