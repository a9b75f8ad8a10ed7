"""What a judge is asked, whichever way the request travels: a configuration and a taxonomy.

``JudgeSpec`` owns the judge id of a configuration, the label schema and model, the taxonomy's
order, the request body of one attempt, the retry policy and how many requests to keep in
flight; the backends (``rules``, ``openai``, ``vllm``), the batch files and Ray all take them
from here, so one configuration asks the same thing with the same id however it is sent. A
backend built by ``create_judge`` holds the one spec of its run (``Judge.spec``), made once from
the configuration with the model resolved (the one the server serves, for ``openai``).

What comes back is a ``misstep.verdict.Verdict`` (``JudgeResult``): records and manifests are
made where runs are stored (``misstep.labels``), never here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

from misstep.judge._config import JudgeConfig, judge_id, request_seed
from misstep.judge._exchange import (
    RetryPolicy,
    Try,
    bounded_schema,
    chat_body,
    reask_messages,
    template_kwargs,
)
from misstep.judge._protocol import JudgeResult
from misstep.judge._schema import label_json_schema, label_model
from misstep.verdict import LabelStatus

if TYPE_CHECKING:
    from misstep.prompts import RenderedPrompt
    from misstep.rollouts import Trace
    from misstep.taxonomy import Taxonomy

__all__ = ["Attempt", "JudgeSpec", "Round", "first_attempt", "next_attempt"]

LABEL_SCHEMA_NAME = "Label"


class Round(NamedTuple):
    """The verdicts of a reply that came back from a round that cannot retry inline (run-batch
    files, Ray's engine), with what storage needs to make their record."""

    results: list[JudgeResult]
    """One per sample; the first carries the attempts (``tries``)."""
    steps: list[str]
    """The trace's steps, numbered from 0."""
    trace_cut: bool
    """The trace was shortened to fit the token budget."""

    @property
    def attempts(self) -> int:
        """Requests made for this trace over the rounds."""
        return len(self.results[0].tries or ())


@dataclass(frozen=True)
class JudgeSpec:
    """A judge configuration with its taxonomy (see the module docstring)."""

    config: JudgeConfig
    taxonomy: Taxonomy

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The label's JSON schema, before a trace's bounds (``bounded_schema``)."""
        return label_json_schema(self.taxonomy)

    @cached_property
    def label_type(self) -> type[BaseModel]:
        """The pydantic model a reply is validated against."""
        return label_model(self.taxonomy)

    @cached_property
    def order(self) -> dict[str, int]:
        """Error type -> its place in the taxonomy (ties of the sample majority)."""
        return {key: i for i, key in enumerate(self.taxonomy.keys)}

    @cached_property
    def judge_id(self) -> str:
        """The id of this configuration's labels (``judge_id``: what is asked, not the wire)."""
        from misstep.prompts import prompt_hash

        return judge_id(self.config, self.taxonomy.hash, prompt_hash(), self.schema)

    @cached_property
    def policy(self) -> RetryPolicy:
        """The one retry policy of this configuration's exchange: inline (``run_exchange``)
        and across the rounds of files and Ray (``next_attempt``)."""
        return RetryPolicy()

    def in_flight(self, preferred: int = 0) -> int:
        """Requests to keep in flight: the configuration's ``concurrency``, or more for a
        backend that batches (``Judge.preferred_concurrency``)."""
        return max(1, self.config.concurrency, preferred)

    def body(
        self,
        messages: list[dict[str, str]],
        n_steps: int,
        *,
        seed: int,
        n: int,
        temperature: float | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """The chat-completions body of one attempt at a trace with ``n_steps`` steps shown."""
        config = self.config
        return chat_body(
            model=str(model if model is not None else config.model),
            messages=messages,
            schema=bounded_schema(self.schema, n_steps, max_tokens=config.max_tokens),
            name=LABEL_SCHEMA_NAME,
            temperature=config.temperature if temperature is None else temperature,
            max_tokens=config.max_tokens,
            seed=seed,
            n=n,
            reasoning_effort=config.reasoning_effort,
            chat_template_kwargs=config.chat_template_kwargs,
        )

    def render(self, trace: Trace, answer: str | None) -> RenderedPrompt:
        """The judge prompt of a trace under this configuration's trace token budget."""
        from misstep.prompts import render_judge_prompt

        return render_judge_prompt(
            self.taxonomy, trace, answer, max_trace_tokens=self.config.max_trace_tokens
        )

    def first_attempt(self, trace_id: str) -> Attempt:
        """A trace's first attempt (``first_attempt``)."""
        return first_attempt(self.config, trace_id)

    def next_attempt(self, trace_id: str, previous: Mapping[str, Any] | None) -> Attempt | None:
        """The attempt to send for a trace whose current record of this judge is ``previous``,
        under this configuration's retry policy (``next_attempt``)."""
        return next_attempt(self.config, trace_id, previous, self.policy)

    def attempt_body(self, trace: Trace, answer: str | None, attempt: Attempt) -> dict[str, Any]:
        """The body of ``attempt`` at a trace (a re-ask shows the broken reply and its
        problem; the configuration's ``samples`` drawn in it), for a round that cannot retry
        inline (run-batch files, Ray's engine)."""
        rendered = self.render(trace, answer)
        messages = rendered.messages
        if attempt.kind == "reask":
            messages = reask_messages(messages, str(attempt.raw), str(attempt.problem))
        return self.body(
            messages,
            len(rendered.steps),
            seed=attempt.seed,
            temperature=attempt.temperature,
            n=self.config.samples,
        )

    def round_results(
        self,
        trace: Trace,
        answer: str | None,
        results_of: Callable[[int], list[JudgeResult]],
        sent: Mapping[str, Any] | None,
    ) -> Round:
        """The verdicts of a reply that came back from such a round: the prompt rendered again
        for its steps, ``results_of(n_steps)`` (the reply through the one validator), the
        attempts from the retry state the request was sent with (``sent``: ``Attempt.as_dict``,
        None for a first attempt) on the first."""
        rendered = self.render(trace, answer)
        steps = list(rendered.steps)
        results = results_of(len(steps))
        attempt = Attempt.from_dict(sent or {}, self.first_attempt(trace.trace_id))
        results[0].tries = attempt.tries(results[0].status.value)
        return Round(results, steps, rendered.trace_cut)

    def template_kwargs(self) -> dict[str, Any] | None:
        """The chat template's arguments every request of this configuration carries (the same
        for every trace: they come from the configuration alone)."""
        return template_kwargs(self.config.reasoning_effort, self.config.chat_template_kwargs)

    def recorded_config(self) -> dict[str, Any]:
        """The configuration as a run manifest records it (the model resolved): its URLs
        without credentials, never a key."""
        recorded = self.config.model_dump(mode="json")
        if "base_url" in recorded:
            recorded["base_url"] = _public_url(recorded["base_url"])
        recorded["extra_base_urls"] = [
            _public_url(url) for url in recorded.get("extra_base_urls") or []
        ]
        return recorded


def _public_url(url: str | None) -> str | None:
    # A URL may carry user:password@; the manifest must never hold a credential.
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass(frozen=True)
class Attempt:
    """The attempt to send for a trace in a round that cannot retry inline (run-batch files,
    Ray's engine): the retry state carried from the stored record of the round before."""

    kind: str
    """``first``, ``cut-retry`` or ``reask`` (``RetryPolicy.next_try``)."""
    seed: int
    temperature: float
    before: tuple[Try, ...] = ()
    """The attempts of the rounds before."""
    raw: str | None = None
    """Of a re-ask: the broken reply."""
    problem: str | None = None
    """Of a re-ask: what was wrong with it."""

    def tries(self, status: str) -> list[Try]:
        """Every attempt, this one with the status its reply got."""
        return [*self.before, Try(self.kind, self.seed, self.temperature, status)]

    def as_dict(self, *, reply: bool = True) -> dict[str, Any]:
        """As JSON (``reply``: with the broken reply and its problem of a re-ask)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "seed": self.seed,
            "temperature": self.temperature,
            "before": [t.as_dict() for t in self.before],
        }
        if reply and self.kind == "reask":
            out["raw"], out["problem"] = self.raw, self.problem
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], first: Attempt) -> Attempt:
        """The attempt ``as_dict`` wrote; ``first`` fills what an older file lacks."""
        return cls(
            kind=str(data.get("kind", first.kind)),
            seed=int(data.get("seed", first.seed)),
            temperature=float(data.get("temperature", first.temperature)),
            before=tuple(_try(t) for t in data.get("before", [])),
            raw=data.get("raw"),
            problem=data.get("problem"),
        )


def first_attempt(config: JudgeConfig, trace_id: str) -> Attempt:
    """A trace's first attempt."""
    return Attempt("first", request_seed(config.seed, trace_id, 0), config.temperature)


def next_attempt(
    config: JudgeConfig, trace_id: str, previous: Mapping[str, Any] | None, policy: RetryPolicy
) -> Attempt | None:
    """The attempt to send for a trace whose current record of this judge is ``previous`` (a
    cut or broken reply, or None: none yet); None when the retry policy keeps that reply."""
    first = first_attempt(config, trace_id)
    if previous is None:
        return first
    tries = previous.get("tries")
    before = (
        [_try(t) for t in tries]
        if isinstance(tries, list) and tries
        # an old record without its tries: one first attempt
        else [Try("first", first.seed, first.temperature, str(previous.get("status")))]
    )
    step = policy.next_try(before, LabelStatus(str(previous["status"])), config.temperature)
    if step is None:
        return None
    kind, seed, temperature = step
    raw = problem = None
    if kind == "reask":
        raw = str(previous.get("raw_reply") or "")
        problem = previous.get("problem")
        if problem is None:
            # A version-1 record stored no problem: its reason is the problem, with the
            # attempts made appended when the exchange gave up.
            problem = str(previous.get("reason") or "").split(" (after ", 1)[0]
    return Attempt(kind, seed, temperature, tuple(before), raw, problem)


def _try(data: Mapping[str, Any]) -> Try:
    return Try(
        str(data["kind"]), int(data["seed"]), float(data["temperature"]), str(data["status"])
    )
