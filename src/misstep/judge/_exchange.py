"""One judge exchange: the request built once per trace, the one reply validator, the one retry
policy. Every transport (the server client, the offline engine, run-batch files, Ray, select)
turns the chat-completions body built here into its wire format and hands the raw replies back
to ``parse_reply``; what a transport may not do is decide a status itself.

- ``chat_body``: the chat-completions body of one attempt (every sampling field explicit, the
  per-trace schema as ``response_format``). The live client posts it, ``export-requests`` writes
  it, and ``engine_request`` translates it for the offline engine and Ray's processor.
- ``bounded_schema``: the label schema with this trace's bounds (``first_error_step`` within
  the steps shown; xgrammar enforces integer minimum/maximum per request).
- ``parse_reply``: JSON, schema, step range -> ok / truncated / unparseable.
- ``RetryPolicy``: a reply cut at the token limit is asked again once with another seed (and a
  temperature of at least ``RETRY_TEMPERATURE``); a reply that breaks the schema is re-asked
  once with the problem named; each attempt is recorded (``Try``).
- ``run_exchange``: the loop that applies the policy over a transport's ``send``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from misstep.judge._config import NEUTRAL_SAMPLING, RETRY_TEMPERATURE
from misstep.judge._protocol import Judge, JudgeRequest, JudgeResult, Try
from misstep.verdict import LabelStatus

if TYPE_CHECKING:
    from misstep.judge._spec import JudgeSpec

__all__ = [
    "EngineRequest",
    "ModelJudge",
    "Reply",
    "RetryPolicy",
    "Sent",
    "TransportGaveUp",
    "Try",
    "bounded_schema",
    "chat_body",
    "engine_request",
    "parse_completion",
    "parse_reply",
    "reask_messages",
    "replies_of",
    "run_exchange",
    "template_kwargs",
]


@dataclass(frozen=True)
class Reply:
    """One generated choice as a transport received it."""

    text: str
    """The content (the JSON the grammar produced)."""
    finish: str | None
    """``stop``, ``length`` (cut at the token limit), ... as the engine said."""
    reasoning: str | None = None
    """Reasoning text a reasoning parser split off, if any."""


@dataclass
class Sent:
    """What one attempt brought back: its choices and the token counts."""

    replies: list[Reply]
    usage: dict[str, int] = field(default_factory=dict)
    requests: int = 1
    """Requests the transport made for this attempt (its own retries after a 5xx or a
    timeout included)."""


class TransportGaveUp(Exception):
    """The transport could not get an answer (after its own retries): ``result`` is the
    ``failed`` result to return, ``requests`` how many it made."""

    def __init__(self, result: JudgeResult, requests: int = 1) -> None:
        super().__init__(result.reason)
        self.result = result
        self.requests = requests


FIXED_REPLY_TOKENS = 64
"""Tokens of a label reply outside its two free-text strings: the keys, the punctuation, the
step, the error type and the confidence (30 to 35 with the built-in taxonomy in SmolLM2's
tokenizer; the margin is for other tokenizers and longer type names)."""
MIN_STRING_CHARS = 20
"""The shortest bound a free-text field is given when the token budget is small."""


def bounded_schema(
    schema: dict[str, Any], n_steps: int | None, *, max_tokens: int | None = None
) -> dict[str, Any]:
    """``schema`` with this trace's bounds: ``first_error_step`` between 0 and the last step
    shown (when the schema has that field and the trace has steps). The string fields keep the
    ``maxLength`` the label model gives them (xgrammar turns a bounded string into at most that
    many characters other than quote, backslash, CR and LF, so a bounded field also cannot
    loop past its bound), shrunk in proportion when ``max_tokens`` could not hold them: a token
    holds at least one character of such a string, so a reply then always ends before the token
    limit, and a model looping inside the quote or the explanation stops at its bound instead
    of being cut and asked again."""
    out = copy.deepcopy(schema)
    properties = out.get("properties", {})
    step = properties.get("first_error_step")
    if isinstance(step, dict) and n_steps is not None and n_steps > 0:
        step["minimum"] = 0
        step["maximum"] = n_steps - 1
    strings = [
        field
        for field in properties.values()
        if isinstance(field, dict) and isinstance(field.get("maxLength"), int)
    ]
    total = sum(int(field["maxLength"]) for field in strings)
    room = (max_tokens or 0) - FIXED_REPLY_TOKENS
    if max_tokens is not None and strings and total > room:
        for field in strings:
            share = int(field["maxLength"]) * max(room, 0) // total
            field["maxLength"] = max(MIN_STRING_CHARS, min(int(field["maxLength"]), share))
    return out


def chat_body(
    *,
    model: str,
    messages: list[dict[str, str]],
    schema: dict[str, Any],
    name: str,
    temperature: float,
    max_tokens: int,
    seed: int,
    n: int = 1,
    reasoning_effort: str | None = None,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The chat-completions body of one attempt: every sampling field explicit (vLLM fills an
    unset one from the model's ``generation_config.json``), the schema as ``response_format``
    (``structured_outputs`` alongside it would be overridden by it, so it is never sent)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": temperature,
        **NEUTRAL_SAMPLING,
        "max_completion_tokens": max_tokens,
        "seed": seed,
        "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}},
    }
    if n > 1:
        body["n"] = n
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    if chat_template_kwargs is not None:
        body["chat_template_kwargs"] = chat_template_kwargs
    return body


_SAMPLING_FIELDS = (*NEUTRAL_SAMPLING, "temperature", "seed")


@dataclass(frozen=True)
class EngineRequest:
    """A chat body translated for an in-process vLLM engine (``AsyncLLM``, ``LLM`` or Ray's
    processor): nothing of the body is dropped."""

    messages: list[dict[str, str]]
    sampling: dict[str, Any]
    """``SamplingParams`` keyword arguments; ``structured_outputs`` as a dict
    (``{"json": schema}``), which Ray converts itself and ``sampling_params`` wraps."""
    chat_template_kwargs: dict[str, Any] | None
    """Arguments of the chat template, ``reasoning_effort`` (and ``enable_thinking``) among
    them when asked, as vLLM's server hands them to the template."""


def engine_request(body: dict[str, Any]) -> EngineRequest:
    """The one adapter from a chat body (``chat_body``) to an engine's request: every sampling
    field, ``n``, ``seed``, ``max_tokens``, the schema as ``structured_outputs``, and
    ``reasoning_effort`` / ``chat_template_kwargs`` for the chat template."""
    sampling: dict[str, Any] = {key: body[key] for key in _SAMPLING_FIELDS if key in body}
    sampling["max_tokens"] = body["max_completion_tokens"]
    sampling["n"] = int(body.get("n", 1))
    sampling["structured_outputs"] = {"json": body["response_format"]["json_schema"]["schema"]}
    return EngineRequest(
        messages=list(body["messages"]),
        sampling=sampling,
        chat_template_kwargs=template_kwargs(
            body.get("reasoning_effort"), body.get("chat_template_kwargs")
        ),
    )


def template_kwargs(
    reasoning_effort: str | None, chat_template_kwargs: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The chat template's arguments of a request, as vLLM's server builds them
    (``ChatCompletionRequest.build_chat_params``): the user's, the effort, and thinking
    switched on unless the user said."""
    kwargs = dict(chat_template_kwargs or {})
    if reasoning_effort is not None:
        kwargs["reasoning_effort"] = reasoning_effort
        kwargs.setdefault("enable_thinking", reasoning_effort != "none")
    return kwargs or None


def sampling_params(vllm: Any, request: EngineRequest, **more: Any) -> Any:
    """``vllm.SamplingParams`` of an engine request (``more``: e.g. ``output_kind``)."""
    from vllm.sampling_params import StructuredOutputsParams

    kwargs = dict(request.sampling)
    kwargs["structured_outputs"] = StructuredOutputsParams(**kwargs["structured_outputs"])
    return vllm.SamplingParams(**kwargs, **more)


def parse_reply(
    reply: Reply, label_type: type[BaseModel], *, n_steps: int | None, max_tokens: int
) -> JudgeResult:
    """The only validator of a judge reply: cut at the token limit -> ``truncated``; not JSON
    of the schema, or a ``first_error_step`` outside the steps shown -> ``unparseable``;
    else ``ok``. The raw reply is kept on every non-ok result."""
    reasoning = reply.reasoning or None
    if reply.finish == "length":
        return JudgeResult(
            status=LabelStatus.TRUNCATED,
            raw_reply=reply.text,
            reason=f"reply cut at max_tokens={max_tokens}",
            reasoning=reasoning,
        )
    try:
        label = label_type.model_validate_json(reply.text)
    except ValidationError as exc:
        problem = _summarise(exc)
        return JudgeResult(
            status=LabelStatus.UNPARSEABLE,
            raw_reply=reply.text,
            reason=problem,
            problem=problem,
            reasoning=reasoning,
        )
    step = getattr(label, "first_error_step", None)
    if n_steps is not None and isinstance(step, int) and not 0 <= step < n_steps:
        problem = f"first_error_step {step} is outside the {n_steps} steps shown"
        return JudgeResult(
            status=LabelStatus.UNPARSEABLE,
            raw_reply=reply.text,
            reason=problem,
            problem=problem,
            reasoning=reasoning,
        )
    return JudgeResult(status=LabelStatus.OK, label=label, reasoning=reasoning)


def replies_of(completion: Any) -> tuple[list[Reply], dict[str, int]]:
    """The choices and token usage of a chat-completion JSON object; ValueError when it is not
    one."""
    try:
        replies = [_reply(c) for c in completion["choices"]]
        usage = completion.get("usage") or {}
    except (TypeError, KeyError, IndexError, AttributeError):
        raise ValueError("not a chat completion") from None
    counts = {
        key: value
        for key in ("prompt_tokens", "completion_tokens")
        if isinstance(value := usage.get(key), int)
    }
    return replies, counts


def parse_completion(
    completion: Any, label_type: type[BaseModel], *, n_steps: int | None, max_tokens: int
) -> list[JudgeResult]:
    """One result per choice of a chat-completion object (``parse_reply`` each), the first
    carrying the usage; one ``failed`` result when it is not a chat completion."""
    try:
        replies, usage = replies_of(completion)
    except ValueError:
        return [
            JudgeResult(
                status=LabelStatus.FAILED,
                raw_reply=str(completion)[:2000],
                reason="the reply is not a chat completion",
            )
        ]
    if not replies:
        return [JudgeResult(status=LabelStatus.FAILED, reason="the reply has no choice")]
    results = [parse_reply(r, label_type, n_steps=n_steps, max_tokens=max_tokens) for r in replies]
    results[0].usage = usage
    return results


def _reply(choice: dict[str, Any]) -> Reply:
    # vLLM's reasoning parsers return the reasoning in ``reasoning`` (``reasoning_content``
    # before vLLM 0.11).
    message = choice["message"]
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    return Reply(message.get("content") or "", choice.get("finish_reason"), reasoning or None)


def reask_messages(messages: list[dict[str, str]], raw: str, problem: str) -> list[dict[str, str]]:
    """The conversation of a re-ask: the broken reply, then what was wrong with it."""
    return [
        *messages,
        {"role": "assistant", "content": raw},
        {
            "role": "user",
            "content": "Your reply is not a JSON object that fits the required schema: "
            f"{problem}. Answer again with the JSON object only.",
        },
    ]


@dataclass(frozen=True)
class RetryPolicy:
    """What to do after a reply: ``next_try`` returns the next attempt's kind, seed and
    temperature, or None to keep the result."""

    cut_retries: int = 1
    """Attempts after a reply cut at the token limit."""
    reasks: int = 1
    """Re-asks after a reply that breaks the schema."""
    retry_temperature: float = RETRY_TEMPERATURE

    def next_try(
        self, tries: list[Try], status: LabelStatus, temperature: float
    ) -> tuple[str, int, float] | None:
        """After ``tries`` (the last one ended ``status``): ``(kind, seed, temperature)`` of
        the next attempt, or None. A cut reply is retried with another seed and a temperature
        of at least ``retry_temperature`` (the same greedy request would loop again)."""
        last = tries[-1]
        if status is LabelStatus.TRUNCATED:
            if sum(t.kind == "cut-retry" for t in tries) >= self.cut_retries:
                return None
            return (
                "cut-retry",
                (last.seed + 1_000_003) & 0x7FFFFFFF,
                max(temperature, self.retry_temperature),
            )
        if status is LabelStatus.UNPARSEABLE:
            if sum(t.kind == "reask" for t in tries) >= self.reasks:
                return None
            return "reask", last.seed, last.temperature
        return None


Send = Callable[[list[dict[str, str]], int, float, int], Awaitable[Sent]]
"""A transport's one attempt: (messages, seed, temperature, n) -> its replies."""


async def run_exchange(
    request: JudgeRequest,
    send: Send,
    *,
    label_type: type[BaseModel],
    temperature: float,
    max_tokens: int,
    policy: RetryPolicy | None = None,
) -> JudgeResult:
    """Label one trace over ``send``, applying ``policy``; never raises for a bad reply.

    With ``n`` > 1 the samples come in one attempt and are validated one by one (no retry:
    each sample is its own evidence). The result's ``tries`` lists the attempts, ``usage``
    sums the token counts."""
    policy = policy or RetryPolicy()
    start = time.perf_counter()
    messages = list(request.messages)
    n_steps = len(request.steps) if request.steps else None
    tries: list[Try] = []
    usage: dict[str, int] = {}
    kind, seed, temp = "first", request.seed, temperature
    requests = 0

    def finish(result: JudgeResult) -> JudgeResult:
        result.attempts = max(1, requests)
        result.latency_ms = (time.perf_counter() - start) * 1000.0
        result.usage = dict(usage)
        result.tries = list(tries)
        return result

    while True:
        try:
            sent = await send(messages, seed, temp, request.n)
        except TransportGaveUp as gave_up:
            requests += gave_up.requests
            tries.append(Try(kind, seed, temp, LabelStatus.FAILED.value))
            return finish(gave_up.result)
        requests += sent.requests
        for key, value in sent.usage.items():
            usage[key] = usage.get(key, 0) + value
        if not sent.replies:
            tries.append(Try(kind, seed, temp, LabelStatus.FAILED.value))
            return finish(
                JudgeResult(status=LabelStatus.FAILED, reason="the server answered no choice")
            )
        results = [
            parse_reply(r, label_type, n_steps=n_steps, max_tokens=max_tokens) for r in sent.replies
        ]
        first = results[0]
        tries.append(Try(kind, seed, temp, first.status.value))
        if request.n > 1:
            first.choices = results[1:]
            return finish(first)
        step = policy.next_try(tries, first.status, temperature)
        if step is None:
            if first.status is not LabelStatus.OK and len(tries) > 1:
                first.reason = (
                    f"{first.reason} (after {len(tries)} attempts: "
                    + ", ".join(f"{t.kind} {t.status}" for t in tries)
                    + ")"
                )
            if first.status is LabelStatus.OK:
                first.raw_reply = None
            return finish(first)
        kind, seed, temp = step
        if kind == "reask":
            messages = reask_messages(messages, first.raw_reply or "", first.problem or "")


class ModelJudge(Judge):
    """A backend that asks a model through the one exchange: it builds each attempt's chat body
    (``chat_body``) and runs ``run_exchange`` under its spec's retry policy; a subclass sends
    one attempt over its wire (``_attempt``: the server client, the offline engine)."""

    def __init__(self, spec: JudgeSpec) -> None:
        config = spec.config
        self.spec = spec
        """The run's one specification (the id, schema, sampling, retry policy)."""
        self.model = str(config.model)
        self._label_type = spec.label_type
        self._schema = spec.schema
        self._judge_id = spec.judge_id
        self._temperature = config.temperature
        self._max_tokens = config.max_tokens
        self._reasoning_effort = config.reasoning_effort
        self._chat_template_kwargs = config.chat_template_kwargs
        self._policy = spec.policy

    @property
    def judge_id(self) -> str:
        return self._judge_id

    async def _attempt(self, body: dict[str, Any]) -> Sent:
        """One attempt over the wire (raises ``TransportGaveUp`` when there is no answer)."""
        raise NotImplementedError

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        """Label one trace; never raises for a bad reply or an unreachable server (the retry
        policy of this module)."""
        schema = request.schema or self._schema

        async def send(
            messages: list[dict[str, str]], seed: int, temperature: float, n: int
        ) -> Sent:
            body = chat_body(
                messages=messages, schema=schema, temperature=temperature, seed=seed, n=n,
                model=self.model, name=self._label_type.__name__, max_tokens=self._max_tokens,
                reasoning_effort=self._reasoning_effort,
                chat_template_kwargs=self._chat_template_kwargs,
            )  # fmt: skip
            return await self._attempt(body)

        return await run_exchange(
            request,
            send,
            label_type=self._label_type,
            temperature=self._temperature,
            max_tokens=self._max_tokens,
            policy=self._policy,
        )


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "reply"
        parts.append(f"{where}: {err.get('msg', '')}")
    return "; ".join(parts)
