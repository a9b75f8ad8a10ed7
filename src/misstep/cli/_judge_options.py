"""The options of the commands that ask a judge (``label``, ``export-requests``, ``select``):
declared here once, their defaults the config model's (``misstep.defaults``: the same values
``misstep.judge.JudgeConfig`` declares), bound whole into the one ``JudgeConfig`` by
:func:`judge_config` (:func:`bind`: pydantic validates, and a field's error names its flag,
``cli._errors.flag_of``), then passed whole; ``misstep.labels.RunOptions`` says how the run
reads its input and which traces it judges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from misstep.cli._options import check_base_urls, check_reasoning_effort
from misstep.errors import OptionError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from misstep.judge import JudgeConfig

__all__ = [
    "bind",
    "check_run_dir",
    "engine_args",
    "json_object",
    "judge_config",
]

_M = TypeVar("_M", bound="BaseModel")

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


def bind(config_type: type[_M], /, **values: Any) -> _M:
    """A ``config_type`` made from a command's option values (keyword: the field), validated
    by pydantic; the first field error becomes an ``OptionError`` naming the field (the CLI's
    error boundary names its flag)."""
    from pydantic import ValidationError

    try:
        return config_type.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error.get("loc", ())) or config_type.__name__
        message = str(error.get("msg", "not valid"))
        raise OptionError(
            option=field, value=error.get("input"), allowed=message[:1].lower() + message[1:]
        ) from None


def judge_config(
    backend: str,
    taxonomy: Path | None,
    *,
    base_urls: list[str] | None = None,
    engine_arg: list[str] | None = None,
    chat_template_kwargs: str | None = None,
    **fields: Any,
) -> JudgeConfig:
    """The one ``JudgeConfig`` of a command, checked before any connection: the options
    that are the config's fields as they are (``fields``), and those the CLI spells its own
    way (repeated ``--base-url``, ``--engine-arg KEY=VALUE``, ``--chat-template-kwargs``
    as JSON, ``--taxonomy`` as a path)."""
    from misstep.judge import JudgeConfig

    check_base_urls(base_urls)
    check_reasoning_effort(fields.get("reasoning_effort"))
    urls = list(base_urls or ())
    return bind(
        JudgeConfig,
        backend=backend,
        base_url=urls[0] if urls else None,
        extra_base_urls=urls[1:],
        taxonomy_path=str(taxonomy) if taxonomy is not None else None,
        engine_args=engine_args(engine_arg or []),
        chat_template_kwargs=json_object(chat_template_kwargs, "--chat-template-kwargs"),
        **fields,
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
