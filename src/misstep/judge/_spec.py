"""What a judge is asked, whichever way the request travels: a configuration and a taxonomy.

``JudgeSpec`` owns the judge id of a model judge, the label schema and model, the taxonomy's
order, the request body of one attempt and the run manifest; the backends (``openai``,
``vllm``), the batch files and Ray all take them from here, so one configuration asks the same
thing with the same id however it is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

from misstep.judge._config import JudgeConfig, judge_id, request_seed
from misstep.judge._exchange import (
    ModelSettings,
    RetryPolicy,
    Try,
    bounded_schema,
    chat_body,
    reask_messages,
    template_kwargs,
)
from misstep.judge._protocol import Judge, JudgeResult
from misstep.judge._schema import label_json_schema, label_model
from misstep.labels import (
    InputFile,
    LabelRun,
    LabelStatus,
    RunManifest,
    StoredLabel,
    record_of,
)

if TYPE_CHECKING:
    from misstep.prompts import RenderedPrompt
    from misstep.rollouts import Trace
    from misstep.taxonomy import Taxonomy

__all__ = ["Attempt", "JudgeSpec", "first_attempt", "next_attempt"]

LABEL_SCHEMA_NAME = "Label"


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

    def backend_settings(self) -> ModelSettings:
        """What a model backend (``openai``, ``vllm``) is built with from this specification:
        the label type and schema, the id, and the sampling of the first attempt."""
        config = self.config
        return {
            "label_type": self.label_type,
            "schema": self.schema,
            "judge_id": self.judge_id,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "reasoning_effort": config.reasoning_effort,
            "chat_template_kwargs": config.chat_template_kwargs,
        }

    def body(
        self,
        messages: list[dict[str, str]],
        n_steps: int,
        *,
        seed: int,
        temperature: float | None = None,
        n: int = 1,
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

    def attempt_body(
        self, trace: Trace, answer: str | None, attempt: Attempt, *, n: int = 1
    ) -> dict[str, Any]:
        """The body of ``attempt`` at a trace (a re-ask shows the broken reply and its
        problem), for a round that cannot retry inline (run-batch files, Ray's engine)."""
        rendered = self.render(trace, answer)
        messages = rendered.messages
        if attempt.kind == "reask":
            messages = reask_messages(messages, str(attempt.raw), str(attempt.problem))
        return self.body(
            messages,
            len(rendered.steps),
            seed=attempt.seed,
            temperature=attempt.temperature,
            n=n,
        )

    def round_record(
        self,
        trace: Trace,
        answer: str | None,
        results_of: Callable[[int], list[JudgeResult]],
        sent: Mapping[str, Any] | None,
        *,
        judge_id: str,
        inclusion_prob: float | None = None,
    ) -> StoredLabel:
        """The record of a reply that came back from such a round: the prompt rendered again
        for its steps, ``results_of(n_steps)`` (the reply through the one validator), the
        attempts from the retry state the request was sent with (``sent``: ``Attempt.as_dict``,
        None for a first attempt)."""
        rendered = self.render(trace, answer)
        steps = list(rendered.steps)
        results = results_of(len(steps))
        attempt = Attempt.from_dict(sent or {}, first_attempt(self.config, trace.trace_id))
        tries = attempt.tries(results[0].status.value)
        results[0].tries = tries
        return record_of(
            trace,
            results,
            steps,
            judge=judge_id,
            samples=self.config.samples,
            order=self.order,
            attempts=len(tries),
            trace_cut=rendered.trace_cut,
            inclusion_prob=inclusion_prob,
        )

    def template_kwargs(self) -> dict[str, Any] | None:
        """The chat template's arguments every request of this configuration carries (the same
        for every trace: they come from the configuration alone)."""
        return template_kwargs(self.config.reasoning_effort, self.config.chat_template_kwargs)

    def record_manifest(
        self,
        run: LabelRun,
        options: Mapping[str, Any],
        *,
        judge: Judge | None = None,
        server_model: str | None = None,
    ) -> None:
        """Write the manifest of ``run`` (its recorded ``options``; the server as ``judge``
        reports it, or ``server_model`` for a judge that is a file)."""
        run.record_manifest(
            self.manifest(
                run.traces_path,
                judge_id=run.judge_id,
                digest=run.digest,
                options=options,
                server_model=judge.server_model if judge is not None else server_model,
                server=judge.server_info if judge is not None else None,
            )
        )

    def manifest(
        self,
        traces_path: Path,
        *,
        judge_id: str,
        digest: str,
        options: Mapping[str, Any],
        server_model: str | None = None,
        server: Mapping[str, Any] | None = None,
    ) -> RunManifest:
        """The manifest of a run of this configuration over ``traces_path`` (its URLs without
        credentials; never a key)."""
        from misstep.prompts import prompt_hash

        judge_config = self.config.model_dump(mode="json")
        if "base_url" in judge_config:
            judge_config["base_url"] = _public_url(judge_config["base_url"])
        judge_config["extra_base_urls"] = [
            _public_url(url) for url in judge_config.get("extra_base_urls") or []
        ]
        taxonomy = self.taxonomy
        return RunManifest(
            inputs=[InputFile.of(traces_path)] if traces_path.exists() else [],
            input_sha256=digest,
            judge_config=judge_config,
            judge=judge_id,
            taxonomy_id=str(taxonomy.id),
            taxonomy_version=str(taxonomy.version),
            taxonomy_hash=taxonomy.hash,
            taxonomy_path=taxonomy.source,
            prompt_hash=prompt_hash(),
            seed=self.config.seed,
            server_model=server_model,
            versions={name: _pkg_version(name) for name in ("misstep", "openai", "vllm", "ray")},
            options=dict(options),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            server=dict(server or {}),
        )


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


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
