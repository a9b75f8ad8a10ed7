"""Options shared by every command, declared once, and the one place commands import them
from: the reading options (``cli/_reading.py``) and the checks on options and files
(``cli/_checks.py``) are re-exported here.

Nothing heavy is imported here: ``misstep --help`` loads this module and must stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from misstep.cli._checks import (
    REASONING_EFFORTS,
    check_base_urls,
    check_input,
    check_output_file,
    check_reasoning_effort,
    label_run,
    parse_annotators,
    parse_ks,
    parse_strata,
)
from misstep.cli._reading import (
    READING,
    InputFormat,
    InputFormatOpt,
    MapOpt,
    NoCacheOpt,
    PathFieldsOpt,
    Reading,
    RegradeOpt,
    SkipInvalidOpt,
    input_format_value,
    reads_traces,
)

__all__ = [
    "READING",
    "REASONING_EFFORTS",
    "AddJudgeOpt",
    "BaseUrlsOpt",
    "ByOpt",
    "ChatTemplateKwargsOpt",
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
    "parse_annotators",
    "parse_ks",
    "parse_strata",
    "reads_traces",
]


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
