"""Options shared by every command, declared once; and the checks every command runs on its
options and files before it reads a single trace.

Nothing heavy is imported here: ``misstep --help`` loads this module and must stay fast.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from misstep.errors import InputFormatError, OptionError, OutputError

if TYPE_CHECKING:
    from misstep.rollouts import ReadSpec

__all__ = [
    "READING",
    "REASONING_EFFORTS",
    "AddJudgeOpt",
    "BaseUrlsOpt",
    "ByOpt",
    "ChatTemplateKwargsOpt",
    "EstimatorOpt",
    "GroupBy",
    "HumanOpt",
    "InputFormat",
    "InputFormatOpt",
    "JudgeIdOpt",
    "KOpt",
    "LabelRunOpt",
    "LabelSource",
    "LabelSubsetOpt",
    "LabelsOpt",
    "MapOpt",
    "MaxTokensOpt",
    "ModelOpt",
    "NoCacheOpt",
    "PathFieldsOpt",
    "Reading",
    "ReasoningEffortOpt",
    "RegradeOpt",
    "RunTaxonomyOpt",
    "SeedOpt",
    "SimultaneousOpt",
    "SkipInvalidOpt",
    "TableFormat",
    "TaxonomyOpt",
    "TemperatureOpt",
    "TextFormat",
    "TracesArg",
    "check_base_urls",
    "check_input",
    "check_output_file",
    "check_reasoning_effort",
    "input_format_value",
    "label_run",
    "parse_ks",
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


class TableFormat(StrEnum):
    """``--format`` of a command that prints tables: a rich table, or JSON alone on stdout."""

    table = "table"
    json = "json"


class TextFormat(StrEnum):
    """``--format`` of a command that prints text and tables, or JSON alone on stdout."""

    text = "text"
    json = "json"


class GroupBy(StrEnum):
    """``--by``: one row per checkpoint x dataset, or the datasets of a checkpoint pooled."""

    dataset = "dataset"
    checkpoint = "checkpoint"


TracesArg = Annotated[
    Path,
    typer.Argument(
        metavar="TRACES",
        help="Rollouts: a JSONL(.gz), Parquet, CSV or Inspect .eval file, or a directory of "
        "them (a harness's output folder, a verl dump, a datasets folder).",
    ),
]
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
LabelsOpt = Annotated[
    Path,
    typer.Option(
        "--labels", metavar="RUN_DIR", help="Run directory (or labels.jsonl) of `misstep label`."
    ),
]
LabelRunOpt = Annotated[
    Path,
    typer.Option("--labels", metavar="RUN_DIR", help="Label run directory (or labels.jsonl)."),
]
TemperatureOpt = Annotated[
    float,
    typer.Option("--temperature", metavar="FLOAT", min=0.0, help="Judge sampling temperature."),
]
MaxTokensOpt = Annotated[
    int,
    typer.Option(
        "--max-tokens",
        metavar="INT",
        min=1,
        help="Longest judge reply in tokens (reasoning included, for reasoning models).",
    ),
]
REASONING_EFFORTS = ("low", "medium", "high")
ReasoningEffortOpt = Annotated[
    str | None,
    typer.Option(
        "--reasoning-effort", metavar="LEVEL", help="Sent to reasoning models: low, medium, high."
    ),
]
ChatTemplateKwargsOpt = Annotated[
    str | None,
    typer.Option(
        "--chat-template-kwargs",
        metavar="JSON",
        help="Chat-template arguments, e.g. '{\"enable_thinking\": false}'.",
    ),
]
AddJudgeOpt = Annotated[
    bool,
    typer.Option(
        "--add-judge",
        metavar="",
        help="Write into a run directory that holds another judge configuration's labels.",
    ),
]
BaseUrlsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1; repeat it for several "
        "servers of the same model (requests go to the least busy, a dead one is dropped).",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", metavar="NAME", help="Model name; default: the only one served."),
]
JudgeIdOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-id",
        metavar="ID",
        help="Use the labels of this judge configuration, when the run directory holds several "
        "(misstep label --add-judge).",
    ),
]
LabelSubsetOpt = Annotated[
    bool,
    typer.Option(
        "--labels-from-other-input",
        metavar="",
        help="Accept a label run made from another input (e.g. a subset of these traces); "
        "its traces are joined by trace_id.",
    ),
]
HumanOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--human",
        metavar="FILE",
        help="People's labels (human-labels JSONL/CSV, a filled-in task or a Label Studio "
        "export); repeatable.",
    ),
]
EstimatorOpt = Annotated[
    str,
    typer.Option(
        "--estimator",
        metavar="NAME",
        help="How people's labels correct the judge's error-type shares: ppi (per checkpoint, "
        "from its own human labels; valid when the judge drifts) or pooled (one confusion "
        "matrix over all checkpoints, inverted; assumes the judge errs the same way at every "
        "checkpoint, and tests it). See docs/validation.md.",
    ),
]
SimultaneousOpt = Annotated[
    bool,
    typer.Option(
        "--simultaneous",
        metavar="",
        help="Also give intervals that hold for every type of a checkpoint at once "
        "(ppi: Gaussian max-|z| band; pooled: Bonferroni).",
    ),
]
ByOpt = Annotated[
    GroupBy | None,
    typer.Option(
        "--by",
        help="dataset: per checkpoint x dataset (the default with several datasets); "
        "checkpoint: pool the datasets of each checkpoint.",
    ),
]
KOpt = Annotated[
    str | None,
    typer.Option(
        "--k",
        metavar="K,K,...",
        help="Comma-separated k for pass@k and maj@k; default: 1,4,16 as far as the samples allow.",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", metavar="INT", help="Seed of every random step.")]
TaxonomyOpt = Annotated[
    Path | None,
    typer.Option("--taxonomy", metavar="FILE", help="Taxonomy YAML; default: built-in math-v1."),
]

RunTaxonomyOpt = Annotated[
    Path | None,
    typer.Option(
        "--taxonomy",
        metavar="FILE",
        help="Taxonomy YAML the label run was made with; default: the one its manifest records.",
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


@dataclass(frozen=True)
class LabelSource:
    """Where an analysis command's labels come from: ``--labels``, ``--judge-id``,
    ``--human``, ``--taxonomy`` and ``--labels-from-other-input``, taken whole by
    ``cli._load.load_labelled``."""

    labels: Path
    judge_id: str | None = None
    human: tuple[Path, ...] = ()
    taxonomy: Path | None = None
    other_input: bool = False

    @classmethod
    def of(
        cls,
        labels: Path,
        judge_id: str | None,
        human: list[Path] | None,
        taxonomy: Path | None,
        other_input: bool,
    ) -> LabelSource:
        """The options as typer gives them, in this order (``--human``: None when not given;
        the types differ, so mypy catches a swap)."""
        return cls(labels, judge_id, tuple(human or ()), taxonomy, other_input)

    def checked(self) -> LabelSource:
        """The same source with ``--labels`` resolved to its label run (``label_run``) and
        every ``--human`` file checked: before a single trace is read."""
        labels = label_run(self.labels, "--labels")
        for path in self.human:
            check_input(path, "--human")
        return LabelSource(
            labels,
            self.judge_id,
            self.human,
            self.taxonomy,
            self.other_input,
        )


def parse_ks(text: str | None) -> list[int] | None:
    """``--k``: sorted distinct integers >= 1, or None for the default (what the data allow)."""
    if text is None:
        return None
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise OptionError(
            option="--k", value=text, allowed="comma-separated integers, e.g. 1,4,16"
        ) from None
    if not ks or ks[0] < 1:
        raise OptionError(option="--k", value=text, allowed="integers >= 1, e.g. 1,4,16")
    return ks


def parse_strata(stratify: str) -> list[str]:
    """The ``--stratify`` fields, each one a sample can be stratified by."""
    from misstep.agreement import STRATA_FIELDS

    fields = [f.strip() for f in stratify.split(",") if f.strip()]
    if any(f not in STRATA_FIELDS for f in fields):
        raise OptionError(
            option="--stratify", value=stratify, allowed="names among " + ", ".join(STRATA_FIELDS)
        )
    return fields


def check_input(path: Path, what: str = "input") -> None:
    """An input file or directory that exists and can be read."""
    if not path.exists():
        raise InputFormatError(path=path, reason=f"{what}: no such file or directory")
    if not os.access(path, os.R_OK):
        raise InputFormatError(path=path, reason=f"{what}: not readable")


def label_run(path: Path, option: str = "--labels") -> Path:
    """The label run that ``option`` names: ``path`` itself when it is a labels.jsonl or a run
    directory (one holding labels.jsonl), else the one run directory inside ``path`` (the demo's
    ``demo-run`` -> ``demo-run/labels``). Several inside, or none: an error naming what to give.
    """
    from misstep.errors import LabelStoreError

    check_input(path, option)
    if not path.is_dir() or (path / "labels.jsonl").exists():
        return path
    found = sorted(p.parent for p in path.glob("*/labels.jsonl"))
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(str(p) for p in found)
        raise LabelStoreError(
            path=path,
            reason=f"holds {len(found)} label runs: {names}",
            hint=f"pass one of them as {option}",
        )
    raise LabelStoreError(
        path=path,
        reason="not a label run: no labels.jsonl in it or in a folder inside it",
        hint=f"pass the run directory of `misstep label` (--out) as {option}, "
        "or run `misstep label` first",
    )


def check_output_file(path: Path, option: str) -> None:
    """A file the command will write: not a directory, in a directory that exists (or can be
    made) and is writable. Checked before any work, so a bad path costs nothing."""
    if path.is_dir():
        raise OutputError(path=path, reason=f"{option} is a directory, not a file")
    parent = path.parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(path=path, reason=f"{option}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(path=path, reason=f"{option}: cannot write in {probe}")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(path=path, reason=f"{option}: the file is not writable")


def check_reasoning_effort(value: str | None) -> None:
    """``--reasoning-effort`` is one of low, medium, high (checked before any connection)."""
    if value is not None and value not in REASONING_EFFORTS:
        raise OptionError(
            option="--reasoning-effort",
            value=value,
            allowed="one of " + ", ".join(REASONING_EFFORTS),
        )


def check_base_urls(urls: list[str] | None) -> None:
    """Every ``--base-url`` is an http(s) URL with a host (checked before any connection)."""
    from urllib.parse import urlsplit

    for url in urls or []:
        try:
            parts = urlsplit(url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            ok = False
        if not ok:
            raise OptionError(
                option="--base-url",
                value=url,
                allowed="an http(s) URL of an OpenAI-compatible server, e.g. "
                "http://127.0.0.1:8000/v1",
            )
