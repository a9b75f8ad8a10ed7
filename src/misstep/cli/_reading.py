"""The reading options, shared by every command that reads traces: ``--input-format``,
``--regrade``, ``--skip-invalid``, ``--no-cache``, ``--path-fields`` and ``--map``, declared
once and packed into one ``Reading`` (``reads_traces``).

Nothing heavy is imported here: ``misstep --help`` loads this module and must stay fast.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.errors import OptionError

if TYPE_CHECKING:
    from misstep.rollouts import ReadSpec

__all__ = [
    "READING",
    "InputFormat",
    "InputFormatOpt",
    "MapOpt",
    "NoCacheOpt",
    "PathFieldsOpt",
    "Reading",
    "RegradeOpt",
    "SkipInvalidOpt",
    "input_format_value",
    "reads_traces",
]


class InputFormat(StrEnum):
    """``--input-format``: how to read the traces (recognised from the path and the first
    row's fields when left out); ``misstep.rollouts.INPUT_FORMATS``, which a test keeps equal."""

    jsonl = "jsonl"
    parquet = "parquet"
    csv = "csv"
    hf = "hf"
    verl = "verl"
    qwen_math_eval = "qwen-math-eval"
    lm_eval_harness = "lm-eval-harness"
    nemo_skills = "nemo-skills"
    inspect = "inspect"


InputFormatOpt = Annotated[
    InputFormat | None,
    typer.Option(
        "--input-format",
        help="How to read the traces; recognised from the path and the first row's fields.",
    ),
]
PathFieldsOpt = Annotated[
    str | None,
    typer.Option(
        "--path-fields",
        metavar="TEMPLATE",
        help="Fields from each file's path, matched against its last segments: "
        "'{checkpoint}/math_eval/{dataset}/*' ('*' is one segment).",
    ),
]
MapOpt = Annotated[
    str | None,
    typer.Option(
        "--map",
        metavar="FIELD=COLUMN,...",
        help="Columns that hold misstep's fields (dotted paths reach into objects), e.g. "
        "problem_id=idx,response=output,gold_answer=doc.answer.",
    ),
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
    ``--skip-invalid``, ``--no-cache``, ``--path-fields`` and ``--map`` (``InputFormatOpt``,
    ``RegradeOpt``, ``SkipInvalidOpt``, ``NoCacheOpt``, ``PathFieldsOpt``, ``MapOpt``), taken
    whole by ``cli._load.load_run``."""

    input_format: InputFormat | None = None
    regrade: bool = False
    skip_invalid: bool = False
    no_cache: bool = False
    path_fields: str | None = None
    column_map: str | None = None

    @property
    def format_name(self) -> str | None:
        """What the readers take as ``input_format``: the text of the reading's
        ``misstep.rollouts.ReadSpec`` (a bare format name, or None to recognise it, when
        neither ``--path-fields`` nor ``--map`` is given). ``checked`` has validated it."""
        return self.spec().text()

    def spec(self) -> ReadSpec:
        """The reading's ``ReadSpec``; OptionError naming the option that is wrong."""
        from pydantic import ValidationError

        from misstep.rollouts import ReadSpec, parse_column_map

        try:
            columns = parse_column_map(self.column_map)
        except ValueError as exc:
            raise OptionError(option="--map", value=self.column_map, allowed=str(exc)) from None
        try:
            return ReadSpec(
                format=input_format_value(self.input_format),
                path_fields=self.path_fields,
                columns=columns,
            )
        except ValidationError as exc:
            error = exc.errors()[0]
            where = error["loc"][0] if error["loc"] else "columns"
            option, value = (
                ("--path-fields", self.path_fields)
                if where == "path_fields"
                else ("--map", self.column_map)
            )
            allowed = str(error["msg"]).removeprefix("Value error, ")
            raise OptionError(option=option, value=value, allowed=allowed) from None

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
    """A command that takes ``reading: Reading`` gets the reading options in its place: its
    signature (what typer reads) lists ``--input-format``, ``--regrade``, ``--skip-invalid``,
    ``--no-cache``, ``--path-fields`` and ``--map`` there, declared once here, and the call
    packs them into one ``Reading``, checked before the command runs."""
    signature = inspect.signature(command, eval_str=True)
    declared = {
        "input_format": InputFormatOpt,
        "regrade": RegradeOpt,
        "skip_invalid": SkipInvalidOpt,
        "no_cache": NoCacheOpt,
        "path_fields": PathFieldsOpt,
        "column_map": MapOpt,
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
        reading.spec()  # a bad --path-fields or --map fails before any work
        command(*args, reading=reading, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper
