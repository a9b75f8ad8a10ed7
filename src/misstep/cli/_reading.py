"""The reading options, shared by every command that reads traces: ``--input-format``,
``--regrade``, ``--skip-invalid`` and ``--no-cache``, declared once and packed into one
``Reading`` (``reads_traces``).

Nothing heavy is imported here: ``misstep --help`` loads this module and must stay fast.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Annotated, Any

import typer

__all__ = [
    "READING",
    "InputFormat",
    "InputFormatOpt",
    "NoCacheOpt",
    "Reading",
    "RegradeOpt",
    "SkipInvalidOpt",
    "input_format_value",
    "reads_traces",
]


class InputFormat(StrEnum):
    """``--input-format``: how to read the traces (inferred from the path when left out)."""

    jsonl = "jsonl"
    parquet = "parquet"
    csv = "csv"
    hf = "hf"
    verl = "verl"


InputFormatOpt = Annotated[
    InputFormat | None,
    typer.Option("--input-format", help="How to read the traces; inferred from the path."),
]
RegradeOpt = Annotated[
    bool,
    typer.Option(
        "--regrade", metavar="", help="Grade against gold_answer even where rows carry `correct`."
    ),
]
SkipInvalidOpt = Annotated[
    bool,
    typer.Option(
        "--skip-invalid",
        metavar="",
        help="Write invalid rows to a rejects file (its path is printed) instead of stopping.",
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        metavar="",
        help="Grade again instead of reading the cached graded table, and keep none.",
    ),
]


def input_format_value(value: InputFormat | None) -> str | None:
    """The reader's name for the option's value."""
    return value.value if value is not None else None


@dataclass(frozen=True)
class Reading:
    """How a command reads and grades its traces: ``--input-format``, ``--regrade``,
    ``--skip-invalid`` and ``--no-cache`` (``InputFormatOpt``, ``RegradeOpt``,
    ``SkipInvalidOpt``, ``NoCacheOpt``), taken whole by ``cli._load.load_run``."""

    input_format: InputFormat | None = None
    regrade: bool = False
    skip_invalid: bool = False
    no_cache: bool = False

    @property
    def format_name(self) -> str | None:
        """The reader's name for ``--input-format`` (None: inferred from the path)."""
        return input_format_value(self.input_format)

    @property
    def cache(self) -> bool:
        """Read and keep the cached graded table."""
        return not self.no_cache

    def run_fields(self) -> dict[str, Any]:
        """The same settings as the reading fields of ``misstep.labels.RunOptions``."""
        return {
            "input_format": self.format_name,
            "regrade": self.regrade,
            "skip_invalid": self.skip_invalid,
            "cache": self.cache,
        }


READING = Reading()
"""The reading options' defaults: ``reading: Reading = READING`` in a ``reads_traces`` command."""


def reads_traces(command: Callable[..., None]) -> Callable[..., None]:
    """A command that takes ``reading: Reading`` gets the four reading options in its place:
    its signature (what typer reads) lists ``--input-format``, ``--regrade``,
    ``--skip-invalid`` and ``--no-cache`` there, declared once here, and the call packs them
    into one ``Reading``."""
    signature = inspect.signature(command, eval_str=True)
    declared = {
        "input_format": InputFormatOpt,
        "regrade": RegradeOpt,
        "skip_invalid": SkipInvalidOpt,
        "no_cache": NoCacheOpt,
    }
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param.name != "reading":
            params.append(param)
            continue
        default = param.default if isinstance(param.default, Reading) else READING
        params += [
            param.replace(
                name=f.name, annotation=declared[f.name], default=getattr(default, f.name)
            )
            for f in fields(Reading)
        ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        reading = Reading(**{name: kwargs.pop(name) for name in declared})
        command(*args, reading=reading, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper
