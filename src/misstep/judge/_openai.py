"""The ``openai`` backend: any OpenAI-compatible server, first of all ``vllm serve MODEL``.

Structured output goes on the wire as ``response_format={"type": "json_schema", ...}`` (what
current vLLM enforces with xgrammar; the old ``guided_json`` field is silently ignored there,
so it is never sent). That is the same request instructor's ``Mode.JSON_SCHEMA`` builds; the
reply is validated here with the taxonomy's pydantic label model and re-asked a bounded number
of times, so that every non-ok outcome keeps its raw reply and maps onto exactly one status.

instructor is not used: with the openai client's typed ``chat.completions.create`` (which
instructor wraps) the client spent 3.3 ms of CPU per label, walking the schema on every request
and building typed reply objects, which held a 2-core machine well under 300 labels/s; the same
body sent through the client's low-level ``post`` and validated with the same pydantic model
costs 1.6 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import TYPE_CHECKING, Any

import httpx
import openai
from pydantic import BaseModel, ValidationError

from misstep.errors import JudgeUnavailableError, OptionError
from misstep.judge._protocol import JudgeRequest, JudgeResult
from misstep.judge._retry import backoff_delay
from misstep.labels._record import LabelStatus

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig
    from misstep.taxonomy import Taxonomy

__all__ = ["DEFAULT_BASE_URL", "OpenAIJudge", "create_openai_judge", "probe_server"]

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
PROBE_TIMEOUT_S = 5.0
# Re-asks after a reply that does not parse or fit the schema (on top of the first answer).
MAX_REASKS = 1
_RETRYABLE = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.InternalServerError,
    openai.RateLimitError,
)


def _api_key() -> str:
    # From the environment only; a local vLLM needs none, so a placeholder is sent.
    return os.environ.get("OPENAI_API_KEY") or "EMPTY"


def _get_within(url: str, timeout: float) -> tuple[int, bytes]:
    """GET with ``timeout`` as a total deadline: the body is read as it arrives and the clock
    is checked after each piece, so a server trickling bytes cannot stretch the wait (httpx's
    own timeout applies to each read)."""
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {_api_key()}"}
    with httpx.stream("GET", url, timeout=timeout, headers=headers) as response:
        body = bytearray()
        for chunk in response.iter_raw():
            body += chunk
            if time.monotonic() > deadline:
                raise TimeoutError
        return response.status_code, bytes(body)


def probe_server(base_url: str, timeout: float = PROBE_TIMEOUT_S) -> list[str]:
    """GET ``{base_url}/models`` and return the served model ids.

    Raises JudgeUnavailableError (naming the URL and how to start vLLM) when the server is
    down, slow, answers an error, or does not answer like an OpenAI-compatible server.
    ``timeout`` bounds the whole exchange, not each read."""
    url = base_url.rstrip("/") + "/models"
    try:
        status, body = _get_within(url, timeout)
    except (httpx.TimeoutException, TimeoutError):
        raise JudgeUnavailableError(
            url=base_url, reason=f"no answer to GET {url} within {timeout:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise JudgeUnavailableError(
            url=base_url, reason=f"cannot connect ({type(exc).__name__})"
        ) from None
    if status != 200:
        raise JudgeUnavailableError(
            url=base_url,
            reason=f"GET {url} answered HTTP {status}"
            + (
                ": the server refused the API key (set OPENAI_API_KEY)"
                if status in (401, 403)
                else "; is the URL right (it usually ends in /v1)?"
            ),
        )
    try:
        data = json.loads(body)["data"]
        models = [str(item["id"]) for item in data]
    except (ValueError, KeyError, TypeError):
        raise JudgeUnavailableError(
            url=base_url, reason=f"GET {url} did not answer an OpenAI model list"
        ) from None
    return models


def choose_model(base_url: str, asked: str | None, served: list[str]) -> str:
    """The model to request: the one asked for (it must be served, when the server lists any),
    else the only one served."""
    if asked is not None:
        if served and asked not in served:
            raise OptionError(
                option="--model", value=asked, allowed=f"a model served at {base_url}: {served}"
            )
        return asked
    if len(served) == 1:
        return served[0]
    raise OptionError(
        option="--model",
        value=None,
        allowed=f"one of the models served at {base_url}: {served or 'none listed'}",
        hint="pass --model NAME",
    )


class OpenAIJudge:
    """Async judge over an OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        label_type: type[BaseModel],
        schema: dict[str, Any],
        judge_id: str,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        timeout_s: float = 60.0,
        deadline_s: float = 300.0,
        max_retries: int = 3,
        concurrency: int = 16,
        max_reasks: int = MAX_REASKS,
        backoff_base_s: float = 0.5,
        server_model: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.server_model = server_model
        """The model id the server reported, for the manifest."""
        self._judge_id = judge_id
        self._label_type = label_type
        self._response_format = {
            "type": "json_schema",
            "json_schema": {"name": label_type.__name__, "schema": schema},
        }
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._max_retries = max_retries
        self._deadline_s = deadline_s
        self._max_reasks = max_reasks
        self._backoff_base_s = backoff_base_s
        # Enough pooled connections for every in-flight request, so none waits for a socket.
        # (the Limits class of whichever httpx the installed openai is built on)
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
            max_connections=max(64, 2 * concurrency),
            max_keepalive_connections=max(32, 2 * concurrency),
        )
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=_api_key(),
            timeout=timeout_s,
            max_retries=0,  # misstep retries itself, with its own backoff and accounting
            http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout_s),
        )

    @property
    def judge_id(self) -> str:
        return self._judge_id

    async def aclose(self) -> None:
        await self._client.close()

    async def _create(self, messages: list[dict[str, str]], seed: int) -> Any:
        # The client's low-level ``post`` sends this body as is and returns the JSON: the
        # typed ``chat.completions.create`` walks every request (the whole JSON schema) and
        # builds a model of every reply, which cost more CPU than the rest of a label
        # together. Same endpoint, same wire format, same errors and timeouts.
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self._temperature,
            "max_tokens": self._max_tokens,
            "seed": seed,
            "response_format": self._response_format,
        }
        try:
            # A total deadline: httpx's timeout is per read, and a server that trickles one
            # byte at a time never trips it.
            return await asyncio.wait_for(
                self._client.post("/chat/completions", cast_to=object, body=body),
                self._deadline_s,
            )
        except TimeoutError:
            raise _DeadlineExceeded(self._deadline_s) from None

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        """Label one trace; never raises for a bad reply or an unreachable server."""
        start = time.perf_counter()
        messages = list(request.messages)
        attempts = 0
        retries = 0
        reasks = 0

        def result(status: LabelStatus, **kw: Any) -> JudgeResult:
            elapsed = (time.perf_counter() - start) * 1000.0
            return JudgeResult(status=status, attempts=attempts, latency_ms=elapsed, **kw)

        while True:
            attempts += 1
            try:
                completion = await self._create(messages, request.seed)
            except (*_RETRYABLE, _DeadlineExceeded) as exc:
                if retries >= self._max_retries:
                    down = (
                        "unreachable"
                        if isinstance(
                            exc, (openai.APIConnectionError, _DeadlineExceeded)
                        )  # a timeout is a connection error subclass
                        else None
                    )
                    return result(
                        LabelStatus.FAILED,
                        reason=f"{_describe(exc)}; gave up after {attempts} attempt(s)",
                        server_down=down,
                    )
                retries += 1
                await asyncio.sleep(backoff_delay(retries, base_s=self._backoff_base_s))
                continue
            except openai.APIError as exc:
                # A 4xx other than 429: retrying the same request cannot help.
                auth = isinstance(exc, openai.APIStatusError) and exc.status_code in (401, 403)
                return result(
                    LabelStatus.FAILED,
                    reason=_describe(exc),
                    server_down="auth" if auth else None,
                )

            try:
                choice = completion["choices"][0]
                raw = choice["message"].get("content") or ""
                finish = choice.get("finish_reason")
                usage = completion.get("usage") or {}
            except (TypeError, KeyError, IndexError, AttributeError):
                return result(
                    LabelStatus.FAILED,
                    raw_reply=str(completion)[:2000],
                    reason="the server's answer is not a chat completion",
                )
            if finish == "length":
                return result(
                    LabelStatus.TRUNCATED,
                    raw_reply=raw,
                    reason=f"reply cut at max_tokens={self._max_tokens}",
                    extra={"usage": usage},
                )
            try:
                label = self._label_type.model_validate_json(raw)
            except ValidationError as exc:
                problem = _summarise(exc)
                if reasks >= self._max_reasks:
                    return result(
                        LabelStatus.UNPARSEABLE,
                        raw_reply=raw,
                        reason=f"{problem} (after {reasks} re-ask(s))",
                        extra={"usage": usage},
                    )
                reasks += 1
                messages = [
                    *messages,
                    {"role": "assistant", "content": raw},
                    {
                        "role": "user",
                        "content": "Your reply is not a JSON object that fits the required "
                        f"schema: {problem}. Answer again with the JSON object only.",
                    },
                ]
                continue
            return result(LabelStatus.OK, label=label, raw_reply=None, extra={"usage": usage})


class _DeadlineExceeded(Exception):
    """A request outlived its total deadline."""

    def __init__(self, deadline_s: float) -> None:
        super().__init__(f"no complete answer within the {deadline_s:g} s deadline")


def _describe(exc: Exception) -> str:
    if isinstance(exc, _DeadlineExceeded):
        return str(exc)
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} from the server" + _server_message(exc)
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    return type(exc).__name__


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own words (vLLM says why a prompt is too long or a schema rejected)."""
    body = exc.body
    message = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        message = message or body.get("message")
    if not message:
        return ""
    text = " ".join(str(message).split())
    return f": {text[:300]}"


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "reply"
        parts.append(f"{where}: {err.get('msg', '')}")
    return "; ".join(parts)


def create_openai_judge(config: JudgeConfig, taxonomy: Taxonomy) -> OpenAIJudge:
    """Probe the server, pick the model, and build the judge (registry factory)."""
    from misstep.judge import judge_id, label_json_schema, label_model
    from misstep.prompts import prompt_hash

    base_url = config.base_url or DEFAULT_BASE_URL
    served = probe_server(
        base_url, timeout=min(PROBE_TIMEOUT_S, float(config.timeout_s), float(config.deadline_s))
    )
    model = choose_model(base_url, config.model, served)
    resolved = config.model_copy(update={"model": model, "base_url": base_url})
    return OpenAIJudge(
        base_url=base_url,
        model=model,
        label_type=label_model(taxonomy),
        schema=label_json_schema(taxonomy),
        judge_id=judge_id(resolved, taxonomy.hash, prompt_hash()),
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        timeout_s=config.timeout_s,
        deadline_s=config.deadline_s,
        max_retries=config.max_retries,
        concurrency=config.concurrency,
        server_model=model if model in served else None,
    )
