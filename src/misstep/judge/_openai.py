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
import copy
import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import openai
from pydantic import BaseModel

from misstep.errors import JudgeUnavailableError, OptionError
from misstep.judge._exchange import ModelJudge, Sent, TransportGaveUp, replies_of
from misstep.judge._protocol import JudgeResult
from misstep.judge._retry import backoff_delay
from misstep.judge._spec import JudgeSpec
from misstep.verdict import LabelStatus

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig
    from misstep.taxonomy import Taxonomy

__all__ = [
    "DEFAULT_BASE_URL",
    "OpenAIJudge",
    "create_openai_judge",
    "probe_models",
    "probe_server",
    "server_version",
]

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
PROBE_TIMEOUT_S = 5.0
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
    """GET ``{base_url}/models`` and return the served model ids (see ``probe_models``)."""
    return [str(card["id"]) for card in probe_models(base_url, timeout)]


def probe_models(base_url: str, timeout: float = PROBE_TIMEOUT_S) -> list[dict[str, Any]]:
    """GET ``{base_url}/models`` and return the served model cards (``id``, and with vLLM
    ``max_model_len``).

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
        cards = [dict(item) for item in data if isinstance(item["id"], str)]
    except (ValueError, KeyError, TypeError):
        raise JudgeUnavailableError(
            url=base_url, reason=f"GET {url} did not answer an OpenAI model list"
        ) from None
    return cards


def server_version(base_url: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """The server's own version: vLLM answers ``GET /version`` at the root of its URL (beside
    ``/v1``). None when the server has no such route or does not answer in time."""
    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    try:
        status, body = _get_within(root + "/version", timeout)
        if status != 200:
            return None
        version = json.loads(body).get("version")
    except (httpx.HTTPError, TimeoutError, ValueError, AttributeError):
        return None
    return str(version) if version is not None else None


def choose_model(base_url: str, asked: str | None, served: list[str]) -> str:
    """The model to request: the one asked for (it must be served, when the server lists any),
    else the only one served."""
    if asked is not None:
        if served and asked not in served:
            raise OptionError(
                option="model", value=asked, allowed=f"a model served at {base_url}: {served}"
            )
        return asked
    if len(served) == 1:
        return served[0]
    raise OptionError(
        option="model",
        value=None,
        allowed=f"one of the models served at {base_url}: {served or 'none listed'}",
        hint="name one of them: `model=NAME`",
    )


class OpenAIJudge(ModelJudge):
    """Async judge over an OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        spec: JudgeSpec,
        *,
        backoff_base_s: float = 0.5,
        server_model: str | None = None,
        server_info: dict[str, Any] | None = None,
    ) -> None:
        """A client of the servers of ``spec``'s configuration (``base_url`` and
        ``extra_base_urls``; its model, timeouts, retries and concurrency)."""
        super().__init__(spec)
        config = spec.config
        base_url = config.base_url or DEFAULT_BASE_URL
        timeout_s = config.timeout_s
        concurrency = config.concurrency
        self.base_url = base_url
        self.server_model = server_model
        """The model id the server reported, for the manifest."""
        self.server_info: dict[str, Any] = server_info or {}
        """What the server said of itself (``GET /version``, ``max_model_len``), for the
        manifest."""
        self.supports_n = True
        """One request draws all the samples of a trace (``n``)."""
        self._max_retries = config.max_retries
        self._deadline_s = config.deadline_s
        self._backoff_base_s = backoff_base_s
        # Enough pooled connections for every in-flight request, so none waits for a socket.
        # (the Limits class of whichever httpx the installed openai is built on)
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
            max_connections=max(64, 2 * concurrency),
            max_keepalive_connections=max(32, 2 * concurrency),
        )
        self._servers = [
            _Server(
                url,
                openai.AsyncOpenAI(
                    base_url=url,
                    api_key=_api_key(),
                    timeout=timeout_s,
                    max_retries=0,  # misstep retries itself, with its own backoff and accounting
                    http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout_s),
                ),
            )
            for url in (base_url, *config.extra_base_urls)
        ]
        self.notices: list[str] = []
        """Messages for the user (a server dropped); the pipeline prints and clears them."""

    def for_label(
        self, label_type: type[BaseModel], schema: dict[str, Any], judge_id: str
    ) -> OpenAIJudge:
        """This judge asking for another structured output (``misstep select``'s choice): the
        same servers, clients and sampling settings; closing either closes both."""
        other = copy.copy(self)
        other._label_type = label_type
        other._schema = schema
        other._judge_id = judge_id
        other.notices = []
        return other

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    @property
    def base_urls(self) -> list[str]:
        """The servers still in use."""
        return [server.url for server in self._servers if not server.dropped]

    async def aclose(self) -> None:
        for server in self._servers:
            await server.client.close()

    def _pick(self) -> _Server:
        """The live server that failed least recently and has the fewest requests in flight
        (ties: the first listed): a retry after a failure goes to another server."""
        live = [server for server in self._servers if not server.dropped]
        return min(live or self._servers, key=lambda server: (server.failures, server.in_flight))

    def _failed(self, server: _Server, refused: bool) -> bool:
        """A failed request on ``server``: a refused connection drops it at once, missed
        deadlines after ``DROP_AFTER_FAILURES`` in a row (a busy server is slow, not dead);
        never the last server alive. True when the request should go to another server now."""
        server.failures += 1
        live = [s for s in self._servers if not s.dropped]
        if server.dropped or len(live) < 2:
            return False
        if refused or server.failures >= DROP_AFTER_FAILURES:
            server.dropped = True
            why = "refused the connection" if refused else f"failed {server.failures} times"
            self.notices.append(
                f"judge server {server.url} {why}: dropped, its requests go to the "
                f"{len(live) - 1} other server(s)"
            )
            return True
        return False

    async def _create(self, body: dict[str, Any]) -> Any:
        # The client's low-level ``post`` sends this body as is and returns the JSON: the
        # typed ``chat.completions.create`` walks every request (the whole JSON schema) and
        # builds a model of every reply, which cost more CPU than the rest of a label
        # together. Same endpoint, same wire format, same errors and timeouts.
        server = self._pick()
        server.in_flight += 1
        try:
            # A total deadline: httpx's timeout is per read, and a server that trickles one
            # byte at a time never trips it.
            reply = await asyncio.wait_for(
                server.client.post("/chat/completions", cast_to=object, body=body),
                self._deadline_s,
            )
        except TimeoutError:
            if self._failed(server, refused=False):
                raise _Failover from None
            raise _DeadlineExceeded(self._deadline_s) from None
        except openai.APITimeoutError:
            if self._failed(server, refused=False):
                raise _Failover from None
            raise
        except openai.APIConnectionError:
            if self._failed(server, refused=True):
                raise _Failover from None
            raise
        finally:
            server.in_flight -= 1
        server.failures = 0
        server.served += 1
        return reply

    async def embed(self, texts: list[str]) -> list[list[float]] | None:
        """Embeddings of ``texts`` from a server of this judge (``/v1/embeddings``, the same
        model); None when it serves none (vLLM answers a generative model's request with an
        error)."""
        server = self._pick()
        try:
            reply = await asyncio.wait_for(
                server.client.post(
                    "/embeddings", cast_to=object, body={"model": self.model, "input": texts}
                ),
                self._deadline_s,
            )
            return [[float(v) for v in item["embedding"]] for item in reply["data"]]
        except (openai.OpenAIError, TimeoutError, KeyError, TypeError, ValueError):
            return None

    async def _attempt(self, body: dict[str, Any]) -> Sent:
        """One attempt over the wire, with the transport's own retries (5xx, timeouts,
        connection errors, with backoff) and failover between servers."""
        retries = 0
        made = 0
        while True:
            made += 1
            try:
                completion = await self._create(body)
            except _Failover:
                continue  # the server was dropped: straight to another, not a retry
            except (*_RETRYABLE, _DeadlineExceeded) as exc:
                if retries >= self._max_retries:
                    # a timeout is a connection error subclass
                    down = (
                        "unreachable"
                        if isinstance(exc, (openai.APIConnectionError, _DeadlineExceeded))
                        else None
                    )
                    raise TransportGaveUp(
                        JudgeResult(
                            status=LabelStatus.FAILED,
                            reason=f"{_describe(exc)}; gave up after {made} attempt(s)",
                            server_down=down,
                        ),
                        made,
                    ) from None
                retries += 1
                await asyncio.sleep(backoff_delay(retries, base_s=self._backoff_base_s))
                continue
            except openai.APIError as exc:
                # A 4xx other than 429: retrying the same request cannot help.
                auth = isinstance(exc, openai.APIStatusError) and exc.status_code in (401, 403)
                raise TransportGaveUp(
                    JudgeResult(
                        status=LabelStatus.FAILED,
                        reason=_describe(exc),
                        server_down="auth" if auth else None,
                    ),
                    made,
                ) from None
            try:
                replies, usage = replies_of(completion)
            except ValueError:
                raise TransportGaveUp(
                    JudgeResult(
                        status=LabelStatus.FAILED,
                        raw_reply=str(completion)[:2000],
                        reason="the server's answer is not a chat completion",
                    ),
                    made,
                ) from None
            self._check_model(completion, made)
            return Sent(replies, usage, made)

    def _check_model(self, completion: Any, made: int) -> None:
        """A reply from another model than the one asked is refused (a server swapped under
        the run would mix two judges under one id)."""
        served = completion.get("model") if isinstance(completion, dict) else None
        if isinstance(served, str) and served != self.model:
            raise TransportGaveUp(
                JudgeResult(
                    status=LabelStatus.FAILED,
                    reason=f"the server answered as model {served!r}, not {self.model!r}",
                    server_down="wrong-model",
                ),
                made,
            )


DROP_AFTER_FAILURES = 3
"""Connection errors or missed deadlines in a row after which a server is dropped."""


@dataclass
class _Server:
    """One of the judge's servers (``--base-url`` may be repeated)."""

    url: str
    client: Any
    in_flight: int = 0
    failures: int = 0
    served: int = 0
    dropped: bool = False


class _Failover(Exception):
    """The request's server was just dropped; send the request to another one."""


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


def create_openai_judge(config: JudgeConfig, taxonomy: Taxonomy) -> OpenAIJudge:
    """Probe the server, pick the model, and build the judge on the one spec of the run, made
    from the configuration with that model and URL (registry factory)."""
    urls = [config.base_url or DEFAULT_BASE_URL, *config.extra_base_urls]
    base_url = urls[0]
    timeout = min(PROBE_TIMEOUT_S, float(config.timeout_s), float(config.deadline_s))
    cards = probe_models(base_url, timeout=timeout)
    served = [str(card["id"]) for card in cards]
    model = choose_model(base_url, config.model, served)
    for other in urls[1:]:
        # every server must serve the same model: one judge configuration
        choose_model(other, model, probe_server(other, timeout=timeout))
    resolved = config.model_copy(update={"model": model, "base_url": base_url})
    card = next((c for c in cards if c["id"] == model), {})
    info: dict[str, Any] = {
        "url": base_url,
        "version": server_version(base_url, timeout=timeout),
        "max_model_len": card.get("max_model_len"),
        "batch_invariant": config.batch_invariant,
    }
    if len(urls) > 1:
        info["servers"] = [
            {"url": url, "version": server_version(url, timeout=timeout)} for url in urls
        ]
    return OpenAIJudge(
        JudgeSpec(resolved, taxonomy),
        server_model=model if model in served else None,
        server_info=info,
    )
