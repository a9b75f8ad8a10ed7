"""The options of the commands that ask a judge (``label``, ``export-requests``, ``select``):
declared here once, checked and built once into small frozen dataclasses, passed whole.

- :class:`Asking`: what the judge is asked (sampling, token budgets, template arguments);
- :class:`Serving`: where and how it is asked (servers, model, concurrency, timeouts, engine);
- ``misstep.labels.RunOptions``: how the run reads its input and which traces it judges.

:func:`judge_config` turns the first two into the one ``JudgeConfig``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.cli._options import check_base_urls, check_reasoning_effort
from misstep.errors import OptionError

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig

__all__ = [
    "Asking",
    "Serving",
    "check_run_dir",
    "engine_args",
    "json_object",
    "judge_config",
]

SamplesOpt = Annotated[
    int,
    typer.Option(
        "--samples",
        metavar="INT",
        min=1,
        help="Judge samples per trace, drawn in one request (majority); needs --temperature "
        "above 0.",
    ),
]
MaxTraceTokensOpt = Annotated[
    int,
    typer.Option(
        "--max-trace-tokens", metavar="INT", min=1, help="Token budget of the trace in the prompt."
    ),
]
IncludeCorrectOpt = Annotated[
    bool,
    typer.Option(
        "--include-correct", metavar="", help="Also judge traces whose answer is correct."
    ),
]
LimitOpt = Annotated[
    int | None,
    typer.Option("--limit", metavar="INT", min=1, help="Read only the first N traces."),
]
ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", metavar="INT", min=1, help="Requests in flight.")
]
TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", metavar="SECONDS", help="Seconds one read from the server may take."),
]
DeadlineOpt = Annotated[
    float,
    typer.Option(
        "--deadline",
        metavar="SECONDS",
        help="Seconds one whole request may take, however slowly the server answers.",
    ),
]
MaxRetriesOpt = Annotated[
    int, typer.Option("--max-retries", metavar="INT", min=0, help="Retries on 5xx/timeouts.")
]
EngineArgOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--engine-arg",
        metavar="KEY=VALUE",
        help="vllm backend: an engine setting (tensor_parallel_size=2, max_model_len=16384); "
        "repeatable. VALUE is read as JSON when it parses, else as text.",
    ),
]
BatchInvariantOpt = Annotated[
    bool,
    typer.Option(
        "--batch-invariant",
        metavar="",
        help="Record that the server runs with VLLM_BATCH_INVARIANT=1 (not checkable).",
    ),
]
PerCheckpointOpt = Annotated[
    int | None,
    typer.Option(
        "--per-checkpoint",
        metavar="INT",
        min=1,
        help="Label budget: judge N traces drawn at random per checkpoint x dataset "
        "(each label keeps its inclusion probability; shares are weighted by it).",
    ),
]
PilotOpt = Annotated[
    int | None,
    typer.Option(
        "--pilot",
        metavar="INT",
        min=1,
        help="Judge N traces in all, spread evenly over checkpoints x datasets at random "
        "(unlike --limit, which reads the first rows).",
    ),
]
RejectsOpt = Annotated[
    bool,
    typer.Option("--skip-invalid", metavar="", help="Write invalid rows to RUN_DIR/rejects.jsonl."),
]


@dataclass(frozen=True)
class Asking:
    """What the judge is asked: the same request whichever way it is sent."""

    temperature: float = 0.0
    """Sampling temperature of the first attempt (``--temperature``)."""
    max_tokens: int = 1024
    """Longest reply in tokens (``--max-tokens``)."""
    samples: int = 1
    """Samples per trace (``--samples``)."""
    seed: int = 0
    """The seed every request's seed comes from (``--seed``)."""
    max_trace_tokens: int = 6000
    """Token budget of the trace in the prompt (``--max-trace-tokens``)."""
    reasoning_effort: str | None = None
    """For reasoning models: low, medium, high (``--reasoning-effort``)."""
    chat_template_kwargs: dict[str, Any] | None = None
    """Chat-template arguments (``--chat-template-kwargs``)."""

    @classmethod
    def build(
        cls,
        *,
        temperature: float,
        max_tokens: int,
        samples: int,
        seed: int,
        max_trace_tokens: int = 6000,
        reasoning_effort: str | None = None,
        chat_template_kwargs: str | None = None,
    ) -> Asking:
        """From the command's options, checked (before any connection)."""
        check_reasoning_effort(reasoning_effort)
        return cls(
            temperature=temperature,
            max_tokens=max_tokens,
            samples=samples,
            seed=seed,
            max_trace_tokens=max_trace_tokens,
            reasoning_effort=reasoning_effort,
            chat_template_kwargs=json_object(chat_template_kwargs, "--chat-template-kwargs"),
        )

    def check_samples(self) -> None:
        """Several samples need a temperature above 0 (greedy ones are copies)."""
        if self.samples > 1 and self.temperature <= 0:
            raise OptionError(
                option="--samples",
                value=self.samples,
                allowed="1 at temperature 0: greedy samples are copies of one another, so their "
                "agreement would always be 1",
                hint="pass --temperature above 0 (e.g. --temperature 0.7) with --samples",
            )


@dataclass(frozen=True)
class Serving:
    """Where and how the judge is asked."""

    base_urls: tuple[str, ...] = ()
    """The servers (``--base-url``, repeatable)."""
    model: str | None = None
    """The model (``--model``; default: the one the server serves)."""
    concurrency: int = 16
    """Requests in flight (``--concurrency``)."""
    timeout: float = 60.0
    """Seconds one read may take (``--timeout``)."""
    deadline: float = 300.0
    """Seconds one whole request may take (``--deadline``)."""
    max_retries: int = 3
    """Retries on 5xx and timeouts (``--max-retries``)."""
    engine_args: dict[str, Any] = field(default_factory=dict)
    """vllm engine settings (``--engine-arg``)."""
    batch_invariant: bool = False
    """The server runs batch-invariant, as the user declares (``--batch-invariant``)."""

    @classmethod
    def build(
        cls,
        *,
        base_urls: list[str] | None,
        model: str | None,
        concurrency: int,
        timeout: float = 60.0,
        deadline: float = 300.0,
        max_retries: int = 3,
        engine_arg: list[str] | None = None,
        batch_invariant: bool = False,
    ) -> Serving:
        """From the command's options, checked (before any connection)."""
        if timeout <= 0:
            raise OptionError(
                option="--timeout", value=timeout, allowed="a positive number of seconds"
            )
        if deadline <= 0:
            raise OptionError(
                option="--deadline", value=deadline, allowed="a positive number of seconds"
            )
        check_base_urls(base_urls)
        return cls(
            base_urls=tuple(base_urls or ()),
            model=model,
            concurrency=concurrency,
            timeout=timeout,
            deadline=deadline,
            max_retries=max_retries,
            engine_args=engine_args(engine_arg or []),
            batch_invariant=batch_invariant,
        )


def judge_config(
    backend: str, taxonomy: Path | None, asking: Asking, serving: Serving
) -> JudgeConfig:
    """The one ``JudgeConfig`` of a command."""
    from misstep.judge import JudgeConfig

    urls = serving.base_urls
    return JudgeConfig(
        backend=backend,
        model=serving.model,
        base_url=urls[0] if urls else None,
        extra_base_urls=list(urls[1:]),
        taxonomy_path=str(taxonomy) if taxonomy is not None else None,
        timeout_s=serving.timeout,
        deadline_s=serving.deadline,
        max_retries=serving.max_retries,
        concurrency=serving.concurrency,
        samples=asking.samples,
        seed=asking.seed,
        max_trace_tokens=asking.max_trace_tokens,
        temperature=asking.temperature,
        max_tokens=asking.max_tokens,
        reasoning_effort=asking.reasoning_effort,
        chat_template_kwargs=asking.chat_template_kwargs,
        engine_args=serving.engine_args,
        batch_invariant=serving.batch_invariant,
    )


def check_run_dir(out: Path) -> None:
    """``--out`` is a run directory, or nothing yet."""
    if out.exists() and not out.is_dir():
        raise OptionError(option="--out", value=str(out), allowed="a directory (the run directory)")


def json_object(text: str | None, option: str) -> dict[str, Any] | None:
    """A JSON object option's value (None when not given)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(option=option, value=text, allowed=f"a JSON object ({exc.msg})") from None
    if not isinstance(value, dict):
        raise OptionError(option=option, value=text, allowed="a JSON object, {...}")
    return value


def engine_args(items: list[str]) -> dict[str, Any]:
    """``--engine-arg KEY=VALUE`` items; VALUE as JSON when it parses, else as text."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(option="--engine-arg", value=item, allowed="KEY=VALUE")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out
