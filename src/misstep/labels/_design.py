"""A sample's design as misstep reads it back when people's labels come in.

``misstep sample`` writes two files: the task people label (``task.jsonl``, ``.csv`` or a
Label Studio ``.json``), which holds nothing that depends on the judge (no weight, no stratum,
rows in a random order), and beside it its **sidecar** ``<task file name>.judge.jsonl`` (one
``TaskDesign`` line per sampled trace: its sampling weight, its whole stratum, the judge's
label), which people do not need and misstep reads when their labels come back
(``read_human_labels``, so ``import-labels``, ``agree`` and ``summary --human``; ``review
--task``). Task files from before the sidecar held the weights, carry a ``weight`` column:
they still read (the sidecar's weight wins where both give one).

``sampling_weight`` is the one check of a weight wherever one is read.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field, ValidationError

from misstep.errors import InputFormatError, InvalidRecordError

__all__ = [
    "TASK_DESIGN_VERSION",
    "TaskDesign",
    "read_task_design",
    "sampling_weight",
    "task_rows",
    "task_sidecar",
]

TASK_DESIGN_VERSION = 1
"""Version of a sidecar line (``TaskDesign``)."""


class TaskDesign(BaseModel):
    """One line of a task's sidecar ``<task file name>.judge.jsonl``: what misstep knows of a
    sampled trace that the people labelling it must not see."""

    version: int = TASK_DESIGN_VERSION
    """Record format version (absent in sidecars written before it: 0)."""
    trace_id: str
    """The sampled trace."""
    weight: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Its sampling weight: the inverse inclusion probability of the draw (None in sidecars
    written before the weights moved here: the task's ``weight`` column has it)."""
    stratum: str = ""
    """Its whole stratum, the judge's type included (``checkpoint=step_400|error_type=
    arithmetic``)."""
    allocation: str | None = None
    """How the sample was spread over the strata (``proportional``, ``equal``, ``plan``)."""
    judge: str | None = None
    """The judge's id."""
    error_type: str | None = None
    """The judge's type."""
    first_error_step: int | None = None
    """The judge's first wrong step."""


def task_sidecar(task: str | Path) -> Path:
    """The sidecar of a task file: ``<task file name>.judge.jsonl`` beside it (named after the
    whole name, so ``task.jsonl`` and ``task.csv`` never share one)."""
    path = Path(task)
    return path.with_name(f"{path.name}.judge.jsonl")


def read_task_design(path: str | Path) -> dict[str, TaskDesign]:
    """A sidecar's lines by trace id. A malformed line, a weight that is not a finite number
    above 0, or a trace given twice raises :class:`InvalidRecordError` naming the sidecar,
    line and field."""
    from misstep.labels._human import _jsonl_rows

    p = Path(path)
    if not p.is_file():
        raise InputFormatError(
            path=p,
            reason="no such file",
            hint="pass the sidecar `misstep "
            "sample` wrote beside the task (<task file name>.judge.jsonl)",
        )
    out: dict[str, TaskDesign] = {}
    for line, row in _jsonl_rows(p):
        if "weight" in row and row["weight"] is not None:
            row = {**row, "weight": sampling_weight(row["weight"], path=p, line=line)}
        try:
            design = TaskDesign.model_validate({"version": 0, **row})
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            field = str(err["loc"][0]) if err["loc"] else None
            raise InvalidRecordError(
                path=p,
                line=line,
                field=field,
                value=row.get(field) if field else None,
                reason=str(err["msg"]),
            ) from None
        if design.trace_id in out:
            raise InvalidRecordError(
                path=p,
                line=line,
                field="trace_id",
                value=design.trace_id,
                reason="a trace given twice in one sidecar",
            )
        out[design.trace_id] = design
    return out


def sampling_weight(value: object, *, path: str | Path, line: int, field: str = "weight") -> float:
    """``value`` as a sampling weight (an inverse inclusion probability): a finite number
    above 0; None or an empty cell (not given) is 1. Anything else raises
    :class:`InvalidRecordError` naming ``path``, ``line`` and ``field``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return 1.0
    weight: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        weight = float(value)
    elif isinstance(value, str):
        try:
            weight = float(value)
        except ValueError:
            weight = None
    if weight is None or not math.isfinite(weight) or weight <= 0:
        raise InvalidRecordError(
            path=path,
            line=line,
            field=field,
            value=value,
            reason="must be a finite number above 0 (the trace's inverse inclusion probability)",
            hint="use the weights `misstep sample` wrote (its sidecar), or leave the field out "
            "for weight 1",
        )
    return weight


def task_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a ``misstep sample`` task file as (line, row): JSONL (the file's line),
    CSV (the file's line, the header being line 1) or a Label Studio JSON import or export
    (each task's ``data``; the task's number as the line). InputFormatError when the file is
    none of these."""
    from misstep.labels._human import _csv_rows, _jsonl_rows

    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".csv"):
        return _csv_rows(path)
    if not name.endswith(".json"):
        return list(_jsonl_rows(path))
    try:
        tasks = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InputFormatError(path=path, reason=f"not a Label Studio task file: {exc}") from None
    if not isinstance(tasks, list):
        raise InputFormatError(path=path, reason="a Label Studio task file is a JSON list of tasks")
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, task in enumerate(tasks, start=1):
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            raise InvalidRecordError(
                path=path, line=number, field="data", reason="a task without its data object"
            )
        rows.append((number, data))
    return rows
